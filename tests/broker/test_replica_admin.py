"""Replica and leader admin over a raw socket with the codec: ElectLeaders (v0-2),
AlterPartitionReassignments (v0-1), ListPartitionReassignments (v0) and DescribeTopicPartitions (v0)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from mockbroker.protocol.runtime import ZERO_UUID

from .wire import WireClient

EL, APR, LPR, DTP, MD = (api.request_module(k) for k in (43, 45, 46, 75, 3))


@pytest.fixture
def rf3() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as c:
        c.create_topic("r", 3, 3)
        yield c


def state(cluster: MockCluster, topic: str, index: int) -> tuple[int, list[int], int]:
    """(leader, replicas, leader epoch) of a partition."""
    def read() -> tuple[int, list[int], int]:
        p = cluster.state.topics[topic].partitions[index]
        return p.leader, list(p.replicas), p.leader_epoch
    return cluster.call(read)


def metadata_partition(c: WireClient, topic: str, index: int) -> Any:
    resp = c.call(3, 12, MD.MetadataRequest(topics=[MD.MetadataRequestTopic(name=topic)]))
    return next(p for p in resp.topics[0].partitions if p.partition_index == index)


# -- ElectLeaders ----------------------------------------------------------------------------------
def elect(c: WireClient, version: int, kind: int, wanted: dict[str, list[int]] | None) -> tuple[int, dict]:
    tps = None if wanted is None else [EL.TopicPartitions(topic=t, partitions=p) for t, p in wanted.items()]
    resp = c.call(43, version, EL.ElectLeadersRequest(election_type=kind, topic_partitions=tps, timeout_ms=1000))
    results = {(r.topic, p.partition_id): p.error_code
               for r in resp.replica_election_results for p in r.partition_result}
    return (resp.error_code if version >= 1 else 0), results


@pytest.mark.parametrize("version", [0, 1, 2])
def test_preferred_election_moves_the_leader_back_and_bumps_the_epoch(rf3: MockCluster, version: int) -> None:
    leader, replicas, epoch = state(rf3, "r", 0)
    assert leader == replicas[0]
    other = replicas[1]
    rf3.move_leader("r", 0, other)
    with WireClient(rf3.server(replicas[2]).port) as c:
        code, results = elect(c, version, 0, {"r": [0, 1, 9], "nope": [0]})
        assert code == 0
        assert results == {("r", 0): 0, ("r", 1): ErrorCode.ELECTION_NOT_NEEDED,
                           ("r", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                           ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        after = state(rf3, "r", 0)
        assert after[0] == replicas[0] and after[2] == epoch + 2  # the move and the election each bump it
        md = metadata_partition(c, "r", 0)
        assert (md.leader_id, md.leader_epoch) == (replicas[0], epoch + 2)


def test_preferred_leader_down_and_null_topics(rf3: MockCluster) -> None:
    preferred = state(rf3, "r", 0)[1][0]
    rf3.broker_down(preferred)
    live = next(b for b in (0, 1, 2) if b != preferred)
    with WireClient(rf3.server(live).port) as c:
        assert elect(c, 2, 0, {"r": [0]}) == (0, {("r", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE})
        # null = every partition; those that need no election are left out
        code, results = elect(c, 2, 0, None)
        moved = {("r", i) for i in range(3) if state(rf3, "r", i)[1][0] == preferred}
        assert code == 0 and results == {tp: ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE for tp in moved}
    rf3.broker_up(preferred)
    with WireClient(rf3.server(live).port) as c:
        assert elect(c, 1, 0, None) == (0, {tp: 0 for tp in moved})
        assert all(state(rf3, "r", i)[0] == state(rf3, "r", i)[1][0] for i in range(3))
        assert elect(c, 1, 0, None)[1] == {}


def test_unclean_election(rf3: MockCluster) -> None:
    with WireClient(rf3.server(0).port) as c:
        # the mock always keeps a live leader: nothing to elect
        assert elect(c, 1, 1, {"r": [0]})[1] == {("r", 0): ErrorCode.ELECTION_NOT_NEEDED}
        _leader, replicas, epoch = state(rf3, "r", 0)
        # a partition whose leader is gone (state set directly: the mock never leaves one leaderless)
        rf3.call(lambda: setattr(rf3.state.topics["r"].partitions[0], "leader", 99))
        assert elect(c, 2, 1, {"r": [0]})[1] == {("r", 0): 0}
        assert state(rf3, "r", 0)[0] == replicas[0] and state(rf3, "r", 0)[2] == epoch + 1

        def orphan() -> None:
            p = rf3.state.topics["r"].partitions[1]
            p.leader, p.replicas = 99, [98, 99]
        rf3.call(orphan)
        assert elect(c, 2, 1, {"r": [1]})[1] == {("r", 1): ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE}
        code, results = elect(c, 2, 5, {"r": [0]})
        assert (code, results) == (ErrorCode.INVALID_REQUEST, {})


# -- AlterPartitionReassignments / ListPartitionReassignments ----------------------------------------
def reassign(c: WireClient, version: int, moves: dict[tuple[str, int], list[int] | None],
             allow_rf_change: bool = True) -> dict[tuple[str, int], int]:
    topics: dict[str, list[Any]] = {}
    for (t, i), replicas in moves.items():
        topics.setdefault(t, []).append(APR.ReassignablePartition(partition_index=i, replicas=replicas))
    resp = c.call(45, version, APR.AlterPartitionReassignmentsRequest(
        timeout_ms=1000, allow_replication_factor_change=allow_rf_change,
        topics=[APR.ReassignableTopic(name=t, partitions=p) for t, p in topics.items()]))
    assert resp.error_code == 0
    if version >= 1:
        assert resp.allow_replication_factor_change is allow_rf_change
    return {(r.name, p.partition_index): p.error_code for r in resp.responses for p in r.partitions}


def listing(c: WireClient, wanted: dict[str, list[int]] | None = None) -> dict[tuple[str, int], tuple]:
    topics = None if wanted is None else [LPR.ListPartitionReassignmentsTopics(name=t, partition_indexes=p)
                                          for t, p in wanted.items()]
    resp = c.call(46, 0, LPR.ListPartitionReassignmentsRequest(timeout_ms=1000, topics=topics))
    assert resp.error_code == 0
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in resp.topics for p in t.partitions}


@pytest.mark.parametrize("version", [0, 1])
def test_instant_reassignment_moves_replicas_and_leader(cluster: MockCluster, version: int) -> None:
    leader, _replicas, epoch = state(cluster, "orders", 0)  # replication factor 1
    target = [b for b in (0, 1, 2) if b != leader][:2]
    with WireClient(cluster.server(0).port) as c:
        assert reassign(c, version, {("orders", 0): target}) == {("orders", 0): 0}
        now = state(cluster, "orders", 0)
        assert now[1] == target and now[0] == target[0] and now[2] > epoch
        md = metadata_partition(c, "orders", 0)
        assert (md.leader_id, list(md.replica_nodes), md.leader_epoch) == (target[0], target, now[2])
        assert listing(c) == {}
        assert reassign(c, version, {("orders", 0): None}) == {("orders", 0): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS}


def test_reassignment_errors(cluster: MockCluster) -> None:
    with WireClient(cluster.server(1).port) as c:
        assert reassign(c, 1, {("orders", 1): [], ("orders", 2): [0, 0], ("orders", 3): [0, 7],
                               ("orders", 60): [0], ("nope", 0): [0]}) == {
            ("orders", 1): ErrorCode.INVALID_REPLICA_ASSIGNMENT, ("orders", 2): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            ("orders", 3): ErrorCode.INVALID_REPLICA_ASSIGNMENT, ("orders", 60): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        before = state(cluster, "orders", 4)
        assert reassign(c, 1, {("orders", 4): [0, 1]}, allow_rf_change=False) == {
            ("orders", 4): ErrorCode.INVALID_REPLICATION_FACTOR}
        assert state(cluster, "orders", 4) == before
        assert reassign(c, 1, {("orders", 4): [2]}, allow_rf_change=False) == {("orders", 4): 0}


def test_delayed_reassignment_is_listed_until_the_tick_completes_it() -> None:
    with MockCluster(brokers=3, config={"mock.reassignment.delay.ms": 600}) as cluster:
        cluster.create_topic("d", 2, 2)
        leader, replicas, epoch = state(cluster, "d", 0)
        new = next(b for b in (0, 1, 2) if b not in replicas)
        target = [new, replicas[1]]  # the leader replicas[0] leaves
        with WireClient(cluster.server(new).port) as c:
            assert reassign(c, 1, {("d", 0): target, ("d", 1): None}) == {
                ("d", 0): 0, ("d", 1): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS}
            assert listing(c) == {("d", 0): ([*target, replicas[0]], [new], [replicas[0]])}
            assert listing(c, {"d": [1], "nope": [0]}) == {}
            assert listing(c, {"d": [0]}) == listing(c)
            during = state(cluster, "d", 0)
            assert during[0] == leader and during[1] == [*target, replicas[0]] and during[2] == epoch + 1
            assert list(metadata_partition(c, "d", 0).replica_nodes) == [*target, replicas[0]]
            deadline = time.monotonic() + 10
            while listing(c) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert listing(c) == {}
            done = state(cluster, "d", 0)
            assert done[1] == target and done[0] == new and done[2] == epoch + 2
            # a second one, cancelled: the replicas go back, the added one leaves
            original = state(cluster, "d", 1)[1]
            extra = next(b for b in (0, 1, 2) if b not in original)
            assert reassign(c, 0, {("d", 1): [extra, original[0]]}) == {("d", 1): 0}
            assert listing(c) == {("d", 1): ([extra, original[0], original[1]], [extra], [original[1]])}
            assert reassign(c, 0, {("d", 1): None}) == {("d", 1): 0}
            assert listing(c) == {} and state(cluster, "d", 1)[1] == original


def test_reassignment_to_a_down_broker_waits_for_it(rf3: MockCluster) -> None:
    rf3.create_topic("w", 1, 1)
    leader = state(rf3, "w", 0)[0]
    down = next(b for b in (0, 1, 2) if b != leader)
    rf3.broker_down(down)
    with WireClient(rf3.server(leader).port) as c:
        assert reassign(c, 1, {("w", 0): [down]}) == {("w", 0): 0}  # registered, though down
        time.sleep(0.3)
        assert listing(c) == {("w", 0): ([down, leader], [down], [leader])}
        rf3.broker_up(down)
        deadline = time.monotonic() + 10
        while listing(c) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert listing(c) == {} and state(rf3, "w", 0)[:2] == (down, [down])


# -- DescribeTopicPartitions -----------------------------------------------------------------------
def dtp(c: WireClient, names: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None) -> Any:
    cur = None if cursor is None else DTP.Cursor(topic_name=cursor[0], partition_index=cursor[1])
    return c.call(75, 0, DTP.DescribeTopicPartitionsRequest(
        topics=[DTP.TopicRequest(name=n) for n in names], response_partition_limit=limit, cursor=cur))


def test_describe_topic_partitions_pages_with_a_cursor(cluster: MockCluster) -> None:
    cluster.create_topic("alpha", 2, 2)
    with WireClient(cluster.server(0).port) as c:
        md = c.call(3, 12, MD.MetadataRequest(topics=None))
        expected = {t.name: [(p.partition_index, p.leader_id, p.leader_epoch, list(p.replica_nodes),
                              list(p.isr_nodes), list(p.offline_replicas)) for p in t.partitions] for t in md.topics}
        ids = {t.name: t.topic_id for t in md.topics}
        seen: dict[str, list] = {}
        cursor = None
        pages = 0
        while True:
            resp = dtp(c, [], limit=3, cursor=cursor)
            pages += 1
            for t in resp.topics:
                assert t.error_code == 0 and t.topic_id == ids[t.name] and t.topic_authorized_operations == 3576
                for p in t.partitions:
                    assert p.eligible_leader_replicas == [] and p.last_known_elr == [] and p.error_code == 0
                seen.setdefault(t.name, []).extend(
                    (p.partition_index, p.leader_id, p.leader_epoch, list(p.replica_nodes), list(p.isr_nodes),
                     list(p.offline_replicas)) for p in t.partitions)
            if resp.next_cursor is None:
                break
            cursor = (resp.next_cursor.topic_name, resp.next_cursor.partition_index)
        assert seen == expected and pages == 3  # alpha 0-1 + orders 0, orders 1-3, orders 4-5
        first = dtp(c, ["orders", "alpha"], limit=2)
        assert [t.name for t in first.topics] == ["alpha"]  # name order; the limit ends exactly at alpha's end
        assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("orders", 0)


def test_describe_topic_partitions_errors(cluster: MockCluster) -> None:
    with WireClient(cluster.server(2).port) as c:
        resp = dtp(c, ["orders", "missing", "bad name!"], limit=0)  # a limit below 1 counts as 1
        by_name = {t.name: t for t in resp.topics}
        assert by_name["missing"].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert by_name["missing"].topic_id == ZERO_UUID
        assert by_name["bad name!"].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert len(by_name["orders"].partitions) == 1
        assert (resp.next_cursor.topic_name, resp.next_cursor.partition_index) == ("orders", 1)
        refused = dtp(c, ["orders"], cursor=("other", 0))
        assert [(t.name, t.error_code) for t in refused.topics] == [("orders", ErrorCode.INVALID_REQUEST)]
        refused = dtp(c, ["orders"], cursor=("orders", -1))
        assert [(t.name, t.error_code) for t in refused.topics] == [("orders", ErrorCode.INVALID_REQUEST)]
        tail = dtp(c, ["orders"], cursor=("orders", 4))
        assert [p.partition_index for p in tail.topics[0].partitions] == [4, 5] and tail.next_cursor is None


def test_a_deleted_topic_takes_its_reassignment_with_it() -> None:
    with MockCluster(brokers=2, config={"mock.reassignment.delay.ms": 60_000}) as cluster:
        cluster.create_topic("gone", 1, 1)
        other = 1 - state(cluster, "gone", 0)[0]
        with WireClient(cluster.server(0).port) as c:
            assert reassign(c, 1, {("gone", 0): [other]}) == {("gone", 0): 0}
            assert list(listing(c)) == [("gone", 0)]
            dt = api.request_module(20)
            resp = c.call(20, 4, dt.DeleteTopicsRequest(topic_names=["gone"], timeout_ms=1000))
            assert resp.responses[0].error_code == 0
            cluster.create_topic("gone", 1, 1)  # same name, new topic id: nothing in progress
            assert listing(c) == {}
            time.sleep(0.25)  # a tick or two: the stale entry is dropped without harm
            assert cluster.call(lambda: len(cluster.state.reassignments.ongoing)) == 0
