"""Time-driven log maintenance: retention (``cleanup.policy`` with ``delete``) and compaction
(with ``compact``; see state/compaction.py), run from ``ClusterState.tick``.

Retention, per partition, on whole segments as Kafka's (state/segments.py: a segment rolls at
``segment.bytes`` or ``segment.ms`` after its first record; with Kafka's defaults a test's records all
stay in one):
- ``retention.ms`` (>= 0): leading segments whose newest batch is more than retention.ms old go
  (segments with batches without timestamps, max timestamp -1, stay);
- ``retention.bytes`` (>= 0): then the oldest segments go while the partition would still hold at
  least retention.bytes without them;
- the log start offset moves to the first batch kept (the high watermark when none is), through
  ``PartitionLog.advance_log_start``; consumers below it get OFFSET_OUT_OF_RANGE and reset.
The active segment may go too: Kafka rolls and deletes an active segment that has expired
(UnifiedLog.deleteSegments), so old records alone in a partition go at the first check that finds
them expired: what keeps a short test's fixed old timestamps in Kafka is its first check coming 30 s
after start (``log.initial.task.delay.ms``), then every 5 minutes; the mock checks every second, hence
its ``log.retention.ms`` default of -1 (docs/configuration.md).

Intervals (Kafka's names, mock defaults): retention runs at most every
``log.retention.check.interval.ms`` (1000; Kafka 300000); compaction at most every
``log.cleaner.backoff.ms`` (1000; Kafka 15000), and only on partitions that changed since their
last pass or hold a tombstone (or too young batch) that has since become removable; a partition is
then cleaned only when Kafka's cleaner would choose it (its dirty ratio, max.compaction.lag.ms:
state/compaction.py).  A log start moved by retention calls the log's listeners, so a long poll
waiting below it answers OFFSET_OUT_OF_RANGE at once.
"""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Any

from mockbroker.state.compaction import NEVER, CompactionResult, compact_log
from mockbroker.state.log import PartitionLog
from mockbroker.state.segments import Segments, iter_segments, roll_settings

if TYPE_CHECKING:
    from collections.abc import Iterable

    from mockbroker.state.cluster import ClusterState, Topic

logger = logging.getLogger("mockbroker.retention")


def apply_retention(log: PartitionLog, now_ms: int, retention_ms: int, retention_bytes: int,
                    segments: Segments | None = None) -> int:
    """Delete the leading segments retention.ms / retention.bytes say go (``segments``: the log's,
    brought up to date; None: every batch is a segment); return how many offsets the log start moved."""
    batches = log.batches
    starts = segments.starts if segments is not None else []
    size = log.size_bytes  # what stays if this segment and those after it stay
    i = 0  # batches going
    by_time = retention_ms >= 0  # Kafka's order: the expired segments first, then those over the size
    for first, stop in iter_segments(batches, starts):
        if segments is not None and stop == len(batches) and starts and batches[first].base_offset >= starts[-1]:
            # the active segment: its figures were kept as its batches came (no walk over a long log)
            newest, timed, segment_size = segments.active_max_ts, segments.active_min_ts >= 0, size
        else:
            part = batches[first:stop]
            newest = max(b.max_timestamp for b in part)
            timed = all(b.max_timestamp >= 0 for b in part)
            segment_size = sum(b.size for b in part)
        # by the segment's newest timestamp; a batch without timestamps (-1: magic 0 data) is never old
        # enough (Kafka falls back to the segment file's modification time)
        by_time = by_time and timed and now_ms - newest > retention_ms
        if not by_time and not (retention_bytes >= 0 and size - segment_size >= retention_bytes):
            break
        size -= segment_size
        i = stop
    if i == 0:
        return 0
    new_start = batches[i].base_offset if i < len(batches) else log.next_offset
    before = log.log_start_offset
    log.advance_log_start(new_start)
    log.producers.truncate_before(log.log_start_offset)
    return log.log_start_offset - before


