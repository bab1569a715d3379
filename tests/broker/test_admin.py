"""Topic administration through real admin clients: CreateTopics, DeleteTopics, CreatePartitions,
DescribeCluster; OffsetForLeaderEpoch over the wire."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api

from .wire import WireClient


def admin(cluster: MockCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def outcome(futures: dict) -> dict[str, str]:
    out = {}
    for name, future in futures.items():
        try:
            future.result(10)
            out[name] = "ok"
        except KafkaException as exc:
            out[name] = exc.args[0].name()
    return out


def test_confluent_admin_create_topics(cluster: MockCluster) -> None:
    a = admin(cluster)
    result = outcome(a.create_topics([
        NewTopic("plain", 3, 2),
        NewTopic("configured", 2, 1, config={"max.message.bytes": "2048", "message.timestamp.type": "LogAppendTime"}),
        NewTopic("orders", 1, 1),  # exists already
        NewTopic("bad name!", 1, 1),
        NewTopic("too-replicated", 1, 5),
        NewTopic("bad-config", 1, 1, config={"compression.type": "brotli"}),
        NewTopic("assigned", num_partitions=2, replica_assignment=[[2, 0], [1, 2]]),
    ]))
    assert result == {
        "plain": "ok", "configured": "ok", "orders": "TOPIC_ALREADY_EXISTS",
        "bad name!": "TOPIC_EXCEPTION", "too-replicated": "INVALID_REPLICATION_FACTOR",
        "bad-config": "INVALID_CONFIG", "assigned": "ok",
    }
    topics = cluster.state.topics
    assert len(topics["plain"].partitions) == 3 and all(len(p.replicas) == 2 for p in topics["plain"].partitions)
    assert topics["configured"].config["max.message.bytes"] == 2048
    assert [p.replicas for p in topics["assigned"].partitions] == [[2, 0], [1, 2]]
    assert [p.leader for p in topics["assigned"].partitions] == [2, 1]


def test_confluent_admin_validate_only_creates_nothing(cluster: MockCluster) -> None:
    client = admin(cluster)
    assert outcome(client.create_topics([NewTopic("dry", 2, 1)], validate_only=True)) == {"dry": "ok"}
    assert "dry" not in cluster.state.topics


def test_confluent_admin_delete_and_grow(cluster: MockCluster) -> None:
    a = admin(cluster)
    cluster.create_topic("grow", 2)
    cluster.create_topic("gone", 1)
    assert outcome(a.create_partitions([NewPartitions("grow", 5), NewPartitions("missing", 3)])) == {
        "grow": "ok", "missing": "UNKNOWN_TOPIC_OR_PART"}  # librdkafka's name for code 3
    assert len(cluster.state.topics["grow"].partitions) == 5
    assert outcome(a.create_partitions([NewPartitions("grow", 4)])) == {"grow": "INVALID_PARTITIONS"}
    assert outcome(a.delete_topics(["gone", "never"])) == {"gone": "ok", "never": "UNKNOWN_TOPIC_OR_PART"}
    assert "gone" not in cluster.state.topics


def test_confluent_admin_describe_cluster(cluster: MockCluster) -> None:
    client = admin(cluster)  # keep the handle alive while the future runs
    desc = client.describe_cluster().result(10)
    assert desc.cluster_id == cluster.state.cluster_id
    assert sorted(n.id for n in desc.nodes) == [0, 1, 2] and desc.controller.id == 0


def test_kafka_python_admin(cluster: MockCluster) -> None:
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewPartitions as KpNewPartitions
    from kafka.admin import NewTopic as KpNewTopic

    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10_000)
    try:
        client.create_topics([KpNewTopic("kp-admin", 2, 1)])
        assert len(cluster.state.topics["kp-admin"].partitions) == 2
        client.create_partitions({"kp-admin": KpNewPartitions(4)})
        assert len(cluster.state.topics["kp-admin"].partitions) == 4
        info = client.describe_cluster()
        assert info["cluster_id"] == cluster.state.cluster_id and len(info["brokers"]) == 3
        client.delete_topics(["kp-admin"])
        assert "kp-admin" not in cluster.state.topics
    finally:
        client.close()


async def test_aiokafka_admin() -> None:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin import NewTopic as AioNewTopic

    async with MockCluster(brokers=2) as cluster:
        client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        await client.start()
        try:
            await client.create_topics([AioNewTopic("aio-admin", 3, 2)])
            assert len(cluster.state.topics["aio-admin"].partitions) == 3
            await client.delete_topics(["aio-admin"])
            assert "aio-admin" not in cluster.state.topics
        finally:
            await client.close()


@pytest.mark.parametrize("version", [0, 2, 4])
def test_offset_for_leader_epoch(version: int) -> None:
    req = api.request_module(23)
    with MockCluster(brokers=1, topics={"t": 1}) as cluster, WireClient(cluster.brokers[0].port) as c:
        log = cluster.state.partition("t", 0)
        cluster.call(log.append, _stored(0, 5))
        cluster.call(log.bump_leader_epoch)
        cluster.call(log.append, _stored(5, 3))

        def ask(epoch: int, current: int = -1) -> object:
            body = req.OffsetForLeaderEpochRequest(replica_id=-1, topics=[req.OffsetForLeaderTopic(
                topic="t", partitions=[req.OffsetForLeaderPartition(partition=0, current_leader_epoch=current,
                                                                     leader_epoch=epoch)])])
            return c.call(23, version, body).topics[0].partitions[0]

        first = ask(0)
        assert (first.error_code, first.end_offset) == (0, 5)
        assert ask(1).end_offset == 8
        if version >= 2:
            assert ask(1, current=0).error_code == ErrorCode.FENCED_LEADER_EPOCH
            assert ask(1, current=7).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
        if version >= 1:
            assert first.leader_epoch == 0


def _stored(base: int, count: int) -> object:
    from mockbroker.state.log import StoredBatch

    return StoredBatch(base, base + count - 1, 0, 10, [b"x" * 10])
