"""``mockbroker serve --kafka-env`` as a process, with the environments of apache/kafka's own docker-compose
examples (apache_examples.yaml) and of docker/compose.kafka-replacement.yaml: their fixed ports moved to free
loopback ones and the compose services' host names to 127.0.0.1 (what Docker's network would resolve), nothing else
changed.  Real clients check the listeners, the advertised endpoints, the configs and the cluster id; a typo'd
variable is one line and exit status 2."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from mockbroker.client import KafkaClient

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
EXAMPLES = yaml.safe_load((HERE / "apache_examples.yaml").read_text())
MOCKBROKER = [sys.executable, "-m", "mockbroker", "serve"]
pytestmark = pytest.mark.clients


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def moved(env: Mapping[str, str], hosts: tuple[str, ...], ports: dict[int, int]) -> dict[str, str]:
    """``env`` with each fixed port given a free one (the same one everywhere it appears) and the compose hosts
    named 127.0.0.1."""
    def port(match: re.Match[str]) -> str:
        number = int(match.group(1))
        if number not in ports:
            ports[number] = free_port()
        return f":{ports[number]}"

    out = {}
    for key, value in env.items():
        value = re.sub(r":(\d{4,5})\b", port, str(value))
        for host in hosts:
            value = re.sub(rf"(?<=[/@,]){re.escape(host)}(?=:)|^{re.escape(host)}(?=:)", "127.0.0.1", value)
        out[key] = value
    return out


class Served:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self.log: list[str] = []
        self._stderr = threading.Thread(target=self._drain, daemon=True)
        self._stderr.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line.rstrip("\n"))

    def read_until(self, prefix: str) -> str:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:  # bounded by the process: a start that fails ends stdout
            self.lines.append(line.strip())
            if line.startswith(prefix):
                return line.strip().split("=", 1)[1]
        raise AssertionError(f"no {prefix} line: {self.lines} {self.log}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(20)
        self._stderr.join(5)
        return code


@contextmanager
def serve(env: Mapping[str, str], *flags: str) -> Iterator[Served]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "SCHEMA_REGISTRY_", "MOCKBROKER_"))}
    full.update(env)
    proc = subprocess.Popen([*MOCKBROKER, "--kafka-env", *flags], env=full, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    served = Served(proc)
    try:
        yield served
    finally:
        assert served.stop() == 0, served.log


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
        consumer = Consumer({**common, "group.id": "g", "auto.offset.reset": "earliest"})
        consumer.subscribe(["orders"])
        got = None
        for _ in range(30):
            got = consumer.poll(1)
            if got is not None and got.error() is None:
                break
        consumer.close()
        del producer, admin
        assert got is not None and got.value() == b"one"
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


def test_the_compose_replacement_file_runs_as_its_two_services() -> None:
    """docker/compose.kafka-replacement.yaml: the broker and the schema-registry services, each the image's
    entrypoint as a process with the image's environment and the service's; an Avro record through both, and the
    registry's schema kept in the broker's _schemas topic."""
    from confluent_kafka import DeserializingConsumer, SerializingProducer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

    from tests.test_dockerfile import image_env

    compose = yaml.safe_load((ROOT / "docker" / "compose.kafka-replacement.yaml").read_text())
    hosts = tuple(compose["services"])
    ports: dict[int, int] = {}
    image = {**image_env(), "MOCKBROKER_HOST": "127.0.0.1", "MOCKBROKER_CONTROL_HOST": "127.0.0.1",
             "MOCKBROKER_SCHEMA_REGISTRY_HOST": "127.0.0.1", "MOCKBROKER_CONTROL_PORT": str(free_port()),
             "MOCKBROKER_SCHEMA_REGISTRY_PORT": str(free_port())}
    assert image["MOCKBROKER_KAFKA_ENV"] == "true"
    broker_env = {**image, **moved(compose["services"]["broker"]["environment"], hosts, ports)}
    registry_env = {**image, **moved(compose["services"]["schema-registry"]["environment"], hosts, ports)}
    listeners = registry_env["SCHEMA_REGISTRY_LISTENERS"]
    registry_env["SCHEMA_REGISTRY_LISTENERS"] = listeners.replace("0.0.0.0", "127.0.0.1")  # loopback only in tests
    schema = '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"}]}'
    with serve(broker_env) as broker, serve(registry_env) as registry:
        bootstrap = broker.read_until("listener.PLAINTEXT_HOST=")
        url = registry.read_until("schema.registry.url=")
        assert url == f"http://127.0.0.1:{ports[8081]}"
        for env in (broker_env, registry_env):
            health = subprocess.run([sys.executable, "-m", "mockbroker.healthcheck"],
                                    env={**env, "PATH": os.environ["PATH"]}, capture_output=True, text=True, timeout=30)
            assert health.returncode == 0, health.stderr
        client = SchemaRegistryClient({"url": url})
        common = {"bootstrap.servers": bootstrap, "broker.address.family": "v4"}
        producer = SerializingProducer({**common, "value.serializer": AvroSerializer(client, schema)})
        producer.produce("orders", value={"id": 7})
        assert producer.flush(15) == 0
        consumer = DeserializingConsumer({**common, "group.id": "g", "auto.offset.reset": "earliest",
                                          "value.deserializer": AvroDeserializer(client)})
        consumer.subscribe(["orders"])
        got = None
        for _ in range(30):
            got = consumer.poll(1)
            if got is not None and got.error() is None:
                break
        consumer.close()
        assert got is not None and got.value() == {"id": 7}
        with KafkaClient(bootstrap.replace("localhost", "127.0.0.1")) as kafka:
            assert kafka.topics()["orders"] == 3  # KAFKA_NUM_PARTITIONS
            end = kafka.latest_offset("_schemas", 0)
            keys = [r.key for b in kafka.read_all("_schemas", 0, 0, end) for r in b.records]
            del producer  # (librdkafka's client ends before the broker it talks to)
        assert any(b'"subject":"orders-value"' in bytes(key or b"") for key in keys), keys
