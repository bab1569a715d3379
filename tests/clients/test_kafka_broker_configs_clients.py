"""Every broker config Kafka 4.x documents, as a real admin client (confluent-kafka) and ``mockbroker
serve`` meet it: DescribeConfigs lists each with Kafka's update mode, IncrementalAlterConfigs accepts the
dynamic ones and refuses the read-only ones as Kafka does ("Cannot update these configs dynamically"),
and ``serve --config`` accepts the share coordinator's state topic configs that test setups pass."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from mockbroker.cluster import MockCluster
from mockbroker.state.config_catalogue import SSL_PER_LISTENER
from mockbroker.state.kafka_broker_configs import KAFKA_BROKER_CONFIGS
from tests.broker.test_configs import BROKER, alter
from tests.state.test_kafka_broker_configs import sample_value

pytestmark = pytest.mark.clients

SHARE_STATE = {"share.coordinator.state.topic.replication.factor": "1", "share.coordinator.state.topic.min.isr": "1"}
# read-only in the mock though Kafka lets AlterConfigs change it per broker: listeners bind at start
MOCK_READ_ONLY = {"listeners"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(config=SHARE_STATE) as running:
        yield running


@pytest.fixture
def admin(cluster: MockCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def incremental(admin: AdminClient, configs: dict[str, str], validate_only: bool = False) -> None:
    resource = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in configs.items()])
    admin.incremental_alter_configs([resource], validate_only=validate_only)[resource].result(timeout=15)


def refusal(admin: AdminClient, configs: dict[str, str]) -> KafkaError:
    with pytest.raises(KafkaException) as info:
        incremental(admin, configs)
    error: KafkaError = info.value.args[0]
    return error


def test_describe_lists_every_documented_broker_config_with_its_update_mode(admin: AdminClient) -> None:
    resource = ConfigResource(ResourceType.BROKER, "0")
    described = admin.describe_configs([resource])[resource].result(timeout=15)
    assert set(KAFKA_BROKER_CONFIGS) <= set(described)
    wrong = {name: described[name].is_read_only for name, (_t, _d, mode) in KAFKA_BROKER_CONFIGS.items()
             if name not in MOCK_READ_ONLY and described[name].is_read_only != (mode == "r")}
    assert wrong == {}


def test_the_share_state_topic_configs_serve_started_with_are_described_as_static(admin: AdminClient) -> None:
    resource = ConfigResource(ResourceType.BROKER, "0")
    described = admin.describe_configs([resource])[resource].result(timeout=15)
    for name, value in SHARE_STATE.items():
        entry = described[name]
        assert (entry.value, entry.source, entry.is_read_only) == (value, ConfigSource.STATIC_BROKER_CONFIG.value, True)
    default = described["share.coordinator.state.topic.num.partitions"]
    assert (default.value, default.source) == ("50", ConfigSource.DEFAULT_CONFIG.value)


def test_incremental_alter_accepts_every_dynamic_broker_config(admin: AdminClient) -> None:
    """Per broker id; the keystore and truststore configs per listener, as Kafka takes them."""
    dynamic = {name: sample_value(name) for name, (_t, _d, mode) in KAFKA_BROKER_CONFIGS.items()
               if mode != "r" and name not in MOCK_READ_ONLY and name not in SSL_PER_LISTENER}
    dynamic.update({f"listener.name.plaintext.{name}": sample_value(name) for name in SSL_PER_LISTENER})
    assert len(dynamic) > 80
    incremental(admin, dynamic, validate_only=True)
    incremental(admin, {"group.coordinator.cached.buffer.max.bytes": "2097152"})
    resource = ConfigResource(ResourceType.BROKER, "0")
    entry = admin.describe_configs([resource])[resource].result(timeout=15)["group.coordinator.cached.buffer.max.bytes"]
    assert (entry.value, entry.source) == ("2097152", ConfigSource.DYNAMIC_BROKER_CONFIG.value)


def test_incremental_alter_refuses_the_share_state_topic_configs_as_read_only(admin: AdminClient,
                                                                              cluster: MockCluster) -> None:
    error = refusal(admin, {"share.coordinator.state.topic.min.isr": "2"})
    assert error.code() == KafkaError.INVALID_REQUEST
    assert error.str() == "Cannot update these configs dynamically: [share.coordinator.state.topic.min.isr]"
    assert cluster.state.config.get("share.coordinator.state.topic.min.isr") == "1"


def test_per_broker_configs_are_refused_as_the_cluster_wide_default(cluster: MockCluster) -> None:
    """Over the wire (confluent-kafka's ConfigResource takes no empty broker name): AlterConfigs on the
    cluster-wide default ("") refuses the configs Kafka changes only per broker id."""
    port = int(cluster.bootstrap_servers.rsplit(":", 1)[1])
    assert alter(port, 2, [(BROKER, "", {"sasl.enabled.mechanisms": "PLAIN"})]) == [
        (42, "Cannot update these configs at default cluster level, broker id must be specified: "
             "[sasl.enabled.mechanisms]")]
    assert alter(port, 2, [(BROKER, "", {"log.cleaner.io.buffer.load.factor": "0.8"})]) == [(0, None)]


def test_keystore_configs_change_only_per_listener(admin: AdminClient) -> None:
    error = refusal(admin, {"ssl.keystore.location": "/tmp/k.jks"})
    assert error.str() == ("These security configs can be dynamically updated only per-listener using the "
                           "listener prefix: [ssl.keystore.location]")


def test_incremental_alter_refuses_every_read_only_broker_config(admin: AdminClient) -> None:
    """One request each (the client cuts a long error message): Kafka's answer names the config."""
    accepted = []
    for name, (_t, _d, mode) in KAFKA_BROKER_CONFIGS.items():
        if mode != "r":
            continue
        error = refusal(admin, {name: sample_value(name)})
        if error.code() != KafkaError.INVALID_REQUEST or f"dynamically: [{name}]" not in error.str():
            accepted.append((name, error.str()))
    assert accepted == []


def test_serve_accepts_the_share_state_topic_configs() -> None:
    args = [f"{name}={value}" for name, value in SHARE_STATE.items()]
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--config", args[0],
                             "--config", args[1], "--log-level", "warning"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[2])
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("bootstrap.servers=127.0.0.1:")
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in err, err


def test_serve_still_refuses_a_name_kafka_does_not_know_with_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--config",
                           "share.coordinator.state.topic.min.isrs=1"], capture_output=True, text=True, timeout=30,
                          cwd=Path(__file__).resolve().parents[2])
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "share.coordinator.state.topic.min.isrs" in lines[0]
    assert "did you mean 'share.coordinator.state.topic.min.isr'?" in lines[0]
