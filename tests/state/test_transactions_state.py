"""Pure state tests: a partition's producer state (sequences, window, transactions, aborted index) and
the transaction coordinator's state machine on a manual clock."""

from __future__ import annotations

import pytest

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state.clock import ManualClock
from mockbroker.state.config import BrokerConfig
from mockbroker.state.groups import GroupCoordinator
from mockbroker.state.producer_state import INT32_MAX, PartitionProducers, last_sequence
from mockbroker.state.transactions import MAX_EPOCH, TransactionCoordinator


def code_of(fn, *args) -> int:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaError) as exc:
        fn(*args)
    return exc.value.code


def test_last_sequence_wraps() -> None:
    assert last_sequence(0, 1) == 0
    assert last_sequence(10, 5) == 14
    assert last_sequence(INT32_MAX, 1) == INT32_MAX
    assert last_sequence(INT32_MAX, 2) == 0
    assert last_sequence(INT32_MAX - 1, 5) == 2


def test_producer_sequences() -> None:
    p = PartitionProducers()
    assert code_of(p.check_append, 7, 0, 3, False, "t-0") == ErrorCode.UNKNOWN_PRODUCER_ID
    p.check_append(7, 0, 0, False, "t-0")
    p.record_append(7, 0, 0, 4, 100, 104, 1, 1, False)
    assert p.duplicate_of(7, 0, 0, 4).first_offset == 100
    assert p.duplicate_of(7, 0, 0, 3) is None and p.duplicate_of(7, 1, 0, 4) is None
    p.check_append(7, 0, 5, False, "t-0")
    assert code_of(p.check_append, 7, 0, 6, False, "t-0") == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert code_of(p.check_append, 7, 1, 5, False, "t-0") == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    p.check_append(7, 1, 0, False, "t-0")
    p.record_append(7, 1, 0, 0, 105, 105, 1, 1, False)
    assert p.duplicate_of(7, 0, 0, 4) is None  # a new epoch forgets the old batches
    assert code_of(p.check_append, 7, 0, 1, False, "t-0") == ErrorCode.INVALID_PRODUCER_EPOCH


def test_transactions_bound_the_last_stable_offset_and_fill_the_aborted_index() -> None:
    p = PartitionProducers()
    p.record_append(1, 0, 0, 1, 0, 1, 1, 1, True)
    p.record_append(2, 0, 0, 0, 2, 2, 1, 1, True)
    assert p.last_stable_offset(3) == 0
    assert code_of(p.check_append, 1, 0, 2, False, "t-0") == ErrorCode.INVALID_TXN_STATE
    p.record_marker(1, 0, 0, False, 3, 1)
    assert p.last_stable_offset(4) == 2
    p.record_marker(2, 0, 0, True, 4, 1)
    assert p.last_stable_offset(5) == 5
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in p.aborted] == [(1, 0, 3)]
    assert p.aborted_between(0, 1) and p.aborted_between(3, 10) and not p.aborted_between(4, 10)
    p.truncate_before(4)
    assert p.aborted == []


def test_expiry_keeps_open_transactions() -> None:
    p = PartitionProducers()
    p.record_append(1, 0, 0, 0, 0, 0, 1, 1000, False)
    p.record_append(2, 0, 0, 0, 1, 1, 1, 1000, True)
    assert p.expire(5000, 1000) == [1]
    assert list(p.entries) == [2]


class Markers:
    def __init__(self) -> None:
        self.written: list[tuple[int, int, bool, list, list]] = []

    def __call__(self, pid: int, epoch: int, commit: bool, partitions, groups) -> None:  # type: ignore[no-untyped-def]
        self.written.append((pid, epoch, commit, list(partitions), list(groups)))


def coordinator(**config: object) -> tuple[TransactionCoordinator, ManualClock, Markers]:
    clock = ManualClock(1000)
    ids = iter(range(1000, 2000))
    markers = Markers()
    return TransactionCoordinator(clock, lambda: next(ids), BrokerConfig(config), markers), clock, markers


