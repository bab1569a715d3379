"""Where each handler puts Kafka's authorization errors, over the wire: per partition, per topic, per
group or top level; a missing ACL refuses, the matching ALLOW lets the same request through; and
with authorization off nothing is checked."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from mockbroker.protocol.runtime import ZERO_UUID

from .wire import WireClient, fetch_body

E = ErrorCode
ME = "User:ANONYMOUS"
R = {k: api.request_module(k) for k in (1, 8, 9, 12, 13, 14, 15, 16, 19, 20, 22, 23, 24, 25, 26, 27, 28, 37, 42, 47,
                                         60, 61, 65, 66, 68, 69)}
ALL_CLUSTER_OPS = 0b1_1111_1010_0000


@pytest.fixture
def c() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, topics={"orders": 2, "secret": 1},
                     config={"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}) as c:
        yield c


@pytest.fixture
def w(c: MockCluster) -> Iterator[WireClient]:
    with WireClient(c.brokers[0].port) as w:
        yield w


def test_fetch_and_offset_for_leader_epoch(c: MockCluster, w: WireClient) -> None:
    def fetch(topic: str) -> int:
        return w.call(1, 12, fetch_body(topic, 0, 0)).responses[0].partitions[0].error_code  # type: ignore[no-any-return]

    assert fetch("orders") == E.TOPIC_AUTHORIZATION_FAILED
    assert fetch("nowhere") == E.TOPIC_AUTHORIZATION_FAILED  # existence is not revealed
    c.add_acl("TOPIC", "orders", ME, "READ")
    assert fetch("orders") == 0 and fetch("secret") == E.TOPIC_AUTHORIZATION_FAILED
    by_id = fetch_body("", 0, 0, topic_id=c.state.topics["secret"].topic_id)
    assert w.call(1, 13, by_id).responses[0].partitions[0].error_code == E.TOPIC_AUTHORIZATION_FAILED
    by_id = fetch_body("", 0, 0, topic_id=b"\x01" * 16)
    assert w.call(1, 13, by_id).responses[0].partitions[0].error_code == E.UNKNOWN_TOPIC_ID

    m = R[23]
    body = m.OffsetForLeaderEpochRequest(replica_id=-1, topics=[
        m.OffsetForLeaderTopic(topic=t, partitions=[m.OffsetForLeaderPartition(partition=0, leader_epoch=0)])
        for t in ("orders", "secret")])
    resp = w.call(23, 4, body)
    assert [t.partitions[0].error_code for t in resp.topics] == [0, E.TOPIC_AUTHORIZATION_FAILED]


def test_a_fetch_is_authorized_once_per_topic(c: MockCluster, w: WireClient, caplog: pytest.LogCaptureFixture) -> None:
    """Kafka authorizes the distinct topics of a fetch: two partitions of a denied topic are both
    refused, with one "Denied" log line; the allowed topic's partitions in the same fetch are served."""
    c.add_acl("TOPIC", "secret", ME, "READ")
    body = fetch_body("orders", 0, 0)
    m = R[1]
    body.topics[0].partitions.append(m.FetchPartition(partition=1, fetch_offset=0, partition_max_bytes=1 << 20,
                                                      current_leader_epoch=-1))
    body.topics.append(m.FetchTopic(topic="secret", partitions=[m.FetchPartition(partition=0, fetch_offset=0,
                                                                                 partition_max_bytes=1 << 20)]))
    with caplog.at_level("INFO", logger="mockbroker.authz"):
        answer = w.call(1, 12, body)
    codes = {(t.topic, p.partition_index): p.error_code for t in answer.responses for p in t.partitions}
    assert codes == {("orders", 0): E.TOPIC_AUTHORIZATION_FAILED, ("orders", 1): E.TOPIC_AUTHORIZATION_FAILED,
                     ("secret", 0): 0}
    denied = [r for r in caplog.records if "Denied" in r.getMessage()]
    assert len(denied) == 1 and "TOPIC:orders" in denied[0].getMessage()


