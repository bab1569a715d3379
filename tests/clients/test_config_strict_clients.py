"""Unknown config names over the wire, as Kafka answers them: a topic config Kafka does not define gets
INVALID_CONFIG naming it (CreateTopics, AlterConfigs, IncrementalAlterConfigs), with the name meant;
a broker config Kafka does not define is stored (Kafka's controller checks only the broker id of a
BROKER resource), while ``MockCluster(config=...)`` refuses it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError as ClientError
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

from mockbroker.cluster import MockCluster
from mockbroker.errors import KafkaError

pytestmark = pytest.mark.clients


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(topics={"orders": 1}) as running:
        yield running


def admin(cluster: MockCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def failure(future: object) -> KafkaException:
    with pytest.raises(KafkaException) as info:
        future.result(timeout=15)  # type: ignore[attr-defined]
    return info.value


def test_create_topics_with_an_unknown_topic_config_is_invalid_config_naming_it(cluster: MockCluster) -> None:
    client = admin(cluster)  # kept: the futures fail if their client goes first
    futures = client.create_topics([
        NewTopic("typo", 1, 1, config={"retention.msx": "1000"}),
        NewTopic("fine", 1, 1, config={"retention.ms": "1000", "segment.bytes": "1048576"}),
    ])
    error = failure(futures["typo"]).args[0]
    assert error.code() == ClientError.INVALID_CONFIG
    assert "retention.msx" in error.str() and "did you mean retention.ms?" in error.str()
    futures["fine"].result(timeout=15)
    assert "typo" not in cluster.state.topics and cluster.state.topics["fine"].config["retention.ms"] == 1000


def test_incremental_alter_of_an_unknown_topic_config_is_invalid_config(cluster: MockCluster) -> None:
    resource = ConfigResource(ResourceType.TOPIC, "orders", incremental_configs=[
        ConfigEntry("cleanup.polcy", "compact", incremental_operation=AlterConfigOpType.SET)])
    client = admin(cluster)
    error = failure(client.incremental_alter_configs([resource])[resource]).args[0]
    assert error.code() == ClientError.INVALID_CONFIG and "cleanup.polcy" in error.str()
    assert "cleanup.polcy" not in cluster.state.topics["orders"].config.overrides


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_alter_configs_with_an_unknown_topic_config_is_invalid_config(cluster: MockCluster) -> None:
    resource = ConfigResource(ResourceType.TOPIC, "orders", set_config={"max.messages.bytes": "2048"})
    client = admin(cluster)
    error = failure(client.alter_configs([resource])[resource]).args[0]
    assert error.code() == ClientError.INVALID_CONFIG and "max.messages.bytes" in error.str()


def test_an_unknown_broker_config_over_the_wire_is_stored_as_kafka_does(cluster: MockCluster) -> None:
    resource = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("custom.plugin.setting", "on", incremental_operation=AlterConfigOpType.SET)])
    client = admin(cluster)
    client.incremental_alter_configs([resource])[resource].result(timeout=15)
    assert cluster.state.config.get("custom.plugin.setting") == "on"


def test_a_broker_config_value_out_of_range_over_the_wire_is_refused(cluster: MockCluster) -> None:
    resource = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("log.cleaner.backoff.ms", "-5", incremental_operation=AlterConfigOpType.SET)])
    client = admin(cluster)
    error = failure(client.incremental_alter_configs([resource])[resource]).args[0]
    assert error.code() == ClientError.INVALID_REQUEST and "log.cleaner.backoff.ms" in error.str()


def test_mock_cluster_refuses_an_unknown_broker_config_before_listening() -> None:
    with pytest.raises(KafkaError, match=r"unknown broker config 'auto\.create\.topic\.enable': did you mean "
                                         r"'auto\.create\.topics\.enable'\?"):
        MockCluster(config={"auto.create.topic.enable": False})


def test_mock_cluster_create_topic_refuses_an_unknown_topic_config(cluster: MockCluster) -> None:
    with pytest.raises(KafkaError, match=r"unknown topic config 'retention\.msx': did you mean 'retention\.ms'\?"):
        cluster.create_topic("t", 1, config={"retention.msx": "1"})