class LogMaintenance:
    """Runs retention and compaction over every partition when their intervals have passed."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self._last_retention = self._last_clean = cluster.clock.now_ms()
        # per log: (its state at the last pass, when to look again, where cleaning ended, when its
        # first kept tombstone may go): compaction.compact_log's memory between passes
        self._cleaned: weakref.WeakKeyDictionary[PartitionLog, tuple[Any, int, int, int]] = weakref.WeakKeyDictionary()
        self._segments: weakref.WeakKeyDictionary[PartitionLog, Segments] = weakref.WeakKeyDictionary()

    def cut_segments(self, topics: Iterable[Topic]) -> None:
        """Decide the rolls of the batches appended so far with the segment configs in force now:
        called before those configs change (AlterConfigs), as Kafka decided each roll at its append."""
        for topic in topics:
            for log in topic.partitions:
                self.segments(log, topic.config)

    def segments(self, log: PartitionLog, cfg: Any) -> Segments:
        """``log``'s segments, brought up to date with its topic's config ``cfg`` (state/segments.py)."""
        segments = self._segments.get(log)
        if segments is None:
            segments = self._segments[log] = Segments()
        segments.update(log, *roll_settings(cfg))
        return segments

    def tick(self) -> None:
        now = self.cluster.clock.now_ms()
        config = self.cluster.config
        if now - self._last_retention >= config["log.retention.check.interval.ms"]:
            self.run_retention(now)
        if now - self._last_clean >= config["log.cleaner.backoff.ms"]:
            self.run_cleaner(now)

    def run_retention(self, now_ms: int | None = None) -> int:
        """One retention pass over every topic with ``delete`` in its cleanup.policy; offsets deleted."""
        now = self.cluster.clock.now_ms() if now_ms is None else now_ms
        self._last_retention = now
        moved = 0
        for topic in list(self.cluster.topics.values()):
            cfg = topic.config
            if "delete" not in cfg["cleanup.policy"]:
                continue
            retention_ms, retention_bytes = int(cfg["retention.ms"]), int(cfg["retention.bytes"])
            if retention_ms < 0 and retention_bytes < 0:
                continue
            for log in topic.partitions:
                gone = apply_retention(log, now, retention_ms, retention_bytes, self.segments(log, cfg))
                if gone:
                    moved += gone
                    logger.info("retention: %s-%s log start moved to %s (%s offsets deleted)", topic.name,
                                log.index, log.log_start_offset, gone)
        return moved

    def run_cleaner(self, now_ms: int | None = None, force: bool = False) -> CompactionResult:
        """One compaction pass over every topic with ``compact`` in its cleanup.policy.  Without
        ``force`` (the tick) a partition is cleaned when Kafka's cleaner would choose it
        (compaction.compact_log: its dirty ratio, max.compaction.lag.ms, expired tombstones); ``force``
        (MockCluster.run_log_cleaner) cleans whatever is cleanable now, also partitions that did not
        change since their last pass, whatever their dirty ratio. Returns the totals."""
        now = self.cluster.clock.now_ms() if now_ms is None else now_ms
        self._last_clean = now
        total = CompactionResult()
        for topic in list(self.cluster.topics.values()):
            cfg = topic.config
            if "compact" not in cfg["cleanup.policy"]:
                continue
            for log in topic.partitions:
                state = (log.next_offset, log.log_start_offset, cfg.generation)
                memo = self._cleaned.get(log)
                if not force and memo is not None and memo[0] == state and now < memo[1]:
                    continue
                first_dirty, tombstones_due = (memo[2], memo[3]) if memo is not None else (0, NEVER)
                try:
                    result = compact_log(log, now, int(cfg["delete.retention.ms"]), int(cfg["min.compaction.lag.ms"]),
                                         -1.0 if force else float(cfg["min.cleanable.dirty.ratio"]),
                                         int(cfg["max.compaction.lag.ms"]),
                                         first_dirty, tombstones_due, self.segments(log, cfg).starts)
                except Exception:  # one unreadable partition must not stop the cluster's tick
                    logger.exception("compaction of %s-%s failed; it is left as it was", topic.name, log.index)
                    result = CompactionResult()
                if result.clean_end >= 0:
                    first_dirty = result.clean_end
                self._cleaned[log] = ((log.next_offset, log.log_start_offset, cfg.generation), result.retry_at_ms,
                                      first_dirty, result.tombstones_due_ms)
                if result.removed_records:
                    logger.info("compaction: %s-%s removed %s records (%s batches rewritten, %s dropped)",
                                topic.name, log.index, result.removed_records, result.rewritten_batches,
                                result.dropped_batches)
                total.removed_records += result.removed_records
                total.rewritten_batches += result.rewritten_batches
                total.dropped_batches += result.dropped_batches
                total.retry_at_ms = min(total.retry_at_ms, result.retry_at_ms)
        return total
