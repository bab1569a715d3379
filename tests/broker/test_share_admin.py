"""The admin side of KIP-932 share groups over real sockets: ShareGroupDescribe (77),
DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91), DeleteShareGroupOffsets (92), and share
groups in ListGroups, DeleteGroups and DescribeGroups; fault rules and the journal on the offsets APIs.
Membership comes from ShareGroupHeartbeat v1 on the wire (the Python admin clients offer none of these)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from tests.broker.wire import WireClient

GROUP = "workers"
NO_OPERATIONS = -2147483648
ZERO_UUID = b"\x00" * 16


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, topics={"orders": 3, "other": 1}) as c:
        yield c


def coordinator(cluster: MockCluster, group_id: str = GROUP) -> WireClient:
    return WireClient(cluster.brokers[cluster.state.coordinator_for(group_id).node_id].port)


def elsewhere(cluster: MockCluster, group_id: str = GROUP) -> WireClient:
    node = cluster.state.coordinator_for(group_id).node_id
    return WireClient(next(b for b in cluster.brokers if b.node_id != node).port)


def heartbeat(c: WireClient, member_id: str, epoch: int, topics: list[str] | None = None,
              group_id: str = GROUP) -> Any:
    m = api.request_module(76)
    resp = c.call(76, 1, m.ShareGroupHeartbeatRequest(group_id=group_id, member_id=member_id, member_epoch=epoch,
                                                      subscribed_topic_names=topics))
    assert resp.error_code == 0, resp
    return resp


def join(c: WireClient, member_id: str, topics: list[str], group_id: str = GROUP) -> int:
    """Join and heartbeat once more so the member holds its assignment; its epoch."""
    first = heartbeat(c, member_id, 0, topics, group_id)
    return int(heartbeat(c, member_id, first.member_epoch, group_id=group_id).member_epoch)


def describe(c: WireClient, *group_ids: str, operations: bool = False) -> Any:
    m = api.request_module(77)
    return c.call(77, 1, m.ShareGroupDescribeRequest(group_ids=list(group_ids),
                                                      include_authorized_operations=operations)).groups


def describe_offsets(c: WireClient, topics: dict[str, list[int]] | None, version: int = 1,
                     group_id: str = GROUP) -> Any:
    m = api.request_module(90)
    asked = None if topics is None else [m.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=p)
                                         for t, p in topics.items()]
    [group] = c.call(90, version, m.DescribeShareGroupOffsetsRequest(groups=[
        m.DescribeShareGroupOffsetsRequestGroup(group_id=group_id, topics=asked)])).groups
    return group


def alter(c: WireClient, offsets: dict[str, dict[int, int]], group_id: str = GROUP) -> Any:
    m = api.request_module(91)
    return c.call(91, 0, m.AlterShareGroupOffsetsRequest(group_id=group_id, topics=[
        m.AlterShareGroupOffsetsRequestTopic(topic_name=t, partitions=[
            m.AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o) for p, o in parts.items()])
        for t, parts in offsets.items()]))


def delete_offsets(c: WireClient, topics: list[str], group_id: str = GROUP) -> Any:
    m = api.request_module(92)
    return c.call(92, 0, m.DeleteShareGroupOffsetsRequest(group_id=group_id, topics=[
        m.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics]))


def starts(group: Any) -> dict[tuple[str, int], int]:
    return {(t.topic_name, p.partition_index): p.start_offset for t in group.topics for p in t.partitions}


def empty_group(c: WireClient, topics: list[str] | None = None) -> None:
    """A share group with no members (a member joins, then leaves)."""
    epoch = join(c, "m-gone", topics or ["orders"])
    assert epoch > 0
    heartbeat(c, "m-gone", -1)


def produce(cluster: MockCluster, topic: str, partition: int, count: int) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    for i in range(count):
        p.produce(topic, b"v%d" % i, partition=partition)
        p.flush(10)  # one batch per record
    assert p.flush(10) == 0


# -- ShareGroupDescribe ------------------------------------------------------------------------------
def test_describe_members_and_assignments(cluster: MockCluster) -> None:
    with coordinator(cluster) as c:
        join(c, "m-1", ["orders"])
        join(c, "m-2", ["orders", "other"])
        heartbeat(c, "m-1", describe(c, GROUP)[0].members[0].member_epoch)
        [group] = describe(c, GROUP)
        assert group.error_code == 0 and group.group_id == GROUP
        assert group.group_state == "Stable" and group.assignor_name == "simple"
        assert group.group_epoch >= group.assignment_epoch > 0
        assert group.authorized_operations == NO_OPERATIONS
        members = {m.member_id: m for m in group.members}
        assert set(members) == {"m-1", "m-2"}
        assert members["m-2"].subscribed_topic_names == ["orders", "other"]
        ids = {name: t.topic_id for name, t in cluster.state.topics.items()}
        assigned: dict[str, list[int]] = {}
        for m in group.members:
            for tp in m.assignment.topic_partitions:
                assert tp.topic_id == ids[tp.topic_name]
                assigned.setdefault(tp.topic_name, []).extend(tp.partitions)
        assert sorted(assigned["orders"]) == [0, 1, 2] and assigned["other"] == [0]
        [with_ops] = describe(c, GROUP, operations=True)
        assert with_ops.authorized_operations not in (0, NO_OPERATIONS)


def test_describe_unknown_and_non_share_groups(cluster: MockCluster) -> None:
    m = api.request_module(8)
    with coordinator(cluster, "classic") as c:
        commit = c.call(8, 8, m.OffsetCommitRequest(group_id="classic", topics=[
            m.OffsetCommitRequestTopic(name="orders", partitions=[
                m.OffsetCommitRequestPartition(partition_index=0, committed_offset=0)])]))
        assert commit.topics[0].partitions[0].error_code == 0
        [classic] = describe(c, "classic")
    with coordinator(cluster, "nope") as c:
        [unknown] = describe(c, "nope")
    assert (classic.error_code, classic.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                           "Group classic is not a share group.")
    assert (unknown.error_code, unknown.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.")
    assert unknown.members == [] and unknown.authorized_operations == NO_OPERATIONS


def test_wrong_coordinator(cluster: MockCluster) -> None:
    with coordinator(cluster) as c:
        empty_group(c)
    with elsewhere(cluster) as c:
        assert describe(c, GROUP)[0].error_code == ErrorCode.NOT_COORDINATOR
        assert describe_offsets(c, None).error_code == ErrorCode.NOT_COORDINATOR
        assert alter(c, {"orders": {0: 1}}).error_code == ErrorCode.NOT_COORDINATOR
        assert delete_offsets(c, ["orders"]).error_code == ErrorCode.NOT_COORDINATOR
        m = api.request_module(42)
        [result] = c.call(42, 2, m.DeleteGroupsRequest(groups_names=[GROUP])).results
        assert result.error_code == ErrorCode.NOT_COORDINATOR
        # named topics are read from the share coordinator's state on any broker, as Kafka does
        assert describe_offsets(c, {"orders": [0]}).error_code == 0


# -- AlterShareGroupOffsets and DescribeShareGroupOffsets -------------------------------------------
def test_alter_needs_an_empty_existing_group(cluster: MockCluster) -> None:
    with coordinator(cluster) as c:
        unknown = alter(c, {"orders": {0: 1}})
        assert (unknown.error_code, unknown.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                               f"Group {GROUP} not found.")
        epoch = join(c, "m-1", ["orders"])
        busy = alter(c, {"orders": {0: 1}, "nope": {0: 1}})
        assert (busy.error_code, busy.error_message, busy.responses) == (ErrorCode.NON_EMPTY_GROUP,
                                                                         "The group is not empty.", [])
        heartbeat(c, "m-1", -1)
        assert epoch > 0
        resp = alter(c, {"orders": {0: 1, 2: 0, 7: 3}, "nope": {0: 5}})
        assert resp.error_code == 0
        by_topic = {t.topic_name: t for t in resp.responses}
        assert by_topic["orders"].topic_id == cluster.state.topics["orders"].topic_id
        assert [(p.partition_index, p.error_code) for p in by_topic["orders"].partitions] == \
            [(0, 0), (2, 0), (7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        assert by_topic["nope"].topic_id == ZERO_UUID
        [nope] = by_topic["nope"].partitions
        assert (nope.error_code, nope.error_message) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                         "This server does not host this topic-partition.")
        group = describe_offsets(c, {"orders": [0, 1, 2]})
        assert starts(group) == {("orders", 0): 1, ("orders", 1): -1, ("orders", 2): 0}


def test_describe_offsets_with_lag_and_all_partitions(cluster: MockCluster) -> None:
    produce(cluster, "orders", 0, 5)
    with coordinator(cluster) as c:
        empty_group(c)
        assert alter(c, {"orders": {0: 2}}).error_code == 0
        v1 = describe_offsets(c, {"orders": [0, 1], "nope": [0]})
        parts = {(t.topic_name, p.partition_index): p for t in v1.topics for p in t.partitions}
        assert (parts["orders", 0].start_offset, parts["orders", 0].lag) == (2, 3)  # high watermark 5 - SPSO 2
        assert parts["orders", 0].leader_epoch == cluster.state.topics["orders"].partitions[0].leader_epoch
        assert (parts["orders", 1].start_offset, parts["orders", 1].lag) == (-1, -1)
        assert (parts["nope", 0].start_offset, parts["nope", 0].lag, parts["nope", 0].error_code) == (-1, -1, 0)
        assert next(t for t in v1.topics if t.topic_name == "nope").topic_id == ZERO_UUID
        assert starts(describe_offsets(c, {"orders": [0]}, version=0)) == {("orders", 0): 2}
        everything = describe_offsets(c, None)
        assert everything.error_code == 0 and starts(everything) == {("orders", 0): 2}
        assert describe_offsets(c, {}).topics == []
        # an unknown group has nothing started: -1 everywhere, no error (as Kafka)
        assert starts(describe_offsets(c, {"orders": [0]}, group_id="nobody")) == {("orders", 0): -1}


def test_describe_all_offsets_lists_assigned_partitions_not_started(cluster: MockCluster) -> None:
    with coordinator(cluster) as c:
        join(c, "m-1", ["other"])
        assert starts(describe_offsets(c, None)) == {("other", 0): -1}


# -- DeleteShareGroupOffsets -------------------------------------------------------------------------
def test_delete_offsets(cluster: MockCluster) -> None:
    with coordinator(cluster) as c:
        assert delete_offsets(c, ["orders"]).error_code == ErrorCode.GROUP_ID_NOT_FOUND
        join(c, "m-1", ["orders"])
        busy = delete_offsets(c, ["orders"])
        assert (busy.error_code, busy.error_message) == (ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
        heartbeat(c, "m-1", -1)
        assert alter(c, {"orders": {0: 0, 1: 0}}).error_code == 0
        resp = delete_offsets(c, ["nope", "other", "orders"])
        assert resp.error_code == 0
        assert [(t.topic_name, t.error_code, t.error_message) for t in resp.responses] == [
            ("orders", 0, None),
            ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."),
            ("other", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete.")]
        assert resp.responses[0].topic_id == cluster.state.topics["orders"].topic_id
        assert starts(describe_offsets(c, {"orders": [0, 1]})) == {("orders", 0): -1, ("orders", 1): -1}


# -- ListGroups, DeleteGroups, DescribeGroups --------------------------------------------------------
def list_groups(c: WireClient, states: list[str] | None = None, types: list[str] | None = None) -> dict[str, Any]:
    m = api.request_module(16)
    resp = c.call(16, 5, m.ListGroupsRequest(states_filter=states or [], types_filter=types or []))
    assert resp.error_code == 0
    return {g.group_id: g for g in resp.groups}


def test_list_groups_shows_share_groups(cluster: MockCluster) -> None:
    with coordinator(cluster) as c:
        join(c, "m-1", ["orders"])
        listed = list_groups(c)[GROUP]
        assert (listed.protocol_type, listed.group_type, listed.group_state) == ("share", "share", "Stable")
        assert GROUP in list_groups(c, types=["share"]) and GROUP in list_groups(c, types=["Share"])
        assert GROUP not in list_groups(c, types=["classic", "consumer"])
        assert GROUP in list_groups(c, states=["stable"]) and GROUP not in list_groups(c, states=["Empty"])
        heartbeat(c, "m-1", -1)
        assert list_groups(c, states=["Empty"])[GROUP].group_state == "Empty"
    with elsewhere(cluster) as c:
        assert GROUP not in list_groups(c)  # each broker lists the groups it coordinates


def test_delete_groups_deletes_an_empty_share_group(cluster: MockCluster) -> None:
    m = api.request_module(42)
    with coordinator(cluster) as c:
        join(c, "m-1", ["orders"])
        [busy] = c.call(42, 2, m.DeleteGroupsRequest(groups_names=[GROUP])).results
        assert busy.error_code == ErrorCode.NON_EMPTY_GROUP
        heartbeat(c, "m-1", -1)
        assert alter(c, {"orders": {0: 0}}).error_code == 0
        [done] = c.call(42, 2, m.DeleteGroupsRequest(groups_names=[GROUP])).results
        assert done.error_code == 0
        assert GROUP not in list_groups(c)
        assert describe(c, GROUP)[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
        [again] = c.call(42, 2, m.DeleteGroupsRequest(groups_names=[GROUP])).results
        assert again.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        # a new group of the same name starts with nothing
        empty_group(c)
        assert starts(describe_offsets(c, {"orders": [0]})) == {("orders", 0): -1}


def test_describe_groups_of_a_share_group(cluster: MockCluster) -> None:
    m = api.request_module(15)
    with coordinator(cluster) as c:
        join(c, "m-1", ["orders"])
        [v6] = c.call(15, 6, m.DescribeGroupsRequest(groups=[GROUP])).groups
        [v5] = c.call(15, 5, m.DescribeGroupsRequest(groups=[GROUP])).groups
    assert (v6.error_code, v6.error_message, v6.group_state) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                                 f"Group {GROUP} is not a classic group.", "Dead")
    assert (v5.error_code, v5.group_state, v5.members) == (0, "Dead", [])


# -- fault rules and the journal -----------------------------------------------------------------------
def test_fault_rules_and_the_journal_name_the_topics(cluster: MockCluster) -> None:
    with coordinator(cluster) as c:
        empty_group(c)
        rule = cluster.add_fault(api="AlterShareGroupOffsets", topic="other", error="COORDINATOR_NOT_AVAILABLE")
        assert alter(c, {"orders": {0: 1}}).error_code == 0  # not about "other": untouched
        assert alter(c, {"other": {0: 1}}).error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert rule.hits == 1
        describe_offsets(c, {"orders": [0, 1]})
        delete_offsets(c, ["orders"])
    about = {e.api_key: e.to_dict()["about"] for e in cluster.journal.entries() if e.api_key in (90, 91, 92)}
    assert about[90] == {"topics": {"orders": [0, 1]}, "groups": [GROUP]}
    assert about[91]["topics"] == {"other": [0]} and about[91]["groups"] == [GROUP]
    assert about[92] == {"topics": {"orders": []}, "groups": [GROUP]}


def test_share_groups_off(cluster: MockCluster) -> None:
    m = api.request_module(57)
    with WireClient(cluster.brokers[0].port) as c:
        resp = c.call(57, 1, m.UpdateFeaturesRequest(timeout_ms=5000, feature_updates=[
            m.FeatureUpdateKey(feature="share.version", max_version_level=0, upgrade_type=2)]))
        assert resp.error_code == 0, resp
    with coordinator(cluster) as c:
        assert describe(c, GROUP)[0].error_code == ErrorCode.UNSUPPORTED_VERSION
        assert describe_offsets(c, {"orders": [0]}).error_code == ErrorCode.UNSUPPORTED_VERSION
        assert alter(c, {"orders": {0: 1}}).error_code == ErrorCode.UNSUPPORTED_VERSION
        assert delete_offsets(c, ["orders"]).error_code == ErrorCode.UNSUPPORTED_VERSION


def test_lag_counts_records_delivered_past_the_start(cluster: MockCluster) -> None:
    """Lag = high watermark - SPSO - records at or past SPSO already acknowledged (Kafka's formula)."""
    produce(cluster, "other", 0, 5)
    plog = cluster.state.topics["other"].partitions[0]
    topic_id = cluster.state.topics["other"].topic_id
    fetch, ack = api.request_module(78), api.request_module(79)
    with coordinator(cluster) as c, WireClient(cluster.brokers[plog.leader].port) as leader:
        empty_group(c, ["other"])
        assert alter(c, {"other": {0: 0}}).error_code == 0
        join(c, "m-1", ["other"])
        got = leader.call(78, 1, fetch.ShareFetchRequest(
            group_id=GROUP, member_id="m-1", share_session_epoch=0, max_wait_ms=1000, max_records=10, batch_size=10,
            topics=[fetch.FetchTopic(topic_id=topic_id, partitions=[fetch.FetchPartition(partition_index=0)])]))
        assert got.error_code == 0
        acquired = [(r.first_offset, r.last_offset) for r in got.responses[0].partitions[0].acquired_records]
        assert acquired and acquired[0][0] == 0 and acquired[-1][1] == 4

        def accept(first: int, last: int, epoch: int) -> None:
            resp = leader.call(79, 1, ack.ShareAcknowledgeRequest(
                group_id=GROUP, member_id="m-1", share_session_epoch=epoch, topics=[ack.AcknowledgeTopic(
                    topic_id=topic_id, partitions=[ack.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                        ack.AcknowledgementBatch(first_offset=first, last_offset=last, acknowledge_types=[1])])])]))
            assert resp.error_code == 0 and resp.responses[0].partitions[0].error_code == 0

        accept(3, 4, 1)  # done past SPSO 0: 2 records
        [part] = describe_offsets(c, {"other": [0]}).topics[0].partitions
        assert (part.start_offset, part.lag) == (0, 5 - 0 - 2)
        accept(0, 1, 2)  # SPSO moves to 2 and offsets 3-4 stay done past it
        [part] = describe_offsets(c, {"other": [0]}).topics[0].partitions
        assert (part.start_offset, part.lag) == (2, 5 - 2 - 2)
    # ShareFetch and ShareAcknowledge name their topics (by id) in the journal, for fault rules too
    about = {e.api_key: e.to_dict()["about"] for e in cluster.journal.entries() if e.api_key in (78, 79)}
    named = {"topics": {"other": [0]}, "groups": [GROUP]}
    assert about == {78: named, 79: named}


