"""Share-partitions (KIP-932): the in-flight records of one share group on one topic partition.

A share-partition has a start offset (SPSO: every record below it is done) and an end offset (SPEO: one
past the last offset acquired so far).  Records in [SPSO, SPEO) are in flight, each AVAILABLE, ACQUIRED
(by one member, until a lock deadline on the cluster clock), ACKNOWLEDGED or ARCHIVED, with a delivery
count.  This follows Kafka's ``SharePartition`` (core/.../server/share) record by record rather than in
cached batches: acquisition (redeliveries first, then new records, whole log batches), acknowledgement
(ACCEPT, RELEASE, REJECT, GAP; a partition's batches all apply or none do), lock expiry, the release of a
departing member's records, and the start offset moving past a prefix of finished records.

Plain synchronous state: time comes in as ``now_ms`` arguments (the cluster clock, read by the caller);
configuration (lock duration, delivery count limit, record lock limit) comes in as arguments.  No wire
types here: the ShareFetch / ShareAcknowledge handlers call this API.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from mockbroker.errors import ErrorCode, KafkaError

__all__ = [
    "ACCEPT",
    "GAP",
    "REJECT",
    "RELEASE",
    "InFlightRecord",
    "RecordState",
    "SharePartition",
    "SharePartitionKey",
    "SharePartitions",
    "initial_start_offset",
    "parse_iso_duration_ms",
]

# AcknowledgeType ids on the wire (ShareFetch / ShareAcknowledge AcknowledgeTypes)
GAP, ACCEPT, RELEASE, REJECT = 0, 1, 2, 3
DEFAULT_MAX_RECORD_LOCKS = 2000  # group.share.partition.max.record.locks (Kafka 4.1+)

SharePartitionKey = tuple[str, str, int]  # (group id, topic, partition)
AcquiredRange = tuple[int, int, int]  # (first offset, last offset, delivery count)
AckBatch = tuple[int, int, Sequence[int]]  # (first offset, last offset, acknowledge types)


class RecordState(IntEnum):
    """Kafka's RecordState ids (as persisted by the share coordinator)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


_DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


@dataclass
class InFlightRecord:
    state: RecordState
    delivery_count: int = 0
    member_id: str | None = None
    lock_deadline_ms: int | None = None

    def unlock(self, state: RecordState) -> None:
        self.state = state
        self.member_id = None
        self.lock_deadline_ms = None


def _returned_state(record: InFlightRecord, delivery_limit: int) -> RecordState:
    """Where an acquired record goes when released or its lock expires: AVAILABLE, or ARCHIVED once it
    has been delivered ``delivery_limit`` times (Kafka's tryUpdateState)."""
    return RecordState.ARCHIVED if record.delivery_count >= delivery_limit else RecordState.AVAILABLE


