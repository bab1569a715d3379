"""``mockbroker serve --kafka-env`` as a process, with the environments of apache/kafka's own docker-compose
examples (apache_examples.yaml) and of docker/compose.kafka-replacement.yaml: their fixed ports moved to free
loopback ones and the compose services' host names to 127.0.0.1 (what Docker's network would resolve), nothing else
changed.  Real clients check the listeners, the advertised endpoints, the configs and the cluster id; a typo'd
variable is one line and exit status 2."""

from __future__ import annotations

import copy
import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from mockbroker.client import KafkaClient
from tests.compose_services import Served, compose_up, free_port, moved
from tests.compose_services import serve as served_by

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
EXAMPLES = yaml.safe_load((HERE / "apache_examples.yaml").read_text())
CP_ALL_IN_ONE = yaml.safe_load((HERE / "cp_all_in_one.yaml").read_text())
MOCKBROKER = [sys.executable, "-m", "mockbroker", "serve"]
pytestmark = pytest.mark.clients


def first_record(consumer: Any, topic: str) -> Any:
    """The value of the first record a confluent-kafka consumer subscribed to ``topic`` gets (30 s at most); the
    consumer is closed."""
    consumer.subscribe([topic])
    try:
        for _ in range(30):
            got = consumer.poll(1)
            if got is not None and got.error() is None:
                return got.value()
    finally:
        consumer.close()
    raise AssertionError(f"no record from {topic} within 30 s")


@contextmanager
def serve(env: Mapping[str, str], *flags: str) -> Iterator[Served]:
    with served_by(env, [*MOCKBROKER, "--kafka-env", *flags]) as served:
        yield served


def test_the_single_node_example_serves_its_listeners_and_configs() -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, ConfigResource

    ports: dict[int, int] = {}
    env = moved(EXAMPLES["single-node/plaintext/broker"], ("broker",), ports)
    with serve(env) as served:
        host_side = served.read_until("listener.PLAINTEXT_HOST=")
        assert host_side == f"localhost:{ports[9092]}"  # as advertised: PLAINTEXT_HOST://localhost:9092
        assert served.read_until("listener.PLAINTEXT=") == f"127.0.0.1:{ports[19092]}"  # broker:19092 in Docker
        with KafkaClient(f"127.0.0.1:{ports[19092]}") as inside:  # the listener a request arrives on decides
            assert list(inside.cluster.brokers.values()) == [("127.0.0.1", ports[19092])]
        with KafkaClient(f"127.0.0.1:{ports[9092]}") as outside:
            assert list(outside.cluster.brokers.values()) == [("localhost", ports[9092])]
        with socket.socket() as probe:  # the KRaft controller's listener is not served
            assert probe.connect_ex(("127.0.0.1", ports[29093])) != 0
        common = {"bootstrap.servers": host_side, "broker.address.family": "v4"}
        admin = AdminClient(common)
        assert admin.describe_cluster().result(15).cluster_id == "4L6g3nShT-eMCtK--X86sw"  # CLUSTER_ID
        broker = ConfigResource("broker", "0")
        configs = admin.describe_configs([broker])[broker].result(15)
        assert configs["group.initial.rebalance.delay.ms"].value == "0"
        assert configs["offsets.topic.replication.factor"].value == "1"
        assert configs["transaction.state.log.min.isr"].value == "1"
        assert configs["listeners"].value == env["KAFKA_LISTENERS"].split(",", 1)[1]
        producer = Producer(common)
        producer.produce("orders", b"one")
        assert producer.flush(15) == 0
        got = first_record(Consumer({**common, "group.id": "g", "auto.offset.reset": "earliest"}), "orders")
        del producer, admin
        assert got == b"one"
    log = "\n".join(served.log)
    assert "kafka-env: not needed by a mock broker: " in log
    for variable in ("KAFKA_NODE_ID", "KAFKA_PROCESS_ROLES", "KAFKA_CONTROLLER_QUORUM_VOTERS", "KAFKA_LOG_DIRS"):
        assert variable in log


def test_a_node_of_a_three_node_cluster_says_it_answers_alone() -> None:
    env = moved(EXAMPLES["cluster/combined/plaintext/kafka-1"], ("kafka-1", "kafka-2", "kafka-3"), {})
    with serve(env) as served:
        served.read_until("listener.PLAINTEXT_HOST=")
    assert any("names 3 nodes" in line and "MOCKBROKER_BROKERS" in line for line in served.log), served.log


def test_a_controller_alone_waits_to_be_stopped() -> None:
    env = moved(EXAMPLES["cluster/isolated/plaintext/controller-1"], ("controller-1",), {})
    with serve(env) as served:
        assert served.read_until("controller=") == "idle"
        health = subprocess.run([sys.executable, "-m", "mockbroker.healthcheck"],
                                env={**env, "MOCKBROKER_KAFKA_ENV": "true", "PATH": os.environ["PATH"]},
                                capture_output=True, text=True, timeout=30)
        assert health.returncode == 0, health.stderr
    assert any("serves no client" in line for line in served.log)


