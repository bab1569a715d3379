"""Authorization in the issue-9 admin calls, with real clients: a missing ACL gives each client the
error it expects, the matching ALLOW makes the same call work.

- confluent-kafka AdminClient: describe_configs (topic and broker), incremental_alter_configs,
  delete_records, elect_leaders.
- kafka-python KafkaAdminClient: delete_records, describe_log_dirs, alter_replica_log_dirs,
  alter/list_partition_reassignments, update_features, describe_topic_partitions.
- aiokafka AIOKafkaAdminClient: describe_configs, alter_configs, delete_records.

Every connection is User:ANONYMOUS (no SASL), so the ACLs name it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from mockbroker.cluster import MockCluster

pytestmark = pytest.mark.clients
ME = "User:ANONYMOUS"
CONFIG = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
          "log.dirs": "/data/{id}/a,/data/{id}/b"}


@pytest.fixture
def secured() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, topics={"orders": 2}, config=CONFIG) as c:
        c.add_acl("TOPIC", "orders", ME, "DESCRIBE")  # clients find the topic through Metadata
        yield c


def code_of(future: object) -> int:
    with pytest.raises(KafkaException) as failed:
        future.result(10)  # type: ignore[attr-defined]
    return failed.value.args[0].code()  # type: ignore[no-any-return]


def test_confluent_configs_records_and_elections(secured: MockCluster) -> None:
    c = secured
    a = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    topic, broker = ConfigResource("topic", "orders"), ConfigResource("broker", "0")
    described = a.describe_configs([topic, broker])
    assert code_of(described[topic]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert code_of(described[broker]) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    change = ConfigResource("topic", "orders", incremental_configs=[
        ConfigEntry("retention.ms", "5000", incremental_operation=AlterConfigOpType.SET)])
    assert code_of(a.incremental_alter_configs([change])[change]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert code_of(a.delete_records([TopicPartition("orders", 0, 0)])[TopicPartition("orders", 0, 0)]) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert code_of(a.elect_leaders(ElectionType.PREFERRED, [TopicPartition("orders", 0)])) == \
        KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert "retention.ms" not in c.state.topics["orders"].config.overrides

    c.add_acl("TOPIC", "orders", ME, "ALTER_CONFIGS")  # implies DESCRIBE_CONFIGS
    c.add_acl("TOPIC", "orders", ME, "DELETE")
    c.add_acl("CLUSTER", "kafka-cluster", ME, "DESCRIBE_CONFIGS")
    c.add_acl("CLUSTER", "kafka-cluster", ME, "ALTER")
    described = a.describe_configs([topic, broker])
    assert described[topic].result(10)["retention.ms"].value == "-1"
    assert described[broker].result(10)["num.partitions"].value == "1"
    a.incremental_alter_configs([change])[change].result(10)
    assert c.state.topics["orders"].config["retention.ms"] == 5000
    assert a.delete_records([TopicPartition("orders", 0, 0)])[TopicPartition("orders", 0, 0)].result(10) \
        .low_watermark == 0
    elected = a.elect_leaders(ElectionType.PREFERRED, [TopicPartition("orders", 0)]).result(10)
    assert [e.code() for e in elected.values()] == [KafkaError.ELECTION_NOT_NEEDED]


def test_kafka_python_log_replica_and_feature_admin(secured: MockCluster) -> None:
    from kafka import TopicPartition as KpTP
    from kafka.admin import KafkaAdminClient
    from kafka.errors import ClusterAuthorizationFailedError, TopicAuthorizationFailedError

    c = secured
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers, request_timeout_ms=10_000)
    tp = KpTP("orders", 1)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            admin.delete_records({tp: 0})
        assert admin.describe_log_dirs() == [{"broker": 0, "log_dirs": []}]  # kafka-python drops the error code
        moved = admin.alter_replica_log_dirs({("orders", 1, 0): "/data/0/b"})
        assert [e.__name__ for e in moved.values()] == ["ClusterAuthorizationFailedError"]
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.list_partition_reassignments()
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.alter_partition_reassignments({tp: [0]})
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.update_features({"transaction.version": ("SAFE_DOWNGRADE", 1)})
        described = admin.describe_topic_partitions(["orders", "hidden"])
        assert [(t["name"], t["error_code"]) for t in described["topics"]] == [("orders", 0), ("hidden", 29)]
        assert described["topics"][0]["topic_authorized_operations"] == 1 << 8  # DESCRIBE only

        c.add_acl("TOPIC", "orders", ME, "DELETE")
        c.add_acl("CLUSTER", "kafka-cluster", ME, "ALTER")  # implies DESCRIBE
        assert admin.delete_records({tp: 0})[tp]["error_code"] == 0
        dirs = admin.describe_log_dirs()[0]["log_dirs"]
        assert sorted(d["log_dir"] for d in dirs) == ["/data/0/a", "/data/0/b"]
        moved = admin.alter_replica_log_dirs({("orders", 1, 0): "/data/0/b"})
        assert [e.__name__ for e in moved.values()] == ["NoError"]
        assert admin.list_partition_reassignments() == {}
        assert admin.alter_partition_reassignments({tp: [0]}) == {tp: None}
        assert admin.update_features({"transaction.version": ("SAFE_DOWNGRADE", 1)}) == {"transaction.version": "OK"}
        operations = admin.describe_topic_partitions(["orders"])["topics"][0]["topic_authorized_operations"]
        assert operations == (1 << 6) | (1 << 8)  # DELETE, DESCRIBE
    finally:
        admin.close()


async def test_aiokafka_configs_and_delete_records() -> None:
    from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete
    from aiokafka.admin.config_resource import ConfigResource as AioResource
    from aiokafka.admin.config_resource import ConfigResourceType as AioType
    from aiokafka.errors import TopicAuthorizationFailedError
    from aiokafka.structs import TopicPartition as AioTP

    async with MockCluster(brokers=1, topics={"orders": 2}, config=CONFIG) as c:
        c.add_acl("TOPIC", "orders", ME, "DESCRIBE")
        client = AIOKafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
        await client.start()
        try:
            resources = [AioResource(AioType.TOPIC, "orders"), AioResource(AioType.BROKER, "0")]
            responses = await client.describe_configs(resources)
            assert sorted(r[0] for resp in responses for r in resp.resources) == [29, 31]
            responses = await client.alter_configs([AioResource(AioType.TOPIC, "orders", {"retention.ms": "7000"})])
            assert [r[0] for resp in responses for r in resp.resources] == [29]
            with pytest.raises(TopicAuthorizationFailedError):
                await client.delete_records({AioTP("orders", 0): RecordsToDelete(0)})

            c.add_acl("TOPIC", "orders", ME, "ALL")
            c.add_acl("CLUSTER", "kafka-cluster", ME, "DESCRIBE_CONFIGS")
            responses = await client.describe_configs(resources)
            assert sorted(r[0] for resp in responses for r in resp.resources) == [0, 0]
            responses = await client.alter_configs([AioResource(AioType.TOPIC, "orders", {"retention.ms": "7000"})])
            assert [r[0] for resp in responses for r in resp.resources] == [0]
            assert c.state.topics["orders"].config["retention.ms"] == 7000
            assert await client.delete_records({AioTP("orders", 0): RecordsToDelete(0)}) == {AioTP("orders", 0): 0}
        finally:
            await client.close()
