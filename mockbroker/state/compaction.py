"""Log compaction (``cleanup.policy=compact``): keep the last record per key.

The cleanable part of a partition is every segment below the active one (state/segments.py: the
active segment rolls at ``segment.bytes`` or ``segment.ms`` after its first record, as in Kafka, so
with Kafka's defaults a test's records all stay in it and nothing is cleaned), below the last stable
offset (open transactions are never cleaned) and at least ``min.compaction.lag.ms`` old (by the
segment's newest batch), stopping at the first segment that is not. Within it:

- a record stays if no later record in the cleanable part has the same key;
- records of aborted transactions go (as Kafka's cleaner drops them);
- a tombstone (null value) stays until its timestamp (the batch's, for LogAppendTime) is older
  than ``delete.retention.ms``, then goes (Kafka counts from the cleaning pass that first saw it;
  the mock from the record);
- control batches (transaction markers) stay;
- a rewritten batch keeps its offsets (base offset, last offset delta), timestamps, producer id,
  epoch, base sequence, transactional flag, leader epoch and codec; records keep their deltas;
- a batch whose records all go stays as an empty batch when it is the last batch of its producer
  in the log, so producer state survives (as Kafka keeps it); otherwise it goes.

When a pass cleans, as Kafka's cleaner chooses a log (LogCleanerManager.grabFilthiestCompactedLog):
the cleanable part splits into the clean head (below ``first_dirty``, where the last cleaning pass
ended: Kafka's cleaner checkpoint) and the dirty rest; the pass cleans when the dirty bytes are more
than ``min.cleanable.dirty.ratio`` (broker ``log.cleaner.min.cleanable.ratio``, 0.5) of the cleanable
part's bytes, or when a dirty batch is older than ``max.compaction.lag.ms`` (broker
``log.cleaner.max.compaction.lag.ms``, never by default; the mock reads the batch's max timestamp where
Kafka reads a segment's first one), or, with neither, when a kept tombstone's ``delete.retention.ms``
has run out (Kafka 3.1+ cleans such a log too).  The active segment stays uncleaned whatever the lag:
Kafka rolls it past max.compaction.lag.ms (which caps a compacted topic's segment.ms) only on the next
append.  Called without those arguments (tests), every cleanable batch counts as dirty and a pass
always cleans.

The log start offset does not move. ``compact_log`` is callable directly (tests); the cluster runs
it from ``ClusterState.tick`` at most every ``log.cleaner.backoff.ms``, and MockCluster.run_log_cleaner
runs one pass at once, choosing logs the same way (see state/retention.py).
"""

from __future__ import annotations

from typing import Any

from mockbroker import records as rec
from mockbroker.plain import Slotted
from mockbroker.records.record import encode_record
from mockbroker.state.log import PartitionLog, StoredBatch
from mockbroker.state.segments import segment_ranges

NEVER = 2**63 - 1


class CompactionResult(Slotted):
    __slots__ = ("clean_end", "dropped_batches", "removed_records", "retry_at_ms", "rewritten_batches",
                 "tombstones_due_ms")

    def __init__(self, removed_records: int = 0, rewritten_batches: int = 0, dropped_batches: int = 0,
                 retry_at_ms: int = NEVER) -> None:
        self.removed_records = removed_records
        self.rewritten_batches = rewritten_batches
        self.dropped_batches = dropped_batches
        # when a tombstone, a too-young batch or (max.compaction.lag.ms) a dirty one becomes cleanable
        self.retry_at_ms = retry_at_ms
        self.tombstones_due_ms = NEVER  # when the first tombstone kept by this pass may go
        self.clean_end = -1  # where this pass's cleaning ended (the next pass's first dirty offset); -1: none


def _dirty_enough(log: PartitionLog, count: int, now_ms: int, first_dirty: int, min_ratio: float,
                  max_lag_ms: int, tombstones_due_ms: int, result: CompactionResult) -> bool:
    """Whether Kafka's cleaner would choose this log (see the module docstring)."""
    clean = dirty = 0
    oldest = NEVER  # the max timestamp of the first dirty batch with one
    for b in log.batches[:count]:
        if b.last_offset < first_dirty:
            clean += b.size
            continue
        dirty += b.size
        if oldest == NEVER and b.max_timestamp >= 0:
            oldest = b.max_timestamp
    if dirty and oldest != NEVER and max_lag_ms < NEVER:
        if now_ms - oldest > max_lag_ms:
            return True
        result.retry_at_ms = min(result.retry_at_ms, oldest + max_lag_ms + 1)
    if clean + dirty and dirty / (clean + dirty) > min_ratio:
        return True
    return tombstones_due_ms <= now_ms


def _join(stored: StoredBatch) -> bytes:
    return b"".join(bytes(b) for b in stored.buffers)


def _cleanable(log: PartitionLog, now_ms: int, lag_ms: int, result: CompactionResult,
               segment_starts: list[int] | None) -> int:
    """How many leading batches may be cleaned: those of the segments below the active one (with no
    ``segment_starts``, every batch is a segment), below the last stable offset, up to the first
    segment holding a batch younger than ``min.compaction.lag.ms`` (Kafka: the segment's largest
    timestamp)."""
    if not log.batches:
        return 0
    ranges = segment_ranges(log.batches, segment_starts or [])
    end = min(log.batches[ranges[-1][0]].base_offset, log.last_stable_offset)
    count = 0
    for first, stop in ranges[:-1]:
        newest = max(b.max_timestamp for b in log.batches[first:stop])
        if lag_ms > 0 and now_ms - newest < lag_ms:
            result.retry_at_ms = min(result.retry_at_ms, newest + lag_ms)
            break
        for b in log.batches[first:stop]:
            if b.last_offset >= end:
                return count
            count += 1
    return count


