"""mockbroker.testcontainers beyond testcontainers' own tests: the env as broker configs, the cluster id,
the error paths (one line each), the life cycle, and a confluent-kafka round trip, over real sockets."""

from __future__ import annotations

import logging
import re
import socket
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient, KafkaProducer

import mockbroker.testcontainers.container as container_module
from mockbroker.testcontainers import KafkaContainer, Network, RedpandaContainer, kafka_config


def _refused(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            return False
    except ConnectionRefusedError:
        return True


def test_kafka_env_variable_is_a_broker_config() -> None:
    with KafkaContainer().with_env("KAFKA_NUM_PARTITIONS", "3") as kafka:
        producer = KafkaProducer(bootstrap_servers=[kafka.get_bootstrap_server()])
        try:
            producer.send("auto-created", b"x").get(timeout=10)
            assert producer.partitions_for("auto-created") == {0, 1, 2}
        finally:
            producer.close(timeout=5)
        assert kafka.cluster.state.config["offsets.topic.num.partitions"] == 1  # testcontainers' own env


def test_env_file_is_read(tmp_path: Path) -> None:
    env_file = tmp_path / "kafka.env"
    env_file.write_text("# broker settings\nKAFKA_NUM_PARTITIONS=4\nexport KAFKA_DEFAULT_REPLICATION_FACTOR='1'\n"
                        "\nKAFKA_AUTO_CREATE_TOPICS_ENABLE=true # a comment\n", encoding="utf-8")
    kafka = KafkaContainer().with_env_file(env_file)
    assert kafka.env["KAFKA_NUM_PARTITIONS"] == "4"
    assert kafka.env["KAFKA_DEFAULT_REPLICATION_FACTOR"] == "1"
    assert kafka.env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "true"
    with kafka:
        assert kafka.cluster.state.config["num.partitions"] == 4
    (tmp_path / "bad.env").write_text("KAFKA_NUM_PARTITIONS\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.env:1: expected KEY=VALUE"):
        KafkaContainer().with_env_file(tmp_path / "bad.env")


def test_cluster_id_is_what_clients_are_told() -> None:
    with KafkaContainer().with_kraft().with_cluster_id("tc-cluster-52") as kafka:
        admin = KafkaAdminClient(bootstrap_servers=[kafka.get_bootstrap_server()])
        try:
            assert admin.describe_cluster()["cluster_id"] == "tc-cluster-52"
        finally:
            admin.close()
        metadata = AdminClient({"bootstrap.servers": kafka.get_bootstrap_server()}).list_topics(timeout=10)
        assert metadata.cluster_id == "tc-cluster-52"
        assert kafka.env["CLUSTER_ID"] == "tc-cluster-52"


def test_confluent_kafka_round_trip() -> None:
    with KafkaContainer() as kafka:
        servers = kafka.get_bootstrap_server()
        producer = Producer({"bootstrap.servers": servers})
        producer.produce("orders", key=b"k", value=b"hello")
        assert producer.flush(10) == 0
        consumer = Consumer({"bootstrap.servers": servers, "group.id": "g", "auto.offset.reset": "earliest"})
        try:
            consumer.subscribe(["orders"])
            message = None
            for _ in range(30):
                message = consumer.poll(1.0)
                if message is not None and message.error() is None:
                    break
            assert message is not None and message.error() is None
            assert (message.key(), message.value()) == (b"k", b"hello")
        finally:
            consumer.close()


def test_unknown_kafka_variable_is_one_line_naming_the_nearest() -> None:
    kafka = KafkaContainer().with_env("KAFKA_NUM_PARTITION", "3")
    with pytest.raises(ValueError) as raised:
        kafka.start()
    message = str(raised.value)
    assert "\n" not in message and "KAFKA_NUM_PARTITION" in message
    assert re.search(r"num[._]partitions", message, re.IGNORECASE)  # the nearest valid name
    assert kafka.status == "not_started"


def test_bad_kafka_value_names_the_variable() -> None:
    with pytest.raises(ValueError, match=r"^KafkaContainer: KAFKA_NUM_PARTITIONS: .*num.partitions[^\n]*$"):
        with KafkaContainer().with_env("KAFKA_NUM_PARTITIONS", "many"):
            pass


def test_what_needs_a_container_is_one_line() -> None:
    with KafkaContainer() as kafka:
        for call in (lambda: kafka.exec("ls"), kafka.get_wrapped_container, kafka.get_docker_client,
                     lambda: kafka.create_file(b"x", "/x"), lambda: kafka.copy_from_container("/x", Path("y"))):
            with pytest.raises(NotImplementedError) as raised:
                call()
            assert "\n" not in str(raised.value)
            assert "in-process" in str(raised.value) and ".cluster" in str(raised.value)
        assert str(raised.value).startswith("KafkaContainer.copy_from_container: ")


def test_addresses_before_start_and_after_stop() -> None:
    kafka = KafkaContainer()
    with pytest.raises(RuntimeError, match=r"^KafkaContainer.get_bootstrap_server: not started"):
        kafka.get_bootstrap_server()
    with pytest.raises(RuntimeError, match="not started"):
        _ = kafka.cluster
    kafka.stop()  # before start: nothing to stop
    kafka.start()
    address = kafka.get_bootstrap_server()
    assert kafka.status == "running" and kafka.get_container_id().startswith("mockbroker-")
    kafka.stop()
    kafka.stop()  # twice: harmless
    assert kafka.status == "exited" and _refused(address)
    with pytest.raises(RuntimeError, match=r"^KafkaContainer.get_bootstrap_server: stopped"):
        kafka.get_bootstrap_server()
    assert kafka.cluster.state.cluster_id == kafka.cluster_id  # still readable after stop


def test_raising_inside_with_stops_the_cluster() -> None:
    kafka = KafkaContainer()
    with pytest.raises(ZeroDivisionError):
        with kafka:
            address = kafka.get_bootstrap_server()
            assert not _refused(address)
            1 / 0  # noqa: B018
    assert kafka.status == "exited" and _refused(address)


def test_ports_map_to_the_in_process_listeners() -> None:
    with KafkaContainer(port=9888) as kafka:
        assert kafka.port == 9888 and kafka.get_container_host_ip() == "127.0.0.1"
        assert kafka.get_bootstrap_server() == f"127.0.0.1:{kafka.get_exposed_port(9888)}"
        assert kafka.get_exposed_port("9888/tcp") == kafka.get_exposed_port(9888)
        with pytest.raises(ValueError, match=r"^KafkaContainer.get_exposed_port\(9093\): .*its ports: 9888$"):
            kafka.get_exposed_port(9093)
    with RedpandaContainer() as redpanda:
        assert redpanda.get_bootstrap_server() == redpanda.cluster.bootstrap_servers
        assert redpanda.get_schema_registry_address() == redpanda.cluster.schema_registry_url
        assert redpanda.get_exposed_port(8081) != redpanda.get_exposed_port(9092)


def test_builders_are_recorded_and_chain() -> None:
    network = Network()
    kafka = KafkaContainer("confluentinc/cp-kafka:7.9.0", docker_client_kw={"timeout": 5}, name="k",
                           volumes=[("/tmp", "/data", "rw")], network=network, network_aliases=["kafka"],
                           mem_limit="1g")
    chained = (kafka.with_env("A", "1").with_envs(B="2").with_bind_ports(9093, 19093).with_exposed_ports(1234)
               .with_network(network).with_network_aliases("broker").with_kwargs(privileged=True)
               .with_command("true").with_name("n").with_volume_mapping("/var", "/v").with_tmpfs_mount("/t", "1m")
               .waiting_for(object()).maybe_emulate_amd64().with_copy_into_container(b"x", "/x")
               .with_kraft().with_cluster_id("c"))
    assert chained is kafka
    assert kafka.image == "confluentinc/cp-kafka:7.9.0" and kafka.kraft_enabled
    assert kafka.env["A"] == "1" and kafka.env["B"] == "2" and kafka.env["KAFKA_BROKER_ID"] == "1"
    assert kafka.ports == {"9093": 19093, "1234": None} and kafka.volumes["/var"] == {"bind": "/v", "mode": "ro"}
    kafka.configure()
    assert kafka.env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@broker:9094" and kafka.env["CLUSTER_ID"] == "c"
    assert kafka.get_container_info() is None
    with pytest.raises(RuntimeError, match=r"^KafkaContainer.get_logs: not started"):
        kafka.get_logs()
    kafka.tc_start()
    kafka.reload()
    assert kafka.status == "not_started"
    with network as created:
        assert created is network and network.id is not None
        network.connect("mockbroker-1", ["kafka"])
    assert network.id is None
    assert isinstance(kafka_config.limit_broker_to_first_host, bool)


def test_image_and_port_are_said_once_at_debug(monkeypatch: pytest.MonkeyPatch,
                                               caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(container_module, "_said", set())
    caplog.set_level(logging.DEBUG, logger="mockbroker.testcontainers")
    for image in ("confluentinc/cp-kafka:7.6.0", "confluentinc/cp-kafka:7.9.0"):
        with KafkaContainer(image) as kafka:
            assert kafka.get_logs()[0].startswith(b"mockbroker runs in-process")
    said = [r for r in caplog.records if "taken and ignored" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.DEBUG
    assert "confluentinc/cp-kafka:7.6.0" in said[0].getMessage()