def test_offset_commit_and_fetch(c: MockCluster, w: WireClient) -> None:
    m8, m9 = R[8], R[9]

    def commit() -> list[int]:
        body = m8.OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
            m8.OffsetCommitRequestTopic(name=t, partitions=[m8.OffsetCommitRequestPartition(committed_offset=5)])
            for t in ("orders", "secret")])
        return [t.partitions[0].error_code for t in w.call(8, 8, body).topics]

    assert commit() == [E.GROUP_AUTHORIZATION_FAILED] * 2
    c.add_acl("GROUP", "g", ME, "READ")
    c.add_acl("TOPIC", "orders", ME, "READ")
    assert commit() == [0, E.TOPIC_AUTHORIZATION_FAILED]

    c.add_acl("TOPIC", "secret", ME, "READ", "DENY")
    named = w.call(9, 8, m9.OffsetFetchRequest(groups=[m9.OffsetFetchRequestGroup(group_id="g", topics=[
        m9.OffsetFetchRequestTopics(name=t, partition_indexes=[0]) for t in ("orders", "secret")])]))
    assert [(t.name, t.partitions[0].committed_offset, t.partitions[0].error_code)
            for t in named.groups[0].topics] == [("orders", 5, 0), ("secret", -1, E.TOPIC_AUTHORIZATION_FAILED)]
    old = w.call(9, 5, m9.OffsetFetchRequest(group_id="other", topics=None))
    assert old.error_code == E.GROUP_AUTHORIZATION_FAILED


def test_group_membership_calls(c: MockCluster, w: WireClient) -> None:
    assert w.call(12, 4, R[12].HeartbeatRequest(group_id="g", generation_id=1, member_id="m")).error_code == \
        E.GROUP_AUTHORIZATION_FAILED
    assert w.call(14, 5, R[14].SyncGroupRequest(group_id="g", generation_id=1, member_id="m", assignments=[],
                                               protocol_type="consumer", protocol_name="range")).error_code == \
        E.GROUP_AUTHORIZATION_FAILED
    leave = w.call(13, 5, R[13].LeaveGroupRequest(group_id="g", members=[R[13].MemberIdentity(member_id="m")]))
    assert leave.error_code == E.GROUP_AUTHORIZATION_FAILED
    hb = w.call(68, 1, R[68].ConsumerGroupHeartbeatRequest(group_id="g", member_id="m1", member_epoch=0,
                                                          rebalance_timeout_ms=5000,
                                                          subscribed_topic_names=["orders"]))
    assert hb.error_code == E.GROUP_AUTHORIZATION_FAILED
    c.add_acl("GROUP", "g", ME, "READ")
    hb = w.call(68, 1, R[68].ConsumerGroupHeartbeatRequest(group_id="g", member_id="m1", member_epoch=0,
                                                          rebalance_timeout_ms=5000,
                                                          subscribed_topic_names=["orders"]))
    assert hb.error_code == 0 and hb.member_epoch >= 1
    described = w.call(69, 0, R[69].ConsumerGroupDescribeRequest(group_ids=["g", "h"],
                                                                 include_authorized_operations=True))
    first, second = described.groups
    assert first.error_code == 0 and first.authorized_operations == (1 << 3) | (1 << 8)  # READ, DESCRIBE
    assert second.error_code == E.GROUP_AUTHORIZATION_FAILED


def test_describe_list_and_delete_groups(c: MockCluster, w: WireClient) -> None:
    m8 = R[8]
    c.add_acl("GROUP", "*", ME, "READ")
    c.add_acl("TOPIC", "orders", ME, "READ")
    for g in ("a", "b"):
        w.call(8, 8, m8.OffsetCommitRequest(group_id=g, topics=[m8.OffsetCommitRequestTopic(
            name="orders", partitions=[m8.OffsetCommitRequestPartition(committed_offset=1)])]))
    c.add_acl("GROUP", "b", ME, "DESCRIBE", "DENY")
    assert [g.group_id for g in w.call(16, 5, R[16].ListGroupsRequest()).groups] == ["a"]
    c.add_acl("CLUSTER", "kafka-cluster", ME, "DESCRIBE")  # lists every group
    assert sorted(g.group_id for g in w.call(16, 5, R[16].ListGroupsRequest()).groups) == ["a", "b"]
    described = w.call(15, 5, R[15].DescribeGroupsRequest(groups=["a", "b"], include_authorized_operations=True))
    assert [(g.group_id, g.error_code) for g in described.groups] == [("a", 0), ("b", E.GROUP_AUTHORIZATION_FAILED)]
    assert described.groups[0].authorized_operations == (1 << 3) | (1 << 8)
    deleted = w.call(42, 2, R[42].DeleteGroupsRequest(groups_names=["b", "a"]))
    assert [(r.group_id, r.error_code) for r in deleted.results] == [
        ("b", E.GROUP_AUTHORIZATION_FAILED), ("a", E.GROUP_AUTHORIZATION_FAILED)]
    c.add_acl("GROUP", "a", ME, "DELETE")
    deleted = w.call(42, 2, R[42].DeleteGroupsRequest(groups_names=["b", "a"]))
    assert [(r.group_id, r.error_code) for r in deleted.results] == [("a", 0), ("b", E.GROUP_AUTHORIZATION_FAILED)]
    m47 = R[47]
    body = m47.OffsetDeleteRequest(group_id="b", topics=[m47.OffsetDeleteRequestTopic(
        name="orders", partitions=[m47.OffsetDeleteRequestPartition(partition_index=0)])])
    assert w.call(47, 0, body).error_code == E.GROUP_AUTHORIZATION_FAILED


