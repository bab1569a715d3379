"""Transactional group offsets and their ``__consumer_offsets`` partitions, over the wire:
WriteTxnMarkers to a ``__consumer_offsets`` partition settles the TxnOffsetCommit offsets of the groups
kept there (COMMIT: visible to OffsetFetch; ABORT: dropped), and DescribeTransactions lists a group
added with AddOffsetsToTxn as its ``__consumer_offsets`` partition, as Kafka does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from mockbroker.state.group_offsets import offsets_partition
from mockbroker.state.groups import GroupCoordinator
from mockbroker.state.internal_topics import CONSUMER_OFFSETS, ensure

from .wire import WireClient

R = {key: api.request_module(key) for key in (9, 22, 25, 27, 28, 65)}


@pytest.fixture
def one() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, topics={"t": 1}, config={"offsets.topic.num.partitions": 7}) as c:
        yield c


def init_pid(c: WireClient, txn_id: str) -> int:
    m = R[22]
    got = c.call(22, 4, m.InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60000,
                                                producer_id=-1, producer_epoch=-1))
    assert got.error_code == 0
    return int(got.producer_id)


def txn_commit(c: WireClient, txn_id: str, pid: int, group: str, offset: int) -> None:
    m25, m28 = R[25], R[28]
    assert c.call(25, 2, m25.AddOffsetsToTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=0,
                                                    group_id=group)).error_code == 0
    body = m28.TxnOffsetCommitRequest(transactional_id=txn_id, group_id=group, producer_id=pid, producer_epoch=0,
                                      topics=[m28.TxnOffsetCommitRequestTopic(name="t", partitions=[
                                          m28.TxnOffsetCommitRequestPartition(
                                              partition_index=0, committed_offset=offset, committed_metadata="")])])
    assert c.call(28, 3, body).topics[0].partitions[0].error_code == 0


def fetched(c: WireClient, group: str) -> tuple[int, int]:
    """(error, committed offset) of t-0 for ``group``, asking for stable offsets."""
    m = R[9]
    body = m.OffsetFetchRequest(groups=[m.OffsetFetchRequestGroup(group_id=group, topics=[
        m.OffsetFetchRequestTopics(name="t", partition_indexes=[0])])], require_stable=True)
    p = c.call(9, 8, body).groups[0].topics[0].partitions[0]
    return p.error_code, p.committed_offset


def marker(c: WireClient, pid: int, commit: bool, partition: int) -> int:
    m = R[27]
    body = m.WriteTxnMarkersRequest(markers=[m.WritableTxnMarker(
        producer_id=pid, producer_epoch=0, transaction_result=commit, coordinator_epoch=0,
        topics=[m.WritableTxnMarkerTopic(name=CONSUMER_OFFSETS, partition_indexes=[partition])])])
    return int(c.call(27, 1, body).markers[0].topics[0].partitions[0].error_code)


def described(c: WireClient, txn_id: str) -> Any:
    return c.call(65, 0, R[65].DescribeTransactionsRequest(transactional_ids=[txn_id])).transaction_states[0]


def test_offsets_partition_is_javas_hash() -> None:
    # Java: "g".hashCode() == 103; "my-group".hashCode() == -1906497762 (Utils.abs: 1906497762)
    assert offsets_partition("g", 50) == 3 and offsets_partition("my-group", 50) == 12


def test_a_commit_marker_on_the_groups_partition_makes_its_offsets_visible(one: MockCluster) -> None:
    one.call(ensure, one.state, CONSUMER_OFFSETS)
    home = offsets_partition("g", 7)
    with WireClient(one.brokers[0].port) as c:
        pid = init_pid(c, "tx")
        txn_commit(c, "tx", pid, "g", 5)
        assert fetched(c, "g") == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
        assert marker(c, pid, True, (home + 1) % 7) == 0  # another partition: not this group's
        assert fetched(c, "g") == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
        assert marker(c, pid, True, home) == 0
        assert fetched(c, "g") == (0, 5)


def test_an_abort_marker_on_the_groups_partition_drops_its_offsets(one: MockCluster) -> None:
    one.call(ensure, one.state, CONSUMER_OFFSETS)
    with WireClient(one.brokers[0].port) as c:
        pid = init_pid(c, "tx")
        txn_commit(c, "tx", pid, "g", 5)
        assert marker(c, pid, False, offsets_partition("g", 7)) == 0
        assert fetched(c, "g") == (0, -1)  # stable again, and nothing committed


def test_a_marker_to_a_missing_offsets_partition_is_refused(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        pid = init_pid(c, "tx")
        txn_commit(c, "tx", pid, "g", 5)
        one.call(ensure, one.state, CONSUMER_OFFSETS)
        assert marker(c, pid, True, 99) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert fetched(c, "g") == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)


def test_describe_transactions_lists_the_groups_offsets_partitions(one: MockCluster) -> None:
    groups = ["g", "h", "orders"]
    with WireClient(one.brokers[0].port) as c:
        pid = init_pid(c, "tx")
        for group in groups:
            txn_commit(c, "tx", pid, group, 1)
        state = described(c, "tx")
        want = sorted({offsets_partition(g, 7) for g in groups})  # before the topic exists: the config's 7
        assert (state.error_code, state.transaction_state) == (0, "Ongoing")
        assert [(t.topic, t.partitions) for t in state.topics] == [(CONSUMER_OFFSETS, want)]
        R24 = api.request_module(24)
        c.call(24, 3, R24.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id="tx", v3_and_below_producer_id=pid, v3_and_below_producer_epoch=0,
            v3_and_below_topics=[R24.AddPartitionsToTxnTopic(name="t", partitions=[0])]))
        assert [(t.topic, t.partitions) for t in described(c, "tx").topics] == [(CONSUMER_OFFSETS, want), ("t", [0])]
        m26 = api.request_module(26)
        assert c.call(26, 3, m26.EndTxnRequest(transactional_id="tx", producer_id=pid, producer_epoch=0,
                                               committed=True)).error_code == 0
        done = described(c, "tx")
        assert (done.transaction_state, done.topics) == ("CompleteCommit", [])
        assert fetched(c, "h") == (0, 1)


def test_state_settles_only_the_producers_groups_in_that_partition() -> None:
    groups = GroupCoordinator(clock=None)
    same = [g for g in ("a", "b", "c", "d", "e", "f", "g", "h") if offsets_partition(g, 7) == offsets_partition("a", 7)]
    other = next(g for g in ("x", "y", "z", "w") if offsets_partition(g, 7) != offsets_partition("a", 7))
    for group in [*same, other]:
        groups.txn_commit(group, 1, "", -1, [("t", 0, 5, -1, "")])
    groups.txn_commit("a", 2, "", -1, [("t", 1, 9, -1, "")])  # another producer's, in the same group
    assert groups.complete_txn_in_partition(1, offsets_partition("a", 7), 7, True) == sorted(same)
    assert [groups.committed(g, "t", 0)[0] for g in same] == [5] * len(same)
    assert groups.committed(other, "t", 0)[0] == -1 and groups.unstable(other, "t", 0)
    assert groups.unstable("a", "t", 1)  # producer 2's offsets still wait
    assert groups.complete_txn_in_partition(2, offsets_partition("a", 7), 7, False) == ["a"]
    assert groups.committed("a", "t", 1)[0] == -1 and not groups.unstable("a", "t", 1)
    assert groups.complete_txn_in_partition(1, offsets_partition("a", 7), 7, True) == []  # nothing left