class SharePartition:
    """The in-flight records of one (group, topic, partition); see the module docstring."""

    def __init__(self, start_offset: int) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset
        # offset -> record, kept in offset order (new offsets are only ever appended past end_offset).
        # An offset in [start_offset, end_offset) without an entry never held a record (a hole between
        # log batches) and counts as done.
        self._records: dict[int, InFlightRecord] = {}

    # ---- views -------------------------------------------------------------------------------------

    def record(self, offset: int) -> InFlightRecord | None:
        return self._records.get(offset)

    def in_flight_count(self) -> int:
        """Records in [SPSO, SPEO) not yet done (AVAILABLE or ACQUIRED)."""
        return sum(1 for r in self._records.values() if r.state not in _DONE)

    def next_fetch_offset(self) -> int:
        """Where the next acquisition starts reading the log: the first AVAILABLE record, else SPEO."""
        for offset, rec in self._records.items():
            if rec.state is RecordState.AVAILABLE:
                return offset
        return self.end_offset

    def has_available(self) -> bool:
        """Whether released / expired records wait for redelivery (an acquire needs no new data)."""
        return any(r.state is RecordState.AVAILABLE for r in self._records.values())

    def can_acquire_new(self, max_record_locks: int = DEFAULT_MAX_RECORD_LOCKS) -> bool:
        """Whether records past SPEO may be acquired: the SPSO..SPEO window is under the record lock
        limit (Kafka's canAcquireRecords)."""
        return self.end_offset - self.start_offset < max_record_locks

    def next_deadline(self) -> int | None:
        deadlines = [r.lock_deadline_ms for r in self._records.values() if r.lock_deadline_ms is not None]
        return min(deadlines) if deadlines else None

    def state(self) -> dict[str, Any]:
        """Plain data for DescribeShareGroupOffsets (``start_offset``), the control API and tests."""
        records = [
            {"offset": offset, "state": rec.state.name, "delivery_count": rec.delivery_count,
             "member_id": rec.member_id, "lock_deadline_ms": rec.lock_deadline_ms}
            for offset, rec in self._records.items()
        ]
        return {"start_offset": self.start_offset, "end_offset": self.end_offset, "records": records}

    # ---- acquisition -------------------------------------------------------------------------------

    def acquire(
        self,
        member_id: str,
        now_ms: int,
        lock_ms: int,
        max_records: int,
        delivery_limit: int,
        fetchable: Iterable[tuple[int, int]],
        *,
        max_record_locks: int = DEFAULT_MAX_RECORD_LOCKS,
        skip: Iterable[tuple[int, int]] = (),
    ) -> list[AcquiredRange]:
        """Acquire records for ``member_id`` until ``now_ms + lock_ms``; return the acquired ranges.

        ``fetchable``: the (first, last) offsets of the log's data batches from SPSO up to the high
        watermark (or LSO).  ``skip``: offset ranges never to deliver (aborted transactions, control
        batches); those found AVAILABLE or new are archived instead.  Locks past their deadline are
        expired first.  The log batches are walked in offset order: AVAILABLE in-flight records
        (redeliveries) and records past SPEO are acquired batch by batch, and the walk stops after the
        batch that reaches ``max_records`` -- a soft limit, as in Kafka, which acquires up to the end of
        the batch holding the last wanted offset.  Records past SPEO are only taken while the SPSO..SPEO
        window is under ``max_record_locks``.
        """
        self.expire_locks(now_ms, delivery_limit)
        if max_records <= 0:
            return []
        skipper = _OffsetRanges(skip)
        deadline = now_ms + lock_ms
        acquired: list[int] = []
        for first, last in sorted(fetchable):
            if len(acquired) >= max_records:
                break
            first = max(first, self.start_offset)
            if last >= self.end_offset and not self.can_acquire_new(max_record_locks):
                if first >= self.end_offset:
                    break  # only new records from here on, and the window is full
                last = self.end_offset - 1  # redeliveries in this batch are still wanted
            for offset in range(first, last + 1):
                if self._acquire_one(offset, member_id, deadline, skipper):
                    acquired.append(offset)
        self._advance_start()
        return self._ranges(acquired)

    def _acquire_one(self, offset: int, member_id: str, deadline: int, skipper: _OffsetRanges) -> bool:
        if offset >= self.end_offset:
            if self.start_offset == self.end_offset:
                self.start_offset = offset  # nothing in flight: the records before it are gone
            rec = InFlightRecord(RecordState.AVAILABLE)
            self._records[offset] = rec
            self.end_offset = offset + 1
        else:
            found = self._records.get(offset)
            if found is None or found.state is not RecordState.AVAILABLE:
                return False
            rec = found
        if offset in skipper:
            rec.unlock(RecordState.ARCHIVED)
            return False
        rec.state = RecordState.ACQUIRED
        rec.delivery_count += 1
        rec.member_id = member_id
        rec.lock_deadline_ms = deadline
        return True

    def _ranges(self, offsets: list[int]) -> list[AcquiredRange]:
        """Consecutive offsets with the same delivery count, as (first, last, delivery count)."""
        ranges: list[AcquiredRange] = []
        for offset in offsets:
            count = self._records[offset].delivery_count
            if ranges and ranges[-1][1] == offset - 1 and ranges[-1][2] == count:
                ranges[-1] = (ranges[-1][0], offset, count)
            else:
                ranges.append((offset, offset, count))
        return ranges

    # ---- acknowledgement ---------------------------------------------------------------------------

    def acknowledge(
        self, member_id: str, batches: Sequence[AckBatch], delivery_limit: int, now_ms: int | None = None
    ) -> bool:
        """Apply a member's acknowledgements for this partition; True when records became AVAILABLE.

        Each batch is (first, last, types): one type for the whole range or one per offset; GAP and REJECT
        archive, ACCEPT acknowledges, RELEASE makes the record AVAILABLE again (ARCHIVED once delivered
        ``delivery_limit`` times).  As Kafka, the partition's batches are all checked before any applies
        (Kafka rolls back every transition when one fails): malformed batches -> INVALID_REQUEST;
        an offset not ACQUIRED by this member -> INVALID_RECORD_STATE; offsets below SPSO are skipped;
        offsets past SPEO -> INVALID_REQUEST (INVALID_RECORD_STATE when nothing is in flight at all).
        With ``now_ms``, locks past their deadline expire first.
        """
        if now_ms is not None:
            self.expire_locks(now_ms, delivery_limit)
        _check_batch_shapes(batches)
        changes: dict[int, tuple[InFlightRecord, int]] = {}
        for first, last, types in batches:
            if last < self.start_offset:
                continue  # already done, as Kafka skips them
            self._check_within_end(first, last)
            for offset in range(max(first, self.start_offset), last + 1):
                ack_type = types[0] if len(types) == 1 else types[offset - first]
                rec = self._records.get(offset)
                if self._never_delivered(rec) and ack_type == GAP:
                    continue
                owned = rec is not None and rec.state is RecordState.ACQUIRED and rec.member_id == member_id
                if rec is None or not owned or offset in changes:
                    raise KafkaError(
                        ErrorCode.INVALID_RECORD_STATE,
                        f"offset {offset} is not acquired by member {member_id}",
                    )
                changes[offset] = (rec, ack_type)
        released = False
        for rec, ack_type in changes.values():
            if ack_type == ACCEPT:
                rec.unlock(RecordState.ACKNOWLEDGED)
            elif ack_type == RELEASE:
                rec.unlock(_returned_state(rec, delivery_limit))
                released = released or rec.state is RecordState.AVAILABLE
            else:
                rec.unlock(RecordState.ARCHIVED)
        self._advance_start()
        return released

    @staticmethod
    def _never_delivered(rec: InFlightRecord | None) -> bool:
        """A hole between batches, or a record archived unseen (aborted, control): a GAP for it is fine."""
        return rec is None or (rec.state is RecordState.ARCHIVED and rec.delivery_count == 0)

    def _check_within_end(self, first: int, last: int) -> None:
        if last < self.end_offset:
            return
        if not self._records:  # Kafka: an empty cache finds no batch at all
            raise KafkaError(ErrorCode.INVALID_RECORD_STATE, "no records are in flight for the batch")
        raise KafkaError(
            ErrorCode.INVALID_REQUEST,
            f"batch {first}-{last} is past the acquired records (end offset {self.end_offset})",
        )

    # ---- returning acquired records ----------------------------------------------------------------

    def expire_locks(self, now_ms: int, delivery_limit: int) -> bool:
        """Acquired records whose lock deadline has passed go back (AVAILABLE, or ARCHIVED at the
        delivery limit or below SPSO); True when any record was returned."""
        expired = False
        for offset, rec in self._records.items():
            deadline = rec.lock_deadline_ms
            if rec.state is RecordState.ACQUIRED and deadline is not None and deadline <= now_ms:
                self._return(offset, rec, delivery_limit)
                expired = True
        if expired:
            self._advance_start()
        return expired

    def release_member(self, member_id: str, delivery_limit: int) -> bool:
        """A member left or closed its share session: its acquired records go back as on lock expiry
        (Kafka's releaseAcquiredRecords).  True when any record was returned."""
        released = False
        for offset, rec in self._records.items():
            if rec.state is RecordState.ACQUIRED and rec.member_id == member_id:
                self._return(offset, rec, delivery_limit)
                released = True
        if released:
            self._advance_start()
        return released

    def _return(self, offset: int, rec: InFlightRecord, delivery_limit: int) -> None:
        if offset < self.start_offset:
            rec.unlock(RecordState.ARCHIVED)
        else:
            rec.unlock(_returned_state(rec, delivery_limit))

    # ---- start offset ------------------------------------------------------------------------------

    def reset_start_offset(self, offset: int) -> None:
        """AlterShareGroupOffsets (the caller checks the group has no members): a fresh start at ``offset``."""
        self._records.clear()
        self.start_offset = offset
        self.end_offset = offset

    def advance_to_log_start(self, log_start_offset: int) -> None:
        """The log's start moved past SPSO (retention, DeleteRecords): records below it that wait for
        redelivery are archived and SPSO moves up; acquired ones stay until acknowledged or returned
        (then archived), as Kafka's updateCacheAndOffsets."""
        if log_start_offset <= self.start_offset:
            return
        for offset, rec in self._records.items():
            if offset >= log_start_offset:
                break
            if rec.state is RecordState.AVAILABLE:
                rec.unlock(RecordState.ARCHIVED)
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset)
        self._advance_start()

    def _advance_start(self) -> None:
        """Move SPSO past the finished prefix (ACKNOWLEDGED / ARCHIVED records and holes) and drop the
        finished records below it (Kafka's maybeUpdateCachedStateAndOffsets)."""
        self.start_offset = next(
            (o for o, r in self._records.items() if o >= self.start_offset and r.state not in _DONE),
            self.end_offset,
        )
        for offset, rec in self._records.items():
            if offset >= self.start_offset:
                return
            if rec.state in _DONE:
                break
        else:
            return
        self._records = {o: r for o, r in self._records.items() if o >= self.start_offset or r.state not in _DONE}