def test_flags_win_over_variables_which_win_over_mockbroker_ones() -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource

    port = free_port()
    env = {"KAFKA_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}", "KAFKA_NUM_PARTITIONS": "3",
           "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false", "MOCKBROKER_PORT": str(free_port())}
    with serve(env, "--config", "num.partitions=5") as served:
        bootstrap = served.read_until("bootstrap.servers=")
        assert bootstrap == f"127.0.0.1:{port}"  # KAFKA_LISTENERS over MOCKBROKER_PORT
        admin = AdminClient({"bootstrap.servers": bootstrap, "broker.address.family": "v4"})
        broker = ConfigResource("broker", "0")
        configs = admin.describe_configs([broker])[broker].result(15)
        assert configs["num.partitions"].value == "5"  # --config over KAFKA_NUM_PARTITIONS
        assert configs["auto.create.topics.enable"].value == "false"
        del admin


def test_sasl_plain_users_from_the_listeners_jaas_config() -> None:
    """Kafka's own way to list PLAIN users, in a variable: PlainLoginModule's user_NAME="password" options."""
    from confluent_kafka import KafkaError, Producer

    port = free_port()
    env = {"KAFKA_LISTENERS": f"SASL_PLAINTEXT://127.0.0.1:{port}", "KAFKA_SASL_ENABLED_MECHANISMS": "PLAIN",
           "KAFKA_SASL_MECHANISM_INTER_BROKER_PROTOCOL": "PLAIN",
           "KAFKA_LISTENER_NAME_SASL__PLAINTEXT_PLAIN_SASL_JAAS_CONFIG":
               'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
               'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'}
    with serve(env) as served:
        bootstrap = served.read_until("bootstrap.servers=")
        common = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                  "sasl.username": "alice", "broker.address.family": "v4"}
        producer = Producer({**common, "sasl.password": "alice-secret"})
        producer.produce("orders", b"by alice")
        assert producer.flush(15) == 0
        del producer
        errors: list[KafkaError] = []
        wrong = Producer({**common, "sasl.password": "not-hers", "error_cb": errors.append})
        for _ in range(50):
            wrong.poll(0.2)
            if errors:
                break
        del wrong
        assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors
    log = "\n".join(served.log)
    assert "alice-secret" not in log and "listener.name.sasl_plaintext.plain.sasl.jaas.config=[hidden]" in log


JAAS_FILE = """KafkaServer {
   org.apache.kafka.common.security.plain.PlainLoginModule required
   username="admin"
   password="admin-secret"
   user_admin="admin-secret"
   user_alice="alice-secret";
};
Client {
   org.apache.zookeeper.server.auth.DigestLoginModule required username="kafka" password="kafka-secret";
};
"""


def test_sasl_plain_users_from_the_jaas_file_kafka_opts_names(tmp_path: Path) -> None:
    """The images' SASL set-up: KAFKA_OPTS=-Djava.security.auth.login.config=PATH and a KafkaServer section."""
    from confluent_kafka import Producer

    jaas = tmp_path / "kafka_server_jaas.conf"
    jaas.write_text(JAAS_FILE)
    port = free_port()
    env = {"KAFKA_LISTENERS": f"SASL_PLAINTEXT://127.0.0.1:{port}", "KAFKA_SASL_ENABLED_MECHANISMS": "PLAIN",
           "KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas}"}
    with serve(env) as served:
        bootstrap = served.read_until("bootstrap.servers=")
        producer = Producer({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                             "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret",
                             "broker.address.family": "v4"})
        producer.produce("orders", b"by alice")
        assert producer.flush(15) == 0
        del producer
    assert "alice-secret" not in "\n".join(served.log)
    full = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "SCHEMA_REGISTRY_", "MOCKBROKER_"))}
    result = subprocess.run([*MOCKBROKER, "--kafka-env"], capture_output=True, text=True, timeout=60,
                            env={**full, **env, "KAFKA_OPTS": f"-Djava.security.auth.login.config={tmp_path}/no.conf"})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"mockbroker serve: error: --kafka-env: KAFKA_OPTS: the JAAS file {tmp_path}/no.conf cannot be read: "
        "No such file or directory")