def test_commit_writes_markers_to_every_partition_and_group() -> None:
    tc, _clock, markers = coordinator()
    pid, epoch = tc.init_producer("a", 60000)
    tc.add_partitions("a", pid, epoch, [("t", 1), ("t", 0)])
    tc.add_offsets("a", pid, epoch, "g")
    tc.check_offsets("a", pid, epoch, "g")
    assert tc.end("a", pid, epoch, commit=True) == (pid, epoch)
    assert markers.written == [(pid, epoch, True, [("t", 0), ("t", 1)], ["g"])]
    assert tc.describe("a").state == "CompleteCommit"
    assert code_of(tc.check_offsets, "a", pid, epoch, "g") == ErrorCode.INVALID_TXN_STATE
    assert code_of(tc.describe, "nope") == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND


def test_timeout_aborts_with_a_bumped_epoch_and_expiry_forgets() -> None:
    tc, clock, markers = coordinator(**{"transactional.id.expiration.ms": 10_000})
    pid, epoch = tc.init_producer("a", 500)
    tc.add_partitions("a", pid, epoch, [("t", 0)])
    clock.advance(400)
    tc.tick()
    assert tc.describe("a").state == "Ongoing"
    clock.advance(200)
    tc.tick()
    assert markers.written == [(pid, epoch + 1, False, [("t", 0)], [])]
    assert code_of(tc.end, "a", pid, epoch, True) == ErrorCode.PRODUCER_FENCED
    clock.advance(10_000)
    tc.tick()
    assert tc.listed() == []
    assert code_of(tc.add_partitions, "a", pid, epoch, [("t", 0)]) == ErrorCode.INVALID_PRODUCER_ID_MAPPING


def test_exhausted_epoch_gets_a_new_producer_id() -> None:
    tc, _clock, _markers = coordinator()
    pid, _ = tc.init_producer("a", 60000)
    tc.describe("a").epoch = MAX_EPOCH
    new_pid, epoch = tc.init_producer("a", 60000, pid, MAX_EPOCH)
    assert (new_pid != pid, epoch) == (True, 0)
    assert tc.init_producer("a", 60000, pid, MAX_EPOCH) == (new_pid, 0)  # a retry from the old id


def test_delayed_markers_hold_the_prepare_state() -> None:
    tc, clock, markers = coordinator(**{"mock.transaction.marker.delay.ms": 300})
    pid, epoch = tc.init_producer("a", 60000)
    tc.add_partitions("a", pid, epoch, [("t", 0)])
    tc.end("a", pid, epoch, commit=False)
    assert tc.describe("a").state == "PrepareAbort" and markers.written == []
    assert code_of(tc.init_producer, "a", 60000) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert code_of(tc.end, "a", pid, epoch, True) == ErrorCode.INVALID_TXN_STATE
    clock.advance(300)
    tc.tick()
    assert tc.describe("a").state == "CompleteAbort" and len(markers.written) == 1


def test_group_offsets_committed_in_a_transaction() -> None:
    groups = GroupCoordinator(ManualClock(0))
    groups.txn_commit("g", 5, "", -1, [("t", 0, 42, -1, None)])
    assert groups.committed("g", "t", 0)[0] == -1 and groups.unstable("g", "t", 0)
    groups.complete_txn("g", 5, commit=True)
    assert groups.committed("g", "t", 0)[0] == 42 and not groups.unstable("g", "t", 0)
    groups.txn_commit("g", 5, "", -1, [("t", 0, 50, -1, None)])
    groups.complete_txn("g", 5, commit=False)
    assert groups.committed("g", "t", 0)[0] == 42
    assert code_of(groups.txn_commit, "g", 5, "nobody", 3, []) == ErrorCode.UNKNOWN_MEMBER_ID
