"""DescribeQuorum (API 55) as a single-voter KRaft quorum: kafka-python's describe_metadata_quorum() (a real
client), every version over the wire, another topic or partition (UNKNOWN_TOPIC_OR_PARTITION on the partition,
as Kafka's raft client answers), DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED at the top), and the
leader epoch moving with the controller."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.errors import ClusterAuthorizationFailedError

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from mockbroker.protocol.runtime import ZERO_UUID

from .wire import WireClient

DQ = api.request_module(55)
AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
UNKNOWN = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.fixture
def c() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as c:
        yield c


def describe(w: WireClient, version: int, asked: list[tuple[str, list[int]]] | None = None) -> Any:
    asked = [("__cluster_metadata", [0])] if asked is None else asked
    return w.call(55, version, DQ.DescribeQuorumRequest(topics=[
        DQ.TopicData(topic_name=name, partitions=[DQ.PartitionData(partition_index=i) for i in indexes])
        for name, indexes in asked]))


def test_kafka_python_describe_metadata_quorum(c: MockCluster) -> None:
    """What kafka-python's own suite asks (test_admin_integration::test_describe_metadata_quorum), and more:
    the controller is the one voter and leader, the other brokers observe, v2 names the voter's listener."""
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
    try:
        result = admin.describe_metadata_quorum()
    finally:
        admin.close()
    assert "error_code" not in result and "error_message" not in result
    [topic] = result["topics"]
    assert topic["topic_name"] == "__cluster_metadata"
    [p] = topic["partitions"]
    assert p["partition_index"] == 0 and p["error"] is None
    controller = c.call(lambda: c.state.controller_id)
    assert p["leader_id"] == controller and p["leader_epoch"] == 1 and p["high_watermark"] > 0
    assert [v["replica_id"] for v in p["current_voters"]] == [controller]
    assert sorted(o["replica_id"] for o in p["observers"]) == sorted({0, 1, 2} - {controller})
    assert all(r["log_end_offset"] == p["high_watermark"] for r in p["current_voters"] + p["observers"])
    [node] = result["nodes"]
    [listener] = node["listeners"]
    assert node["node_id"] == controller
    assert (listener["host"], listener["port"]) == ("127.0.0.1", c.brokers[controller].port)


def test_every_version_from_any_broker(c: MockCluster) -> None:
    """Kafka's DescribeQuorumRequestTest: v0 has no timestamps (-1 on reading), v1+ have them, v2 the nodes;
    the high watermark never goes back."""
    seen = []
    for broker in c.brokers:
        with WireClient(broker.port) as w:
            for version in range(3):
                resp = describe(w, version)
                assert resp.error_code == 0 and resp.error_message == ""
                [topic] = resp.topics
                [p] = topic.partitions
                assert (topic.topic_name, p.partition_index, p.error_code, p.leader_id) == ("__cluster_metadata",
                                                                                           0, 0, 0)
                assert [r.replica_id for r in p.current_voters] == [0]
                assert [r.replica_id for r in p.observers] == [1, 2]
                for r in p.current_voters + p.observers:
                    assert r.log_end_offset > 0
                    assert (r.last_fetch_timestamp == -1) is (version == 0)
                    assert (r.last_caught_up_timestamp == -1) is (version == 0)
                    assert r.replica_directory_id == ZERO_UUID
                assert [n.node_id for n in resp.nodes] == ([0] if version >= 2 else [])
                seen.append(p.high_watermark)
    assert seen == sorted(seen)


@pytest.mark.parametrize("asked", [
    [("orders", [0])],
    [("__cluster_metadata", [1])],
    [("__cluster_metadata", [0, 1])],
    [("__cluster_metadata", [0]), ("orders", [2])],
    [],
], ids=["other-topic", "other-partition", "two-partitions", "two-topics", "none"])
def test_anything_but_the_metadata_partition(c: MockCluster, asked: list[tuple[str, list[int]]]) -> None:
    """RaftUtil.hasValidTopicPartition: exactly __cluster_metadata-0, else DescribeQuorumRequest.
    getPartitionLevelErrorResponse: UNKNOWN_TOPIC_OR_PARTITION and its message on every partition asked."""
    with WireClient(c.brokers[0].port) as w:
        for version in range(3):
            resp = describe(w, version, asked)
            assert resp.error_code == 0 and resp.nodes == []
            got = [(t.topic_name, [(p.partition_index, p.error_code, p.error_message if version >= 2 else None)
                                   for p in t.partitions]) for t in resp.topics]
            message = "This server does not host this topic-partition." if version >= 2 else None
            assert got == [(name, [(i, UNKNOWN, message) for i in indexes]) for name, indexes in asked]


def test_needs_describe_on_the_cluster() -> None:
    """ControllerApis.handleDescribeQuorum: authorizeClusterOperation(DESCRIBE) before anything else."""
    with MockCluster(config=AUTHORIZER) as c:
        admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
        try:
            with pytest.raises(ClusterAuthorizationFailedError):
                admin.describe_metadata_quorum()
            with WireClient(c.brokers[0].port) as w:
                for version in range(3):
                    resp = describe(w, version, [("orders", [0])])  # refused before the topic is looked at
                    assert (resp.error_code, resp.topics) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
                    assert resp.error_message == ("Cluster authorization failed." if version >= 2 else "")
            c.add_acl("CLUSTER", "kafka-cluster", "User:ANONYMOUS", "DESCRIBE")
            assert admin.describe_metadata_quorum()["topics"][0]["partitions"][0]["error"] is None
        finally:
            admin.close()


def test_the_controller_moving_is_a_new_leader_epoch(c: MockCluster) -> None:
    with WireClient(c.brokers[1].port) as w:
        before = describe(w, 2).topics[0].partitions[0]
        c.broker_down(0)
        after = describe(w, 2)
    p = after.topics[0].partitions[0]
    assert (before.leader_id, before.leader_epoch) == (0, 1)
    assert (p.leader_id, p.leader_epoch) == (1, 2) and p.high_watermark > before.high_watermark
    assert [r.replica_id for r in p.current_voters] == [1] and [r.replica_id for r in p.observers] == [2]
    assert [n.node_id for n in after.nodes] == [1]