def _aborted(log: PartitionLog, producer_id: int, offset: int) -> bool:
    return any(t.producer_id == producer_id and t.first_offset <= offset <= t.last_offset
               for t in log.producers.aborted)


def _rebuild(stored: StoredBatch, header: Any, kept: list[Any]) -> StoredBatch:
    if kept:
        body = bytearray()
        for r in kept:
            encode_record(body, r.offset_delta, r.timestamp_delta, r.key, r.value, r.headers, r.attributes)
        codec, base_ts = header.compression, header.base_timestamp
    else:  # Kafka's empty batch header: no codec, both timestamps the max timestamp
        body, codec, base_ts = bytearray(), 0, header.max_timestamp
    data = rec.batch_from_body(
        body, len(kept), header.last_offset_delta, base_ts, header.max_timestamp,
        base_offset=stored.base_offset, compression=codec, timestamp_type=header.timestamp_type,
        producer_id=header.producer_id, producer_epoch=header.producer_epoch, base_sequence=header.base_sequence,
        transactional=header.is_transactional, partition_leader_epoch=header.partition_leader_epoch,
    )
    return StoredBatch(stored.base_offset, stored.last_offset, stored.max_timestamp, len(data), (data,),
                       stored.producer_id, stored.is_transactional, stored.is_control)


def _decode_with_latest(log: PartitionLog, count: int
                        ) -> tuple[list[tuple[StoredBatch, Any, list[Any]]], dict[bytes | None, int]]:
    """Decode the first ``count`` batches (control batches left undecoded, header None) and find each
    key's latest offset among them, records of aborted transactions not counting."""
    decoded: list[tuple[StoredBatch, Any, list[Any]]] = []
    latest: dict[bytes | None, int] = {}
    for stored in log.batches[:count]:
        if stored.is_control:
            decoded.append((stored, None, []))
            continue
        header, records = rec.decode_batch(_join(stored))
        decoded.append((stored, header, records))
        if stored.is_transactional and _aborted(log, stored.producer_id, stored.base_offset):
            continue
        for r in records:
            latest[None if r.key is None else bytes(r.key)] = stored.base_offset + r.offset_delta
    return decoded, latest


def compact_log(log: PartitionLog, now_ms: int, delete_retention_ms: int, min_lag_ms: int = 0,
                min_ratio: float = 0.0, max_lag_ms: int = NEVER, first_dirty: int = 0,
                tombstones_due_ms: int = NEVER, segment_starts: list[int] | None = None) -> CompactionResult:
    """One cleaning pass over ``log`` (see the module docstring): ``first_dirty`` is where the last
    pass's cleaning ended (its result's ``clean_end``), ``tombstones_due_ms`` its ``tombstones_due_ms``,
    ``segment_starts`` the first offsets of the log's segments (segments.Segments; None: every batch is
    a segment of its own, so all but the newest batch may be cleaned)."""
    result = CompactionResult()
    count = _cleanable(log, now_ms, min_lag_ms, result, segment_starts)
    if count == 0 or not _dirty_enough(log, count, now_ms, max(first_dirty, log.log_start_offset), min_ratio,
                                       max_lag_ms, tombstones_due_ms, result):
        result.tombstones_due_ms = tombstones_due_ms
        return result
    result.clean_end = log.batches[count].base_offset if count < len(log.batches) else log.next_offset
    decoded, latest = _decode_with_latest(log, count)
    last_of_producer: dict[int, int] = {}
    for b in log.batches:
        if b.producer_id >= 0 and not b.is_control:
            last_of_producer[b.producer_id] = b.base_offset
    out: list[StoredBatch] = []
    for stored, header, records in decoded:
        if header is None:
            out.append(stored)
            continue
        aborted = stored.is_transactional and _aborted(log, stored.producer_id, stored.base_offset)
        kept = []
        for r in records:
            offset = stored.base_offset + r.offset_delta
            key = None if r.key is None else bytes(r.key)
            if aborted or latest.get(key) != offset:
                continue
            if r.value is None:
                stamp = header.max_timestamp if header.timestamp_type else header.base_timestamp + r.timestamp_delta
                expires = stamp + delete_retention_ms
                if now_ms > expires:
                    continue
                result.retry_at_ms = min(result.retry_at_ms, expires + 1)
                result.tombstones_due_ms = min(result.tombstones_due_ms, expires + 1)
            kept.append(r)
        if len(kept) == len(records):
            out.append(stored)
            continue
        result.removed_records += len(records) - len(kept)
        if kept or last_of_producer.get(stored.producer_id) == stored.base_offset:
            out.append(_rebuild(stored, header, kept))
            result.rewritten_batches += 1
        else:
            result.dropped_batches += 1
    if result.removed_records:
        log.replace_batches(out + log.batches[count:])
    return result
