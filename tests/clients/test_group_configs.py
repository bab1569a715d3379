"""GROUP config resources through real admin clients: confluent-kafka's AdminClient (ResourceType.GROUP,
which librdkafka sends as config resource type 32) and kafka-python's, Kafka's INVALID_CONFIG messages
for bad names and values, and a KIP-848 heartbeat answering with the group's own interval."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource as KPResource
from kafka.admin import ConfigResourceType

from mockbroker.cluster import MockCluster
from mockbroker.protocol import api
from tests.broker.wire import WireClient

pytestmark = pytest.mark.clients


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(topics={"t": 2}) as c:
        yield c


def alter(admin: AdminClient, group: str, **values: str | None) -> str:
    """IncrementalAlterConfigs of one group (None deletes): "ok" or the error's text."""
    entries = [ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.DELETE if v is None
                           else AlterConfigOpType.SET) for k, v in values.items()]
    (future,) = admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group,
                                                                incremental_configs=entries)]).values()
    try:
        future.result(10)
    except KafkaException as exc:
        return f"{exc.args[0].name()}: {exc.args[0].str()}"
    return "ok"


def describe(admin: AdminClient, group: str) -> dict[str, Any]:
    (future,) = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values()
    return dict(future.result(10))


def test_group_configs_set_and_described_through_confluent(cluster: MockCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    assert alter(admin, "orders-app", consumer_session_timeout_ms="20000",
                 consumer_heartbeat_interval_ms="2000") == "ok"
    configs = describe(admin, "orders-app")  # the group does not exist: configs need no group
    session = configs["consumer.session.timeout.ms"]
    assert session.value == "20000" and session.source == ConfigSource.GROUP_CONFIG.value
    assert [(s.name, s.value) for s in session.synonyms.values()] == [
        ("consumer.session.timeout.ms", "20000"), ("group.consumer.session.timeout.ms", "45000")]
    unset = configs["share.record.lock.duration.ms"]
    assert unset.value == "30000" and unset.source == ConfigSource.DEFAULT_CONFIG.value
    assert alter(admin, "orders-app", consumer_heartbeat_interval_ms=None) == "ok"
    assert describe(admin, "orders-app")["consumer.heartbeat.interval.ms"].value == "500"  # the broker's again


def test_bad_group_config_names_and_values(cluster: MockCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    assert alter(admin, "g", session_timeout_ms="10000") == (
        "INVALID_CONFIG: Unknown group config name: session.timeout.ms")
    assert alter(admin, "g", consumer_session_timeout_ms="soon") == (
        "INVALID_CONFIG: Invalid value soon for configuration consumer.session.timeout.ms: Not a number of type INT")
    assert alter(admin, "g", consumer_session_timeout_ms="120000") == (
        "INVALID_CONFIG: consumer.session.timeout.ms must be less than or equal to "
        "group.consumer.max.session.timeout.ms")
    assert alter(admin, "g", share_isolation_level="sometimes").startswith("INVALID_CONFIG: Invalid value sometimes")
    assert describe(admin, "g")["consumer.session.timeout.ms"].source == ConfigSource.DEFAULT_CONFIG.value


def test_group_configs_through_kafka_python(cluster: MockCluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        done = admin.alter_configs([KPResource(ConfigResourceType.GROUP, "kp", configs={
            "streams.num.standby.replicas": "1"})], raise_on_unknown=False)
        assert done == {"group": {"kp": "OK"}}
        described = admin.describe_configs([KPResource(ConfigResourceType.GROUP, "kp")])["group"]["kp"]
        assert described["streams.num.standby.replicas"]["value"] == "1"
        assert described["streams.num.standby.replicas"]["config_source"] == "DYNAMIC_GROUP_CONFIG"  # source 8
        assert "kp" in admin.list_config_resources(["GROUP"])["group"]
    finally:
        admin.close()


def test_kip848_heartbeat_carries_the_groups_interval(cluster: MockCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    assert alter(admin, "tuned", consumer_heartbeat_interval_ms="1500") == "ok"
    hb = api.request_module(68)
    with WireClient(int(cluster.bootstrap_servers.rsplit(":", 1)[1])) as w:
        def join(group: str) -> Any:
            return w.call(68, 1, hb.ConsumerGroupHeartbeatRequest(group_id=group, member_id=f"m-{group}",
                                                                  member_epoch=0, rebalance_timeout_ms=5000,
                                                                  subscribed_topic_names=["t"]))
        tuned, plain = join("tuned"), join("plain")
    assert tuned.error_code == 0 and tuned.heartbeat_interval_ms == 1500
    assert plain.error_code == 0 and plain.heartbeat_interval_ms == 500  # the broker's (mock default)