def test_acls() -> None:
    """GROUP and TOPIC authorization where Kafka checks it: DESCRIBE for the describes, READ (group and
    topics) to alter offsets, DELETE on the group and READ on the topics to delete them."""
    authorizer = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    me = "User:ANONYMOUS"
    with MockCluster(brokers=1, topics={"orders": 1, "secret": 1}, config=authorizer) as cluster, \
            WireClient(cluster.brokers[0].port) as c:
        assert describe(c, GROUP)[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert describe_offsets(c, {"orders": [0]}).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert alter(c, {"orders": {0: 0}}).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert delete_offsets(c, ["orders"]).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        cluster.add_acl("GROUP", GROUP, me, "READ")  # READ implies DESCRIBE
        cluster.add_acl("TOPIC", "orders", me, "READ")
        empty_group(c)
        [group] = describe(c, GROUP, operations=True)
        assert group.error_code == 0 and group.authorized_operations not in (0, NO_OPERATIONS)
        resp = alter(c, {"orders": {0: 0}, "secret": {0: 0}})
        assert [(t.topic_name, t.partitions[0].error_code) for t in resp.responses] == [
            ("orders", 0), ("secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
        offsets = describe_offsets(c, {"orders": [0], "secret": [0]})
        errors = {t.topic_name: (t.partitions[0].error_code, t.partitions[0].start_offset) for t in offsets.topics}
        assert errors == {"orders": (0, 0), "secret": (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)}
        assert starts(describe_offsets(c, None)) == {("orders", 0): 0}
        assert delete_offsets(c, ["orders"]).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        cluster.add_acl("GROUP", GROUP, me, "DELETE")
        deleted = delete_offsets(c, ["secret", "orders"])
        assert [(t.topic_name, t.error_code) for t in deleted.responses] == [
            ("secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED), ("orders", 0)]
        # a member assigned a topic the principal may not DESCRIBE hides the group's members, as Kafka
        heartbeat(c, "m-2", 0, ["secret"])
        [hidden] = describe(c, GROUP)
        assert (hidden.error_code, hidden.members) == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, [])
        assert hidden.error_message == "The group has described topic(s) that the client is not authorized to describe."