def test_topic_administration(c: MockCluster, w: WireClient) -> None:
    m19, m20, m37 = R[19], R[20], R[37]
    create = m19.CreateTopicsRequest(topics=[m19.CreatableTopic(name=n, num_partitions=1, replication_factor=1)
                                             for n in ("t-new", "other")])
    resp = w.call(19, 7, create)
    assert [(t.name, t.error_code, t.error_message) for t in resp.topics] == [
        ("t-new", E.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."),
        ("other", E.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")]
    c.add_acl("TOPIC", "t-", ME, "CREATE", pattern_type="PREFIXED")
    resp = w.call(19, 7, create)
    assert [t.error_code for t in resp.topics] == [0, E.TOPIC_AUTHORIZATION_FAILED]
    assert resp.topics[0].topic_config_error_code == E.TOPIC_AUTHORIZATION_FAILED and resp.topics[0].configs == []

    grow = m37.CreatePartitionsRequest(topics=[m37.CreatePartitionsTopic(name="t-new", count=3, assignments=None)])
    assert w.call(37, 3, grow).results[0].error_code == E.TOPIC_AUTHORIZATION_FAILED
    c.add_acl("TOPIC", "t-new", ME, "ALTER")
    assert w.call(37, 3, grow).results[0].error_code == 0

    by_id = m20.DeleteTopicsRequest(topics=[m20.DeleteTopicState(topic_id=c.state.topics["secret"].topic_id),
                                            m20.DeleteTopicState(name="t-new")])
    resp = w.call(20, 6, by_id)
    assert [(r.name, r.error_code) for r in resp.responses] == [
        (None, E.TOPIC_AUTHORIZATION_FAILED), ("t-new", E.TOPIC_AUTHORIZATION_FAILED)]
    c.add_acl("TOPIC", "t-new", ME, "DELETE")
    resp = w.call(20, 5, m20.DeleteTopicsRequest(topic_names=["t-new", "missing"]))
    assert [r.error_code for r in resp.responses] == [0, E.TOPIC_AUTHORIZATION_FAILED]
    assert "t-new" not in c.state.topics and "secret" in c.state.topics


def test_producer_ids_and_transactions(c: MockCluster, w: WireClient) -> None:
    m22 = R[22]
    idempotent = m22.InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
    assert w.call(22, 4, idempotent).error_code == E.CLUSTER_AUTHORIZATION_FAILED
    c.add_acl("TOPIC", "any-", ME, "WRITE", pattern_type="PREFIXED")  # WRITE on some topic is enough
    assert w.call(22, 4, idempotent).error_code == 0
    txn = m22.InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60000)
    assert w.call(22, 4, txn).error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    m25, m26, m28, m24 = R[25], R[26], R[28], R[24]
    assert w.call(25, 3, m25.AddOffsetsToTxnRequest(transactional_id="tx", group_id="g")).error_code == \
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert w.call(26, 4, m26.EndTxnRequest(transactional_id="tx")).error_code == \
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    c.add_acl("TRANSACTIONAL_ID", "tx", ME, "WRITE")
    init = w.call(22, 4, txn)
    assert init.error_code == 0
    pid, epoch = init.producer_id, init.producer_epoch
    assert w.call(25, 3, m25.AddOffsetsToTxnRequest(transactional_id="tx", producer_id=pid, producer_epoch=epoch,
                                                    group_id="g")).error_code == E.GROUP_AUTHORIZATION_FAILED
    add = m24.AddPartitionsToTxnRequest(v3_and_below_transactional_id="tx", v3_and_below_producer_id=pid,
                                        v3_and_below_producer_epoch=epoch, v3_and_below_topics=[
                                            m24.AddPartitionsToTxnTopic(name=n, partitions=[0])
                                            for n in ("orders", "missing")])
    codes = {t.name: t.results_by_partition[0].partition_error_code
             for t in w.call(24, 3, add).results_by_topic_v3_and_below}
    assert codes == {"orders": E.TOPIC_AUTHORIZATION_FAILED, "missing": E.TOPIC_AUTHORIZATION_FAILED}
    c.add_acl("TOPIC", "orders", ME, "WRITE")
    codes = {t.name: t.results_by_partition[0].partition_error_code
             for t in w.call(24, 3, add).results_by_topic_v3_and_below}
    assert codes == {"orders": E.OPERATION_NOT_ATTEMPTED, "missing": E.TOPIC_AUTHORIZATION_FAILED}
    broker_batch = m24.AddPartitionsToTxnRequest(transactions=[])
    assert w.call(24, 5, broker_batch).error_code == E.CLUSTER_AUTHORIZATION_FAILED
    commit = m28.TxnOffsetCommitRequest(transactional_id="tx", group_id="g", producer_id=pid, producer_epoch=epoch,
                                        topics=[m28.TxnOffsetCommitRequestTopic(name="orders", partitions=[
                                            m28.TxnOffsetCommitRequestPartition(committed_offset=1)])])
    assert w.call(28, 3, commit).topics[0].partitions[0].error_code == E.GROUP_AUTHORIZATION_FAILED
    m27 = R[27]
    markers = m27.WriteTxnMarkersRequest(markers=[m27.WritableTxnMarker(producer_id=pid, producer_epoch=epoch,
                                                                        transaction_result=False, topics=[
        m27.WritableTxnMarkerTopic(name="orders", partition_indexes=[0])])])
    assert w.call(27, 1, markers).markers[0].topics[0].partitions[0].error_code == E.CLUSTER_AUTHORIZATION_FAILED


def test_transaction_and_producer_descriptions(c: MockCluster, w: WireClient) -> None:
    c.add_acl("TRANSACTIONAL_ID", "tx", ME, "WRITE")
    c.add_acl("TRANSACTIONAL_ID", "hidden", "User:bob", "WRITE")
    for txn_id in ("tx", "hidden"):
        c.call(c.state.transactions.init_producer, txn_id, 60000, -1, -1)
    listed = w.call(66, 1, R[66].ListTransactionsRequest(state_filters=[], producer_id_filters=[]))
    assert [t.transactional_id for t in listed.transaction_states] == ["tx"]
    described = w.call(65, 0, R[65].DescribeTransactionsRequest(transactional_ids=["tx", "hidden"]))
    assert [s.error_code for s in described.transaction_states] == [0, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED]
    m61 = R[61]
    producers = w.call(61, 0, m61.DescribeProducersRequest(topics=[m61.TopicRequest(name="orders",
                                                                                    partition_indexes=[0])]))
    assert producers.topics[0].partitions[0].error_code == E.TOPIC_AUTHORIZATION_FAILED


def test_describe_cluster_operations(c: MockCluster, w: WireClient) -> None:
    asked = R[60].DescribeClusterRequest(include_cluster_authorized_operations=True)
    resp = w.call(60, 1, asked)
    assert resp.error_code == 0 and resp.cluster_authorized_operations == 0  # no DESCRIBE: answered, no ops
    c.add_acl("CLUSTER", "kafka-cluster", ME, "ALTER")
    assert w.call(60, 1, asked).cluster_authorized_operations == (1 << 7) | (1 << 8)
    c.call(c.state.config.set, "super.users", ME)
    assert w.call(60, 1, asked).cluster_authorized_operations == ALL_CLUSTER_OPS


def test_nothing_is_checked_when_off() -> None:
    with MockCluster(brokers=1, topics={"orders": 1}) as c, WireClient(c.brokers[0].port) as w:
        c.add_acl("TOPIC", "orders", "User:*", "ALL", "DENY")  # stored, but no authorizer: no effect
        assert w.call(1, 12, fetch_body("orders", 0, 0)).responses[0].partitions[0].error_code == 0
        m22 = R[22]
        assert w.call(22, 4, m22.InitProducerIdRequest(transactional_id=None)).error_code == 0
        assert w.call(20, 6, R[20].DeleteTopicsRequest(topics=[R[20].DeleteTopicState(name="orders",
                                                                                      topic_id=ZERO_UUID)])) \
            .responses[0].error_code == 0
