"""Topic administration through real admin clients (confluent-kafka, kafka-python, aiokafka):
CreateTopics, DeleteTopics, CreatePartitions, DescribeCluster; every version of those and of
OffsetForLeaderEpoch over a raw socket with the codec."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from mockbroker.protocol.runtime import ZERO_UUID
from mockbroker.state.log import StoredBatch

from .wire import WireClient

CT, DT, CP, DC, OLE = (api.request_module(k) for k in (19, 20, 37, 60, 23))


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


# -- confluent-kafka (librdkafka) --------------------------------------------------------------
def test_confluent_create_topics(cluster: MockCluster) -> None:
    a = admin(cluster)
    result = outcome(a.create_topics([
        NewTopic("plain", 3, 2),
        NewTopic("configured", 2, 1, config={"max.message.bytes": "2048", "message.timestamp.type": "LogAppendTime",
                                              "min.insync.replicas": "1"}),
        NewTopic("orders", 1, 1),  # exists already
        NewTopic("bad name!", 1, 1),
        NewTopic("too-replicated", 1, 5),
        NewTopic("bad-config", 1, 1, config={"compression.type": "brotli"}),
        NewTopic("unknown-config", 1, 1, config={"no.such.setting": "1"}),
        NewTopic("assigned", num_partitions=2, replica_assignment=[[2, 0], [1, 2]]),
        NewTopic("missing-broker", num_partitions=1, replica_assignment=[[0, 7]]),
    ]))
    assert result == {
        "plain": "ok", "configured": "ok", "orders": "TOPIC_ALREADY_EXISTS",
        "bad name!": "TOPIC_EXCEPTION", "too-replicated": "INVALID_REPLICATION_FACTOR",
        "bad-config": "INVALID_CONFIG", "unknown-config": "INVALID_CONFIG", "assigned": "ok",
        "missing-broker": "INVALID_REPLICA_ASSIGNMENT",
    }
    topics = cluster.state.topics
    assert len(topics["plain"].partitions) == 3 and all(len(p.replicas) == 2 for p in topics["plain"].partitions)
    assert topics["configured"].config["max.message.bytes"] == 2048
    assert topics["configured"].config["message.timestamp.type"] == "LogAppendTime"
    assert [p.replicas for p in topics["assigned"].partitions] == [[2, 0], [1, 2]]
    assert [p.leader for p in topics["assigned"].partitions] == [2, 1]
    assert topics["assigned"].replication_factor == 2
    assert not {"bad-config", "unknown-config", "missing-broker", "too-replicated"} & set(topics)


def test_confluent_validate_only_creates_nothing(cluster: MockCluster) -> None:
    client = admin(cluster)
    futures = client.create_topics([NewTopic("dry", 2, 1), NewTopic("orders", 1, 1)], validate_only=True)
    assert outcome(futures) == {"dry": "ok", "orders": "TOPIC_ALREADY_EXISTS"}
    assert "dry" not in cluster.state.topics


def test_confluent_delete_topics(cluster: MockCluster) -> None:
    cluster.create_topic("gone", 1)
    assert outcome(admin(cluster).delete_topics(["gone", "never"])) == {
        "gone": "ok", "never": "UNKNOWN_TOPIC_OR_PART"}  # librdkafka's name for code 3
    assert "gone" not in cluster.state.topics


def test_confluent_create_partitions(cluster: MockCluster) -> None:
    a = admin(cluster)
    cluster.create_topic("grow", 2, 2)
    assert outcome(a.create_partitions([NewPartitions("grow", 4), NewPartitions("missing", 3)])) == {
        "grow": "ok", "missing": "UNKNOWN_TOPIC_OR_PART"}
    assert len(cluster.state.topics["grow"].partitions) == 4
    assert outcome(a.create_partitions([NewPartitions("grow", 3)])) == {"grow": "INVALID_PARTITIONS"}
    assert outcome(a.create_partitions([NewPartitions("grow", 6, replica_assignment=[[1, 0], [2, 1]])])) == {
        "grow": "ok"}
    assert [p.replicas for p in cluster.state.topics["grow"].partitions[4:]] == [[1, 0], [2, 1]]
    assert [p.leader for p in cluster.state.topics["grow"].partitions[4:]] == [1, 2]
    bad = [NewPartitions("grow", 7, replica_assignment=[[0, 9]]),  # no broker 9
           NewPartitions("orders", 7, replica_assignment=[[0, 1]])]  # orders has one replica per partition
    assert outcome(a.create_partitions(bad)) == {
        "grow": "INVALID_REPLICA_ASSIGNMENT", "orders": "INVALID_REPLICA_ASSIGNMENT"}
    assert len(cluster.state.topics["grow"].partitions) == 6 and len(cluster.state.topics["orders"].partitions) == 6
    assert outcome(a.create_partitions([NewPartitions("grow", 9)], validate_only=True)) == {"grow": "ok"}
    assert len(cluster.state.topics["grow"].partitions) == 6


def test_confluent_describe_cluster(cluster: MockCluster) -> None:
    # librdkafka answers describe_cluster from a Metadata request, not DescribeCluster (API 60)
    client = admin(cluster)  # keep the handle alive while the future runs
    desc = client.describe_cluster().result(10)
    assert desc.cluster_id == cluster.state.cluster_id
    assert sorted(n.id for n in desc.nodes) == [0, 1, 2] and desc.controller.id == 0
    assert {n.port for n in desc.nodes} == {b.port for b in cluster.brokers}


# -- kafka-python ------------------------------------------------------------------------------
def test_kafka_python_admin(cluster: MockCluster) -> None:
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewPartitions as KpNewPartitions
    from kafka.errors import TopicAlreadyExistsError

    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10_000)
    try:
        created = client.create_topics({
            "kp-admin": {"num_partitions": 2, "replication_factor": 3, "configs": {"retention.ms": "1000"}},
            "kp-assigned": {"assignments": {0: [1], 1: [2]}},
        })
        results = {t["name"]: t for t in created["topics"]}
        admin_topic = results["kp-admin"]
        assert admin_topic["error_code"] == 0
        assert (admin_topic["num_partitions"], admin_topic["replication_factor"]) == (2, 3)
        assert admin_topic["configs"]["retention.ms"]["value"] == "1000"
        assert admin_topic["configs"]["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        assert admin_topic["configs"]["cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"
        topic_id = cluster.state.topics["kp-admin"].topic_id
        assert str(admin_topic["topic_id"]) == str(uuid.UUID(bytes=topic_id))
        assert [p.replicas for p in cluster.state.topics["kp-assigned"].partitions] == [[1], [2]]
        with pytest.raises(TopicAlreadyExistsError):
            client.create_topics({"kp-admin": {}})

        client.create_partitions({"kp-admin": KpNewPartitions(4)})
        assert len(cluster.state.topics["kp-admin"].partitions) == 4

        info = client.describe_cluster()
        assert info["cluster_id"] == cluster.state.cluster_id and info["controller_id"] == 0
        assert sorted(b["broker_id"] for b in info["brokers"]) == [0, 1, 2]
        assert set(info["authorized_operations"]) == {  # it asks for them; no authorizer: all CLUSTER ops
            "CREATE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"}

        client.delete_topics(["kp-assigned"])
        deleted = client.delete_topics([uuid.UUID(bytes=topic_id)])  # by id: DeleteTopics v6
        assert deleted["topics"][0]["name"] == "kp-admin"
        assert not {"kp-admin", "kp-assigned"} & set(cluster.state.topics)
    finally:
        client.close()


# -- aiokafka ----------------------------------------------------------------------------------
async def test_aiokafka_admin() -> None:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin import NewPartitions as AioNewPartitions
    from aiokafka.admin import NewTopic as AioNewTopic
    from aiokafka.errors import InvalidPartitionsError

    async with MockCluster(brokers=3) as cluster:
        client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        await client.start()
        try:
            resp = await client.create_topics([AioNewTopic("aio-admin", 3, 2), AioNewTopic("aio-x", 1, 9)])
            codes = {name: code for name, code, *_ in resp.topic_errors}
            assert codes == {"aio-admin": 0, "aio-x": ErrorCode.INVALID_REPLICATION_FACTOR}
            assert len(cluster.state.topics["aio-admin"].partitions) == 3
            await client.create_partitions({"aio-admin": AioNewPartitions(5)})
            assert len(cluster.state.topics["aio-admin"].partitions) == 5
            with pytest.raises(InvalidPartitionsError):
                await client.create_partitions({"aio-admin": AioNewPartitions(5)})
            resp = await client.delete_topics(["aio-admin", "aio-none"])
            codes = {name: code for name, code, *_ in resp.topic_error_codes}
            assert codes == {"aio-admin": 0, "aio-none": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            assert "aio-admin" not in cluster.state.topics
        finally:
            await client.close()


# -- every version over the wire ---------------------------------------------------------------
def _creatable(name: str, partitions: int = 1, rf: int = 1, assignments: dict[int, list[int]] | None = None,
               configs: dict[str, str | None] | None = None) -> Any:
    return CT.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf,
        assignments=[CT.CreatableReplicaAssignment(partition_index=i, broker_ids=b)
                     for i, b in (assignments or {}).items()],
        configs=[CT.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])


@pytest.mark.parametrize("version", range(8))
def test_create_topics_every_version(version: int) -> None:
    with MockCluster(brokers=3, topics={"a_b": 1}, config={"log.retention.ms": 5000}) as cluster, \
            WireClient(cluster.brokers[0].port) as c:
        body = CT.CreateTopicsRequest(timeout_ms=1000, topics=[
            _creatable("new", 2, 2, configs={"cleanup.policy": "compact"}),
            _creatable("twice"), _creatable("twice"),
            _creatable("both", 2, -1, assignments={0: [0]}),
            _creatable("gap", -1, -1, assignments={0: [0], 2: [1]}),
            _creatable("uneven", -1, -1, assignments={0: [0], 1: [1, 2]}),
            _creatable("null-config", configs={"retention.ms": None}),
            _creatable("bad-int", configs={"segment.bytes": "lots"}),
            _creatable("a.b"),
            _creatable("zero", 0),
            _creatable("defaults", -1, -1),
        ])
        topics = c.call(19, version, body).topics
        by_name = {t.name: t for t in topics}
        assert [t.name for t in topics].count("twice") == 1
        assert {n: t.error_code for n, t in by_name.items()} == {
            "new": 0, "twice": ErrorCode.INVALID_REQUEST, "both": ErrorCode.INVALID_REQUEST,
            "gap": ErrorCode.INVALID_REPLICA_ASSIGNMENT, "uneven": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "null-config": ErrorCode.INVALID_CONFIG, "bad-int": ErrorCode.INVALID_CONFIG,
            "a.b": ErrorCode.INVALID_TOPIC_EXCEPTION, "zero": ErrorCode.INVALID_PARTITIONS, "defaults": 0,
        }
        assert "new" in cluster.state.topics and "twice" not in cluster.state.topics
        new = by_name["new"]
        if version >= 1:
            assert "collides" in by_name["a.b"].error_message and new.error_message is None
        if version >= 5:
            assert (new.num_partitions, new.replication_factor) == (2, 2)
            sources = {cfg.name: (cfg.value, cfg.config_source) for cfg in new.configs}
            assert sources["cleanup.policy"] == ("compact", 1)  # DYNAMIC_TOPIC_CONFIG
            assert sources["retention.ms"] == ("5000", 4)  # STATIC_BROKER_CONFIG: set on the cluster
            assert sources["max.message.bytes"] == ("1048588", 5)  # DEFAULT_CONFIG
            assert by_name["zero"].configs is None and by_name["zero"].num_partitions == -1
        else:
            assert new.configs == [] and new.num_partitions == -1
        assert new.topic_id == (cluster.state.topics["new"].topic_id if version >= 7 else ZERO_UUID)


def test_create_topics_refuses_more_than_10000_partitions() -> None:
    with MockCluster(brokers=1) as cluster, WireClient(cluster.brokers[0].port) as c:
        body = CT.CreateTopicsRequest(topics=[_creatable("huge", 10_000), _creatable("one")])
        topics = c.call(19, 7, body).topics
        assert [(t.name, t.error_code) for t in topics] == [("huge", ErrorCode.POLICY_VIOLATION),
                                                            ("one", ErrorCode.POLICY_VIOLATION)]
        assert not cluster.state.topics


@pytest.mark.parametrize("version", range(7))
def test_delete_topics_every_version(version: int) -> None:
    with MockCluster(brokers=1, topics={"x": 1, "y": 1, "z": 1}) as cluster, WireClient(cluster.brokers[0].port) as c:
        y_id = cluster.state.topics["y"].topic_id
        if version >= 6:
            state = DT.DeleteTopicState
            body = DT.DeleteTopicsRequest(topics=[
                state(name="x"), state(topic_id=y_id), state(topic_id=uuid.uuid4().bytes), state(name="no"),
                state(name="z", topic_id=y_id), state(), state(name="dup"), state(name="dup")])
        else:
            body = DT.DeleteTopicsRequest(topic_names=["x", "y", "no", "dup", "dup"])
        results = [(r.name, r.error_code) for r in c.call(20, version, body).responses]
        if version >= 6:
            assert results == [("x", 0), ("y", 0), (None, ErrorCode.UNKNOWN_TOPIC_ID),
                               ("no", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ("z", ErrorCode.INVALID_REQUEST),
                               (None, ErrorCode.INVALID_REQUEST), ("dup", ErrorCode.INVALID_REQUEST)]
        else:
            assert results == [("x", 0), ("y", 0), ("no", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                               ("dup", ErrorCode.INVALID_REQUEST)]
        assert sorted(cluster.state.topics) == ["z"] and y_id not in cluster.state.topics_by_id


@pytest.mark.parametrize("version", [0, 2, 3, 6])
def test_delete_topics_disabled(version: int) -> None:
    with MockCluster(topics={"keep": 1}, config={"delete.topic.enable": "false"}) as cluster, \
            WireClient(cluster.brokers[0].port) as c:
        body = DT.DeleteTopicsRequest(topic_names=["keep"], topics=[DT.DeleteTopicState(name="keep")])
        [result] = c.call(20, version, body).responses
        assert result.error_code == (ErrorCode.TOPIC_DELETION_DISABLED if version >= 3 else ErrorCode.INVALID_REQUEST)
        assert "keep" in cluster.state.topics


@pytest.mark.parametrize("version", range(4))
def test_create_partitions_every_version(version: int) -> None:
    with MockCluster(brokers=2, topics={"t": 1, "u": 1, "v": 1}) as cluster, WireClient(cluster.brokers[0].port) as c:
        def grow(name: str, count: int, assignments: list[list[int]] | None = None) -> Any:
            return CP.CreatePartitionsTopic(name=name, count=count, assignments=None if assignments is None else [
                CP.CreatePartitionsAssignment(broker_ids=b) for b in assignments])

        body = CP.CreatePartitionsRequest(timeout_ms=1000, topics=[
            grow("t", 3, [[1], [0]]), grow("u", 2), grow("u", 3), grow("v", 3, [[1]]), grow("w", 2)])
        results = [(r.name, r.error_code) for r in c.call(37, version, body).results]
        assert results == [("t", 0), ("u", ErrorCode.INVALID_REQUEST), ("v", ErrorCode.INVALID_REPLICA_ASSIGNMENT),
                           ("w", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        assert [p.replicas for p in cluster.state.topics["t"].partitions[1:]] == [[1], [0]]
        assert len(cluster.state.topics["u"].partitions) == 1
        huge = CP.CreatePartitionsRequest(topics=[grow("u", 10_002)], validate_only=True)
        assert c.call(37, version, huge).results[0].error_code == ErrorCode.POLICY_VIOLATION


@pytest.mark.parametrize("version", range(3))
def test_describe_cluster_every_version(version: int) -> None:
    with MockCluster(brokers=2) as cluster, WireClient(cluster.brokers[1].port) as c:
        plain = c.call(60, version, DC.DescribeClusterRequest())
        assert plain.error_code == 0 and plain.cluster_id == cluster.state.cluster_id and plain.controller_id == 0
        assert [(b.broker_id, b.port, b.is_fenced) for b in plain.brokers] == [
            (s.node_id, s.port, False) for s in cluster.brokers]
        assert plain.cluster_authorized_operations == -(2**31)
        asked = c.call(60, version, DC.DescribeClusterRequest(include_cluster_authorized_operations=True))
        assert asked.cluster_authorized_operations == 0b1_1111_1010_0000  # CREATE, ALTER .. IDEMPOTENT_WRITE
        if version >= 1:
            controllers = c.call(60, version, DC.DescribeClusterRequest(endpoint_type=2))
            assert controllers.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE and controllers.brokers == []


@pytest.mark.parametrize("version", range(5))
def test_offset_for_leader_epoch_every_version(version: int) -> None:
    with MockCluster(brokers=3, topics={"t": 1}) as cluster:
        log = cluster.state.partition("t", 0)  # partition 0 is led by broker 0, its only replica
        cluster.call(log.append, _stored(0, 5))
        cluster.call(log.bump_leader_epoch)
        cluster.call(log.append, _stored(5, 3))

        def ask(epoch: int, current: int = -1, partition: int = 0, topic: str = "t", broker: int = 0) -> Any:
            body = OLE.OffsetForLeaderEpochRequest(replica_id=-1, topics=[OLE.OffsetForLeaderTopic(
                topic=topic, partitions=[OLE.OffsetForLeaderPartition(
                    partition=partition, current_leader_epoch=current, leader_epoch=epoch)])])
            with WireClient(cluster.brokers[broker].port) as c:
                return c.call(23, version, body).topics[0].partitions[0]

        first, current = ask(0), ask(1)
        assert (first.error_code, first.end_offset, current.end_offset) == (0, 5, 8)
        assert (first.leader_epoch, current.leader_epoch) == ((0, 1) if version >= 1 else (-1, -1))
        assert (ask(7).leader_epoch, ask(7).end_offset) == (-1, -1)  # an epoch the partition never had
        assert ask(0, partition=3).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert ask(0, topic="nope").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert ask(0, broker=1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        if version >= 2:
            fenced = ask(1, current=0)
            assert (fenced.error_code, fenced.end_offset) == (ErrorCode.FENCED_LEADER_EPOCH, -1)
            assert ask(1, current=7).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
            assert ask(0, current=1).end_offset == 5
        else:
            assert ask(0, current=0).error_code == 0  # no current_leader_epoch before v2: unchecked


def _stored(base: int, count: int) -> StoredBatch:
    return StoredBatch(base_offset=base, last_offset=base + count - 1, max_timestamp=-1, size=10, buffers=[b"x" * 10])