def _check_batch_shapes(batches: Sequence[AckBatch]) -> None:
    """KafkaApis.validateAcknowledgementBatches: each batch well formed, batches in offset order."""
    previous_last = -1
    for first, last, types in batches:
        if first > last:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"batch first offset {first} is past its last {last}")
        if first < previous_last:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"batch {first}-{last} overlaps the one before it")
        if not types:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"batch {first}-{last} has no acknowledge types")
        if len(types) > 1 and len(types) != last - first + 1:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"batch {first}-{last} has {len(types)} acknowledge types")
        if any(t not in (GAP, ACCEPT, RELEASE, REJECT) for t in types):
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"invalid acknowledge type in {list(types)}")
        previous_last = last


class _OffsetRanges:
    """Membership in a set of (first, last) offset ranges."""

    def __init__(self, ranges: Iterable[tuple[int, int]]) -> None:
        merged: list[list[int]] = []
        for first, last in sorted(ranges):
            if merged and first <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], last)
            else:
                merged.append([first, last])
        self._firsts = [m[0] for m in merged]
        self._lasts = [m[1] for m in merged]

    def __contains__(self, offset: object) -> bool:
        if not isinstance(offset, int):
            return False
        index = bisect_right(self._firsts, offset) - 1
        return index >= 0 and offset <= self._lasts[index]