@pytest.mark.parametrize(("env", "line"), [
    ({"KAFKA_NUM_PARTITONS": "3"}, "mockbroker serve: error: --kafka-env: KAFKA_NUM_PARTITONS: unknown broker config "
                                   "'num.partitons': did you mean KAFKA_NUM_PARTITIONS (num.partitions)?"),
    ({"SCHEMA_REGISTRY_LISTENERS": "http://127.0.0.1:0"},
     "mockbroker serve: error: --kafka-env: SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS is not set"),
    ({"MOCKBROKER_KAFKA_ENV": "maybe"}, "mockbroker serve: error: $MOCKBROKER_KAFKA_ENV: 'maybe' is not true or false"),
])
def test_a_wrong_variable_is_one_line_and_exit_2(env: dict[str, str], line: str) -> None:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "SCHEMA_REGISTRY_", "MOCKBROKER_"))}
    flags = [] if "MOCKBROKER_KAFKA_ENV" in env else ["--kafka-env"]
    result = subprocess.run([*MOCKBROKER, "--port", "0", *flags], env={**full, **env}, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines()[-1].startswith(line), result.stderr


def test_a_java_keystore_is_refused_in_one_line_naming_it(tmp_path: Path) -> None:
    """The images' TLS is JKS; the mock reads PEM (Kafka's ssl.keystore.type=PEM): the file is named, not an errno."""
    keystore = tmp_path / "kafka01.keystore.jks"
    keystore.write_bytes(b"\xfe\xed\xfe\xed not PEM")
    full = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "SCHEMA_REGISTRY_", "MOCKBROKER_"))}
    for location, expected in ((keystore, "not readable as PEM (a Java keystore? the mock reads PEM files"),
                               (tmp_path / "absent.jks", "no such file")):
        env = {"KAFKA_LISTENERS": "SSL://127.0.0.1:0", "KAFKA_SSL_KEYSTORE_LOCATION": str(location),
               "KAFKA_SSL_KEYSTORE_PASSWORD": "abcdefgh"}
        result = subprocess.run([*MOCKBROKER, "--kafka-env"], env={**full, **env}, capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 2 and result.stdout == "", result.stderr
        last = result.stderr.strip().splitlines()[-1]
        assert f"TLS certificate chain and key {location}: {expected}" in last, result.stderr
        assert last.startswith("mockbroker serve: error: --kafka-env: KAFKA_SSL_KEYSTORE_LOCATION: ")  # not a flag
        assert "abcdefgh" not in result.stderr


def test_a_mounted_server_properties_is_read_and_the_variables_win(tmp_path: Path) -> None:
    """apache/kafka's "file input" (its single-node/file-input example, without the JKS TLS the mock cannot read): a
    server.properties in the mounted folder ($MOCKBROKER_KAFKA_CONFIG_DIR here; /mnt/shared/config in the image)."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    host_port, inner_port = free_port(), free_port()
    (tmp_path / "server.properties").write_text(
        "# broker settings, as the image's file input takes them\n"
        f"advertised.listeners=PLAINTEXT_HOST://localhost:{host_port},PLAINTEXT://127.0.0.1:{inner_port}\n"
        "controller.listener.names=CONTROLLER\ngroup.initial.rebalance.delay.ms=0\n"
        "inter.broker.listener.name=PLAINTEXT\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT\n"
        "log.dirs=/tmp/kraft-combined-logs\nnum.partitions = 2\nprocess.roles=broker\n")
    env = {"MOCKBROKER_KAFKA_CONFIG_DIR": str(tmp_path), "CLUSTER_ID": "4L6g3nShT-eMCtK--X86sw",
           "KAFKA_NODE_ID": "1", "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@broker:29093",
           "KAFKA_LISTENERS": f"PLAINTEXT_HOST://127.0.0.1:{host_port},CONTROLLER://:29093,"
                              f"PLAINTEXT://127.0.0.1:{inner_port}",
           "KAFKA_NUM_PARTITIONS": "4"}  # a variable over the file's num.partitions, as in the image
    with serve(env) as served:
        bootstrap = served.read_until("listener.PLAINTEXT_HOST=")
        assert bootstrap == f"localhost:{host_port}"
        admin = AdminClient({"bootstrap.servers": bootstrap, "broker.address.family": "v4"})
        broker = ConfigResource("broker", "0")
        configs = admin.describe_configs([broker])[broker].result(15)
        assert configs["num.partitions"].value == "4" and configs["group.initial.rebalance.delay.ms"].value == "0"
        del admin
    log = "\n".join(served.log)
    assert f"{tmp_path / 'server.properties'}:7 (log.dirs: data is kept in memory)" in log
    (tmp_path / "server.properties").write_text("num.partitions=2\nnum.partitons=3\n")
    full = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "SCHEMA_REGISTRY_", "MOCKBROKER_"))}
    result = subprocess.run([*MOCKBROKER, "--kafka-env"], env={**full, "MOCKBROKER_KAFKA_CONFIG_DIR": str(tmp_path)},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines()[-1] == (
        f"mockbroker serve: error: --kafka-env: {tmp_path / 'server.properties'}:2: unknown broker config "
        "'num.partitons': did you mean 'num.partitions'?")


def test_a_registry_whose_cluster_never_answers_gives_up_in_one_line() -> None:
    closed = free_port()  # nothing listens there
    env = {"SCHEMA_REGISTRY_LISTENERS": f"http://127.0.0.1:{free_port()}",
           "SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS": f"PLAINTEXT://127.0.0.1:{closed}",
           "SCHEMA_REGISTRY_KAFKASTORE_INIT_TIMEOUT_MS": "600"}
    full = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "SCHEMA_REGISTRY_", "MOCKBROKER_"))}
    result = subprocess.run([*MOCKBROKER, "--kafka-env"], env={**full, **env}, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"mockbroker serve: error: --kafka-env: kafkastore.bootstrap.servers 127.0.0.1:{closed}: "
                           "no answer within 0.6 s (kafkastore.init.timeout.ms): "), result.stderr


def avro_round_trip(bootstrap: str, url: str, topic: str) -> list[bytes]:
    """One Avro record through SerializingProducer and DeserializingConsumer (confluent-kafka's Schema Registry
    client at ``url``); the keys of ``_schemas`` on the cluster after it."""
    from confluent_kafka import DeserializingConsumer, SerializingProducer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

    schema = '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"}]}'
    client = SchemaRegistryClient({"url": url})
    common = {"bootstrap.servers": bootstrap, "broker.address.family": "v4"}
    producer = SerializingProducer({**common, "value.serializer": AvroSerializer(client, schema)})
    producer.produce(topic, value={"id": 7})
    assert producer.flush(15) == 0
    del producer  # (librdkafka's client ends before the broker it talks to)
    consumer = DeserializingConsumer({**common, "group.id": "g", "auto.offset.reset": "earliest",
                                      "value.deserializer": AvroDeserializer(client)})
    assert first_record(consumer, topic) == {"id": 7}
    with KafkaClient(bootstrap.replace("localhost", "127.0.0.1")) as kafka:
        end = kafka.latest_offset("_schemas", 0)
        return [bytes(r.key or b"") for b in kafka.read_all("_schemas", 0, 0, end) for r in b.records]


def test_the_compose_replacement_file_runs_as_its_two_services() -> None:
    """docker/compose.kafka-replacement.yaml: the broker and the schema-registry services, each the image's
    entrypoint as a process with the image's environment and the service's; an Avro record through both, and the
    registry's schema kept in the broker's _schemas topic."""
    compose = yaml.safe_load((ROOT / "docker" / "compose.kafka-replacement.yaml").read_text())
    with compose_up(compose) as (services, ports):
        assert services["broker"].env["MOCKBROKER_KAFKA_ENV"] == "true"  # the image's
        bootstrap = services["broker"].read_until("listener.PLAINTEXT_HOST=")
        url = f"http://127.0.0.1:{ports[8081]}"
        assert services["schema-registry"].lines == [f"schema.registry.url={url}"]
        for served in services.values():
            health = served.healthy()
            assert health.returncode == 0, health.stderr
        keys = avro_round_trip(bootstrap, url, "orders")
        with KafkaClient(bootstrap.replace("localhost", "127.0.0.1")) as kafka:
            assert kafka.topics()["orders"] == 3  # KAFKA_NUM_PARTITIONS
    assert any(b'"subject":"orders-value"' in key for key in keys), keys


@pytest.mark.parametrize("variant", list(CP_ALL_IN_ONE))
def test_confluents_cp_all_in_one_broker_and_registry_with_the_image_lines_changed(variant: str) -> None:
    """cp-kafka's (community) and cp-server's variables, and cp-schema-registry's, from Confluent's compose files."""
    compose = copy.deepcopy(CP_ALL_IN_ONE[variant])
    for service in compose["services"].values():
        service["image"] = "mockbroker:latest"
    with compose_up(compose) as (services, ports):
        bootstrap = services["broker"].read_until("listener.PLAINTEXT_HOST=")
        assert bootstrap == f"localhost:{ports[9092]}"
        with KafkaClient(f"127.0.0.1:{ports[29092]}") as inside:  # PLAINTEXT://broker:29092, the network's side
            assert list(inside.cluster.brokers.values()) == [("127.0.0.1", ports[29092])]
        keys = avro_round_trip(bootstrap, f"http://127.0.0.1:{ports[8081]}", "pageviews")
    assert any(b'"subject":"pageviews-value"' in key for key in keys), keys
    log = "\n".join(services["broker"].log)
    assert "KAFKA_JMX_PORT" not in log.split("not needed by a mock broker: ")[-1]  # the launcher's, not a config
    if variant == "cp-all-in-one":  # cp-server: Confluent Server's own features
        assert "CONFLUENT_METRICS_ENABLE (a Confluent Server feature)" in log
        assert "KAFKA_CONFLUENT_LICENSE_TOPIC_REPLICATION_FACTOR" in log
