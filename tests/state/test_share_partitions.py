"""Share-partition state (KIP-932): acquisition, acknowledgement, lock expiry, delivery limits, the start
offset, and the container of every share-partition, on hand-moved clock numbers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state.share_partitions import (
    ACCEPT,
    GAP,
    REJECT,
    RELEASE,
    RecordState,
    SharePartition,
    SharePartitions,
    initial_start_offset,
    parse_iso_duration_ms,
)

NOW = 1_700_000_000_000
LOCK = 30_000
LIMIT = 5
A, B = "member-a", "member-b"


def batches(first: int, last: int, size: int = 1) -> list[tuple[int, int]]:
    """Log batches of ``size`` records covering first..last."""
    return [(o, min(o + size - 1, last)) for o in range(first, last + 1, size)]


def acquire(sp: SharePartition, member: str = A, now: int = NOW, max_records: int = 500,
            fetchable: list[tuple[int, int]] | None = None, limit: int = LIMIT,
            **kw: Any) -> list[tuple[int, int, int]]:
    return sp.acquire(member, now, LOCK, max_records, limit, batches(0, 9) if fetchable is None else fetchable, **kw)


def states(sp: SharePartition) -> dict[int, tuple[str, int]]:
    return {r["offset"]: (r["state"], r["delivery_count"]) for r in sp.state()["records"]}


def refused(fn: Callable[[], Any]) -> int:
    with pytest.raises(KafkaError) as exc:
        fn()
    return exc.value.code


def test_acquire_then_accept_all_moves_start_offset() -> None:
    sp = SharePartition(0)
    assert acquire(sp) == [(0, 9, 1)]
    assert (sp.start_offset, sp.end_offset, sp.in_flight_count()) == (0, 10, 10)
    assert sp.acknowledge(A, [(0, 9, [ACCEPT])], LIMIT) is False
    assert (sp.start_offset, sp.end_offset) == (10, 10)
    assert sp.state()["records"] == []
    assert acquire(sp) == []


def test_partial_accept_moves_start_past_the_prefix_only() -> None:
    sp = SharePartition(0)
    acquire(sp)
    sp.acknowledge(A, [(0, 2, [ACCEPT]), (5, 6, [REJECT])], LIMIT)
    assert sp.start_offset == 3
    assert states(sp)[5] == ("ARCHIVED", 1) and states(sp)[3] == ("ACQUIRED", 1)
    sp.acknowledge(A, [(3, 4, [ACCEPT])], LIMIT)
    assert sp.start_offset == 7


def test_release_redelivers_with_delivery_count_two() -> None:
    sp = SharePartition(0)
    acquire(sp)
    assert sp.acknowledge(A, [(0, 9, [ACCEPT, RELEASE] + [ACCEPT] * 8)], LIMIT) is True
    assert sp.start_offset == 1 and sp.has_available() and sp.next_fetch_offset() == 1
    assert acquire(sp, member=B) == [(1, 1, 2)]
    sp.acknowledge(B, [(1, 1, [ACCEPT])], LIMIT)
    assert (sp.start_offset, sp.end_offset) == (10, 10)


def test_redeliveries_come_before_new_records() -> None:
    sp = SharePartition(0)
    acquire(sp, fetchable=batches(0, 4))
    sp.acknowledge(A, [(3, 3, [RELEASE])], LIMIT)
    got = acquire(sp, member=B, fetchable=batches(0, 7), max_records=3)
    assert got == [(3, 3, 2), (5, 6, 1)]
    assert sp.end_offset == 7


def test_reject_is_never_delivered_again() -> None:
    sp = SharePartition(0)
    acquire(sp, fetchable=batches(0, 2))
    sp.acknowledge(A, [(0, 2, [ACCEPT, REJECT, RELEASE])], LIMIT)
    assert acquire(sp, member=B, fetchable=batches(0, 2)) == [(2, 2, 2)]
    sp.acknowledge(B, [(2, 2, [ACCEPT])], LIMIT)
    assert acquire(sp, fetchable=batches(0, 2)) == []
    assert sp.start_offset == 3


def test_lock_expiry_makes_records_available() -> None:
    sp = SharePartition(0)
    acquire(sp, fetchable=batches(0, 3))
    assert sp.next_deadline() == NOW + LOCK
    assert sp.expire_locks(NOW + LOCK - 1, LIMIT) is False
    assert sp.expire_locks(NOW + LOCK, LIMIT) is True
    assert set(states(sp).values()) == {("AVAILABLE", 1)}
    assert sp.next_deadline() is None
    # the member that lost its lock may not acknowledge any more
    assert refused(lambda: sp.acknowledge(A, [(0, 3, [ACCEPT])], LIMIT)) == ErrorCode.INVALID_RECORD_STATE
    assert acquire(sp, member=B, fetchable=batches(0, 3), now=NOW + LOCK) == [(0, 3, 2)]


def test_acquire_and_acknowledge_expire_locks_on_their_clock() -> None:
    sp = SharePartition(0)
    acquire(sp, fetchable=batches(0, 1))
    later = NOW + LOCK + 1
    assert refused(lambda: sp.acknowledge(A, [(0, 1, [ACCEPT])], LIMIT, now_ms=later)) == ErrorCode.INVALID_RECORD_STATE
    assert acquire(sp, member=B, fetchable=batches(0, 1), now=later) == [(0, 1, 2)]


def test_past_delivery_limit_is_archived() -> None:
    sp = SharePartition(0)
    now = NOW
    for delivery in range(1, 3):
        assert acquire(sp, fetchable=batches(0, 0), now=now, limit=2) == [(0, 0, delivery)]
        now += LOCK
        sp.expire_locks(now, 2)
    assert acquire(sp, fetchable=batches(0, 0), now=now, limit=2) == []
    assert (sp.start_offset, sp.end_offset) == (1, 1)


def test_release_at_delivery_limit_archives() -> None:
    sp = SharePartition(0)
    acquire(sp, fetchable=batches(0, 1), limit=2)
    sp.acknowledge(A, [(0, 1, [RELEASE])], 2)
    acquire(sp, fetchable=batches(0, 1), limit=2)
    assert sp.acknowledge(A, [(0, 1, [RELEASE, ACCEPT])], 2) is False
    assert (sp.start_offset, sp.state()["records"]) == (2, [])


def test_two_members_acquire_disjoint_records() -> None:
    sp = SharePartition(0)
    got_a = acquire(sp, member=A, max_records=4)
    got_b = acquire(sp, member=B, max_records=4)
    assert got_a == [(0, 3, 1)] and got_b == [(4, 7, 1)]
    assert refused(lambda: sp.acknowledge(B, [(0, 3, [ACCEPT])], LIMIT)) == ErrorCode.INVALID_RECORD_STATE
    sp.acknowledge(A, [(0, 3, [ACCEPT])], LIMIT)
    sp.acknowledge(B, [(4, 7, [ACCEPT])], LIMIT)
    assert sp.start_offset == 8


def test_a_refused_request_changes_nothing() -> None:
    sp = SharePartition(0)
    acquire(sp, member=A, max_records=4)
    acquire(sp, member=B, max_records=4)
    before = sp.state()
    # the first batch is A's and fine, the second is B's: nothing applies
    assert refused(lambda: sp.acknowledge(A, [(0, 1, [ACCEPT]), (4, 4, [ACCEPT])], LIMIT)) == \
        ErrorCode.INVALID_RECORD_STATE
    assert sp.state() == before


def test_malformed_acknowledgements_are_invalid_requests() -> None:
    sp = SharePartition(0)
    acquire(sp)
    for bad in ([(3, 2, [ACCEPT])], [(0, 4, [ACCEPT]), (2, 3, [ACCEPT])], [(0, 1, [])],
                [(0, 2, [ACCEPT, ACCEPT])], [(0, 0, [4])]):
        assert refused(lambda bad=bad: sp.acknowledge(A, bad, LIMIT)) == ErrorCode.INVALID_REQUEST
    assert sp.in_flight_count() == 10


def test_acknowledging_outside_the_in_flight_records() -> None:
    sp = SharePartition(0)
    assert refused(lambda: sp.acknowledge(A, [(0, 0, [ACCEPT])], LIMIT)) == ErrorCode.INVALID_RECORD_STATE
    acquire(sp, fetchable=batches(0, 4))
    assert refused(lambda: sp.acknowledge(A, [(3, 7, [ACCEPT])], LIMIT)) == ErrorCode.INVALID_REQUEST
    sp.acknowledge(A, [(0, 1, [ACCEPT])], LIMIT)
    # below the start offset: already done, skipped as Kafka does
    sp.acknowledge(A, [(0, 1, [ACCEPT]), (2, 2, [ACCEPT])], LIMIT)
    assert sp.start_offset == 3
    # twice the same offset in one request
    assert refused(lambda: sp.acknowledge(A, [(3, 3, [ACCEPT]), (3, 3, [ACCEPT])], LIMIT)) == \
        ErrorCode.INVALID_RECORD_STATE


def test_gap_acknowledgements_archive() -> None:
    sp = SharePartition(0)
    # a compacted batch 0..4 with offset 2 missing is delivered whole; the client answers GAP for it
    acquire(sp, fetchable=[(0, 4)])
    sp.acknowledge(A, [(0, 4, [ACCEPT, ACCEPT, GAP, ACCEPT, ACCEPT])], LIMIT)
    assert sp.start_offset == 5
    # a hole between batches is never delivered; a GAP for it is accepted, anything else is not
    assert acquire(sp, fetchable=[(5, 6), (9, 9)]) == [(5, 6, 1), (9, 9, 1)]
    assert refused(lambda: sp.acknowledge(A, [(5, 9, [ACCEPT])], LIMIT)) == ErrorCode.INVALID_RECORD_STATE
    sp.acknowledge(A, [(5, 9, [ACCEPT, ACCEPT, GAP, GAP, ACCEPT])], LIMIT)
    assert (sp.start_offset, sp.end_offset) == (10, 10)


def test_max_records_is_soft_and_ends_on_a_batch_boundary() -> None:
    sp = SharePartition(0)
    assert acquire(sp, fetchable=batches(0, 19, size=4), max_records=5) == [(0, 7, 1)]
    assert acquire(sp, fetchable=batches(0, 19, size=4), max_records=1) == [(8, 11, 1)]
    assert acquire(sp, fetchable=batches(0, 19, size=4), max_records=0) == []
    assert sp.end_offset == 12


def test_record_lock_limit_stops_new_records_not_redeliveries() -> None:
    sp = SharePartition(0)
    assert acquire(sp, fetchable=batches(0, 19), max_record_locks=6) == [(0, 5, 1)]
    assert sp.can_acquire_new(6) is False
    assert acquire(sp, member=B, fetchable=batches(0, 19), max_record_locks=6) == []
    sp.acknowledge(A, [(1, 1, [RELEASE])], LIMIT)
    assert acquire(sp, member=B, fetchable=batches(0, 19), max_record_locks=6) == [(1, 1, 2)]
    # accepting the head frees the window
    sp.acknowledge(A, [(0, 0, [ACCEPT]), (2, 3, [ACCEPT])], LIMIT)
    assert sp.start_offset == 1
    assert acquire(sp, fetchable=batches(0, 19), max_record_locks=6) == [(6, 6, 1)]
    # whole batches may overshoot the limit, as max_records does
    sp2 = SharePartition(0)
    assert acquire(sp2, fetchable=batches(0, 19, size=4), max_record_locks=6) == [(0, 7, 1)]


def test_skipped_offsets_are_never_delivered() -> None:
    sp = SharePartition(0)
    # 3..4 an aborted transaction, 5 its abort marker
    got = acquire(sp, fetchable=batches(0, 7), skip=[(3, 4), (5, 5)])
    assert got == [(0, 2, 1), (6, 7, 1)]
    assert states(sp)[4] == ("ARCHIVED", 0)
    sp.acknowledge(A, [(0, 2, [ACCEPT]), (3, 5, [GAP]), (6, 7, [ACCEPT])], LIMIT)
    assert (sp.start_offset, sp.end_offset) == (8, 8)


def test_release_member_returns_only_its_records() -> None:
    sp = SharePartition(0)
    acquire(sp, member=A, max_records=3)
    acquire(sp, member=B, max_records=3)
    assert sp.release_member(A, LIMIT) is True
    assert sp.release_member(A, LIMIT) is False
    assert [states(sp)[o][0] for o in range(6)] == ["AVAILABLE"] * 3 + ["ACQUIRED"] * 3
    assert acquire(sp, member=B, max_records=3) == [(0, 2, 2)]
    # at the delivery limit a released record is archived
    sp3 = SharePartition(0)
    acquire(sp3, fetchable=batches(0, 0), limit=1)
    sp3.release_member(A, 1)
    assert (sp3.start_offset, sp3.in_flight_count()) == (1, 0)


def test_start_offset_jumps_over_missing_log_prefix() -> None:
    sp = SharePartition(0)
    assert acquire(sp, fetchable=batches(100, 104)) == [(100, 104, 1)]
    assert (sp.start_offset, sp.end_offset) == (100, 105)


def test_log_start_moving_archives_waiting_records() -> None:
    sp = SharePartition(0)
    acquire(sp, fetchable=batches(0, 5))
    sp.acknowledge(A, [(0, 2, [RELEASE])], LIMIT)
    sp.advance_to_log_start(4)
    assert sp.start_offset == 4
    assert [o for o, (s, _) in states(sp).items() if s == "ACQUIRED"] == [3, 4, 5]
    # 3 is below the start: returned means archived
    sp.expire_locks(NOW + LOCK, LIMIT)
    assert sorted(states(sp)) == [4, 5] and states(sp)[4] == ("AVAILABLE", 1)


def test_reset_start_offset_drops_in_flight_state() -> None:
    sp = SharePartition(0)
    acquire(sp)
    sp.reset_start_offset(42)
    assert sp.state() == {"start_offset": 42, "end_offset": 42, "records": []}
    assert acquire(sp, fetchable=batches(40, 44)) == [(42, 44, 1)]


def test_state_view() -> None:
    sp = SharePartition(7)
    acquire(sp, fetchable=batches(7, 7))
    assert sp.state() == {
        "start_offset": 7,
        "end_offset": 8,
        "records": [{"offset": 7, "state": "ACQUIRED", "delivery_count": 1, "member_id": A,
                     "lock_deadline_ms": NOW + LOCK}],
    }
    rec = sp.record(7)
    assert rec is not None and rec.state is RecordState.ACQUIRED and sp.record(8) is None


def test_initial_start_offset_latest_earliest_by_duration() -> None:
    asked: list[int] = []

    def by_time(ts: int) -> int | None:
        asked.append(ts)
        return 30 if ts <= NOW else None

    def start(reset: str) -> int:
        return initial_start_offset(reset, log_start_offset=10, high_watermark=50, now_ms=NOW,
                                    offset_for_timestamp=by_time)

    assert start("latest") == 50
    assert start("earliest") == 10
    assert start("by_duration:PT1H") == 30 and asked == [NOW - 3_600_000]
    assert start("by_duration:PT0S") == 30
    assert parse_iso_duration_ms("P1DT2H3M4.5S") == 93_784_500
    assert parse_iso_duration_ms("pt0.25s") == 250
    for bad in ("P", "PT", "P1DT", "1H", "PT1X"):
        with pytest.raises(ValueError):
            parse_iso_duration_ms(bad)


def test_container() -> None:
    parts = SharePartitions()
    calls: list[str] = []

    def start() -> int:
        calls.append("x")
        return 0

    sp = parts.get_or_create(("g", "t", 0), start)
    assert parts.get_or_create(("g", "t", 0), start) is sp and calls == ["x"]
    other = parts.get_or_create(("g", "u", 1), start)
    parts.get_or_create(("h", "t", 0), start)
    assert set(parts.all_for_group("g")) == {("t", 0), ("u", 1)}
    assert parts.next_deadline() is None

    acquire(sp, fetchable=batches(0, 1))
    acquire(other, fetchable=batches(0, 1), now=NOW + 10)
    assert parts.next_deadline() == NOW + LOCK
    assert parts.expire(NOW + LOCK, lambda group: LIMIT) == [("g", "t", 0)]
    assert parts.next_deadline() == NOW + LOCK + 10
    assert parts.release_member("g", A, LIMIT) == [("g", "u", 1)]

    parts.set_start_offset(("g", "t", 0), 5)
    assert sp.start_offset == 5
    parts.forget_topic("u")
    assert set(parts.all_for_group("g")) == {("t", 0)}
    parts.forget_group("g")
    assert parts.keys() == [("h", "t", 0)]