# ---- the start offset of a new share-partition -------------------------------------------------------

_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_iso_duration_ms(text: str) -> int:
    """An ISO-8601 duration as java.time.Duration.parse reads it (PnDTnHnMn.nS) in milliseconds;
    ValueError when it is not one."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or not any(match.group(i) for i in range(2, 6)) or text.strip().upper().endswith("T"):
        raise ValueError(f"not an ISO-8601 duration: {text!r}")
    sign, days, hours, minutes, seconds, fraction = match.groups()
    millis = (int(days or 0) * 86_400 + int(hours or 0) * 3_600 + int(minutes or 0) * 60) * 1000
    whole_seconds = int(seconds or 0)
    fraction_ms = int((fraction or "").ljust(3, "0")[:3] or 0)
    millis += whole_seconds * 1000 + (-fraction_ms if (seconds or "").startswith("-") else fraction_ms)
    return -millis if sign == "-" else millis


def initial_start_offset(
    reset: str,
    *,
    log_start_offset: int,
    high_watermark: int,
    now_ms: int,
    offset_for_timestamp: Callable[[int], int | None],
) -> int:
    """SPSO of a share-partition used for the first time, from the group's ``share.auto.offset.reset``:
    ``latest`` (the high watermark), ``earliest`` (the log start) or ``by_duration:<ISO-8601 duration>``
    (the first offset whose timestamp is at least now - duration; ``offset_for_timestamp`` answers that,
    None when no record is that recent, which starts at the high watermark)."""
    value = reset.strip().lower()
    if value == "earliest":
        return log_start_offset
    if value.startswith("by_duration:"):
        duration_ms = parse_iso_duration_ms(value[len("by_duration:"):])
        found = offset_for_timestamp(now_ms - duration_ms)
        return high_watermark if found is None else max(found, log_start_offset)
    return high_watermark


# ---- every share-partition of the cluster ------------------------------------------------------------


class SharePartitions:
    """The share-partitions of every share group, keyed by (group id, topic, partition)."""

    def __init__(self) -> None:
        self._partitions: dict[SharePartitionKey, SharePartition] = {}

    def get(self, key: SharePartitionKey) -> SharePartition | None:
        return self._partitions.get(key)

    def get_or_create(self, key: SharePartitionKey, start_offset_fn: Callable[[], int]) -> SharePartition:
        """The share-partition for ``key``; ``start_offset_fn`` gives SPSO when it is new."""
        partition = self._partitions.get(key)
        if partition is None:
            partition = self._partitions[key] = SharePartition(start_offset_fn())
        return partition

    def restore(self, key: SharePartitionKey, partition: SharePartition) -> None:
        """Put back a share-partition read from ``__share_group_state`` (state/share_state_log.py)."""
        self._partitions[key] = partition

    def set_start_offset(self, key: SharePartitionKey, offset: int) -> SharePartition:
        """AlterShareGroupOffsets for one partition (created when new)."""
        partition = self.get_or_create(key, lambda: offset)
        partition.reset_start_offset(offset)
        return partition

    def forget(self, key: SharePartitionKey) -> None:
        self._partitions.pop(key, None)

    def forget_topic(self, topic: str) -> None:
        for key in [k for k in self._partitions if k[1] == topic]:
            del self._partitions[key]

    def forget_group(self, group_id: str) -> None:
        for key in [k for k in self._partitions if k[0] == group_id]:
            del self._partitions[key]

    def all_for_group(self, group_id: str) -> dict[tuple[str, int], SharePartition]:
        return {(k[1], k[2]): p for k, p in sorted(self._partitions.items()) if k[0] == group_id}

    def keys(self) -> list[SharePartitionKey]:
        return sorted(self._partitions)

    def next_deadline(self) -> int | None:
        deadlines = [d for p in self._partitions.values() if (d := p.next_deadline()) is not None]
        return min(deadlines) if deadlines else None

    def expire(self, now_ms: int, delivery_limit: int | Callable[[str], int]) -> list[SharePartitionKey]:
        """Expire the locks past ``now_ms`` everywhere; the keys where records went back.
        ``delivery_limit`` is one number or a function of the group id (a group config)."""
        changed: list[SharePartitionKey] = []
        for key, partition in self._partitions.items():
            if partition.next_deadline() is None:
                continue
            limit = delivery_limit(key[0]) if callable(delivery_limit) else delivery_limit
            if partition.expire_locks(now_ms, limit):
                changed.append(key)
        return changed

    def release_member(
        self, group_id: str, member_id: str, delivery_limit: int, topics: Iterable[tuple[str, int]] | None = None
    ) -> list[SharePartitionKey]:
        """Return a member's acquired records in its group (or only on ``topics``' partitions); the keys
        where records went back."""
        wanted = None if topics is None else set(topics)
        changed: list[SharePartitionKey] = []
        for key, partition in self._partitions.items():
            if key[0] != group_id or (wanted is not None and (key[1], key[2]) not in wanted):
                continue
            if partition.release_member(member_id, delivery_limit):
                changed.append(key)
        return changed
