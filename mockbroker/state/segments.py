"""Kafka's log segments, as far as retention and compaction see them: where each segment of a
partition starts, and so which batches are in the active (newest) segment.

The mock stores batches, not segment files; a segment here is a run of batches, cut where Kafka would
roll its active segment when appending the next batch (UnifiedLog.maybeRoll, LogSegment.shouldRoll):

- the active segment holds batches and the next batch would take it past ``segment.bytes``; or
- the active segment holds batches and the next batch's max timestamp is more than the roll time past
  the max timestamp of the segment's first batch.  The roll time is ``segment.ms``, or, on a compacted
  topic, ``max.compaction.lag.ms`` when that is shorter (LogConfig.maxSegmentMs).  A segment whose
  first batch has no timestamp (-1: magic 0 data) rolls on size only (Kafka falls back to the time the
  segment file was made, which the mock does not keep).

Topic configs default from the broker's ``log.segment.bytes`` (1 GiB), ``log.roll.ms`` or, unset,
``log.roll.hours`` (168), as in Kafka.  ``segment.jitter.ms`` is taken as 0 (Kafka subtracts a random
jitter below it from each segment's roll time: any value from 0 up is what a Kafka broker may do).

Kafka decides a roll when a batch is appended; the mock decides it for the batches appended since it
last looked (a retention or cleaner pass), with the configs in force then.  The answer depends only on
the batches' sizes and timestamps, so it is Kafka's unless a segment config changed in between.
Segments never change once cut: compaction shrinks batches but the segments keep their bounds.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from typing import Any

from mockbroker.plain import Slotted
from mockbroker.state.log import PartitionLog, StoredBatch

NEVER = 2**63 - 1
HOUR_MS = 3_600_000


class Segments(Slotted):
    """One partition's segments: their first offsets, and the active segment's size and first timestamp
    (for deciding whether the next batch rolls it)."""

    __slots__ = ("active_first_ts", "active_max_ts", "active_min_ts", "active_size", "seen_end", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []  # the base offset of each segment's first batch, oldest first
        self.active_size = 0
        self.active_first_ts = -1  # the max timestamp of the active segment's first batch (Kafka's rolling base)
        self.active_max_ts = self.active_min_ts = -1  # of its batches' max timestamps (retention)
        self.seen_end = 0  # the log's next offset when the segments were last brought up to date

    def reset(self) -> None:
        self.starts = []
        self.active_size = 0
        self.active_first_ts = self.active_max_ts = self.active_min_ts = -1
        self.seen_end = 0

    def update(self, log: PartitionLog, segment_bytes: int, roll_ms: int) -> list[int]:
        """Cut the batches appended since the last call into segments; returns ``starts``."""
        if log.next_offset < self.seen_end or (self.starts and log.batches and
                                               log.batches[-1].base_offset < self.starts[-1]):
            self.reset()  # the log was truncated: start over
        new = _appended_since(log.batches, self.seen_end)
        for b in new:
            if self.starts and self.active_size > 0 and (
                    self.active_size + b.size > segment_bytes
                    or (self.active_first_ts >= 0 and b.max_timestamp - self.active_first_ts > roll_ms)):
                self.starts.append(b.base_offset)
                self.active_size = 0
            if not self.starts:
                self.starts.append(b.base_offset)
            if self.active_size == 0:
                self.active_first_ts = self.active_max_ts = self.active_min_ts = b.max_timestamp
            self.active_max_ts = max(self.active_max_ts, b.max_timestamp)
            self.active_min_ts = min(self.active_min_ts, b.max_timestamp)
            self.active_size += b.size
        self.seen_end = log.next_offset
        first = log.batches[0].base_offset if log.batches else log.next_offset
        while len(self.starts) > 1 and self.starts[1] <= first:  # segments wholly below the log start went
            del self.starts[0]
        if not log.batches:  # everything went (retention): the next batch starts a new segment
            self.starts.clear()
            self.active_size = 0
        return self.starts


def _appended_since(batches: list[StoredBatch], offset: int) -> list[StoredBatch]:
    i = len(batches)
    while i > 0 and batches[i - 1].base_offset >= offset:
        i -= 1
    return batches[i:]


def roll_settings(cfg: Any) -> tuple[int, int]:
    """(segment.bytes, roll time in ms) of a topic config (TopicConfig): Kafka's synonyms and, on a
    compacted topic, max.compaction.lag.ms when shorter than segment.ms."""
    segment_bytes = int(cfg["segment.bytes"])
    roll_ms = cfg["segment.ms"]
    if roll_ms is None:  # no segment.ms and no log.roll.ms: log.roll.hours
        roll_ms = int(cfg.broker["log.roll.hours"]) * HOUR_MS
    roll_ms = int(roll_ms)
    if "compact" in cfg["cleanup.policy"]:
        lag = int(cfg["max.compaction.lag.ms"])
        if lag > 0:
            roll_ms = min(roll_ms, lag)
    return segment_bytes, roll_ms


def iter_segments(batches: list[StoredBatch], starts: list[int]) -> Iterator[tuple[int, int]]:
    """(first index, end index) in ``batches`` of each segment that still holds batches, oldest first,
    found as they are asked for; with no ``starts`` every batch is a segment of its own.  The last is
    the active segment when ``starts`` are up to date."""
    n = len(batches)
    if not starts:
        yield from ((i, i + 1) for i in range(n))
        return
    i = 0
    while i < n:
        j = bisect_right(starts, batches[i].base_offset)  # the next segment's start
        if j >= len(starts):
            yield i, n
            return
        k = i + 1
        while k < n and batches[k].base_offset < starts[j]:
            k += 1
        yield i, k
        i = k


def segment_ranges(batches: list[StoredBatch], starts: list[int]) -> list[tuple[int, int]]:
    """Every segment's (first index, end index) in ``batches`` (iter_segments)."""
    return list(iter_segments(batches, starts))
