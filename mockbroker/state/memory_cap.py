"""Memory caps on stored record batches, so a runaway producer cannot exhaust the machine.

The mock keeps every partition in memory, so its "disk" is RAM. Two caps hold at append time,
whatever the pace of the retention check (state/retention.py, every
``log.retention.check.interval.ms``):

- per partition, ``retention.bytes`` (topics whose ``cleanup.policy`` has ``delete``): the
  retention check trims a partition back to retention.bytes as Kafka does (whole segments, oldest
  first: state/segments.py); between two checks an append that leaves the partition more than
  ``max(retention.bytes, 1 MiB)`` above it applies that same rule at once (the log start offset
  moves, consumers below it get OFFSET_OUT_OF_RANGE). So a partition never holds much more than
  twice its retention.bytes (or retention.bytes + 1 MiB) plus its active segment (``segment.bytes``,
  1 GiB by default), and this only deletes what the configured retention deletes anyway.
- globally, ``mock.log.max.total.bytes``: the record batches of every partition of the cluster,
  each counted as its size plus ``BATCH_OVERHEAD`` bytes of bookkeeping. An append that would go
  over it first runs a retention pass (``retention.ms`` / ``retention.bytes``, as configured, at
  most every ``RETENTION_RETRY_S``); if that does not free the room, the produce is refused with
  KAFKA_STORAGE_ERROR (what Kafka answers when a log directory fails, e.g. a full disk) and a
  warning naming the cap. The cap never deletes data its topic's retention would keep: compacted
  topics, and topics without retention, are refused rather than trimmed. KAFKA_STORAGE_ERROR is
  retriable, so producers back off and retry until retention (or a consumer's DeleteRecords, or a
  topic deletion) frees room or their delivery timeout ends. -1 turns the cap off; the default is
  half of the machine's memory (or of the cgroup's limit, when lower), read when the mock starts.
  It is a dynamic broker config (IncrementalAlterConfigs / AlterConfigs change it at run time).

Stored batches are views of their produce request's frame while the frame holds little else
(``shares_frame``): a batch that is a small part of a frame is copied out of it (``detached``), so
what the caps count is about what memory holds.  The batches of one request for several partitions
share the frame when together they are most of it (the C produce lane stores all of a request's
batches or none), and the frame lives as long as the last of them: deleting one partition's data
(retention, DeleteRecords) while another's batches from the same requests stay frees less than it
deleted, at most ``FRAME_SHARE`` times the bytes that stay.  Large frames sit in huge-page arenas
(mockbroker/native/lanes/frame_arena.h) that go back to the kernel a 2 MiB page at a time.

Acknowledged data is never removed by the caps except through the topic's own retention.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state.retention import apply_retention

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState
    from mockbroker.state.log import PartitionLog

logger = logging.getLogger("mockbroker.memory")

TOTAL_CAP = "mock.log.max.total.bytes"
BATCH_OVERHEAD = 512  # bytes a stored batch costs beyond its own (its objects and buffer views)
PARTITION_SLACK = 1024 * 1024  # at least this much above retention.bytes before an append trims at once
FRAME_SLACK = 4096  # bytes of a request frame a stored batch may keep alive beyond twice its own size
FRAME_SHARE = 16  # a batch under 1/16 of its request frame is copied out, whatever else the frame stores
RETENTION_RETRY_S = 0.2  # at most one extra retention pass this often while the global cap bites
RECOUNT_S = 1.0  # the tick's full recount (it walks every partition) runs at most this often


def machine_memory_bytes() -> int:
    """Physical memory, or the cgroup (v2 or v1) limit when that is lower; 8 GiB when unknown."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        total = 8 * 1024**3
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as file:
                text = file.read().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:
            total = int(text)
    return total


def default_total_cap() -> int:
    return machine_memory_bytes() // 2


def stored_bytes(log: PartitionLog) -> int:
    """What a partition counts against the global cap."""
    return log.size_bytes + BATCH_OVERHEAD * len(log.batches)


def shares_frame(frame_size: int, batch_size: int, stored: int) -> bool:
    """Whether a batch of ``batch_size`` bytes stays a view of its request frame of ``frame_size``
    bytes, from which ``stored`` bytes of batches (this one's included) are stored: when together
    they are most of the frame (it may hold about ``FRAME_SLACK`` bytes beyond twice them) and this
    one is at least 1/``FRAME_SHARE`` of it.  The C produce lane applies the same rule."""
    return frame_size <= 2 * stored + FRAME_SLACK and frame_size <= FRAME_SHARE * batch_size + FRAME_SLACK


def detached(batch: memoryview) -> memoryview:
    """``batch`` itself, or a copy when it is a small part of a larger request frame: a stored batch
    keeps its frame alive, so without the copy one partition's batch of a produce request for many
    partitions would keep the others' bytes in memory after retention deleted them, uncounted by the
    caps. Batches that are most of their frame (the common single-partition or 1 MiB case) stay
    zero-copy.  The handler decides batch by batch, so only the batch itself counts as stored."""
    frame = batch.obj
    try:
        frame_size = len(frame)  # type: ignore[arg-type]
    except TypeError:
        return batch
    if not shares_frame(frame_size, len(batch), len(batch)):
        return memoryview(bytes(batch))
    return batch


class MemoryCap:
    """The cluster's caps: ``admit`` before an append, ``appended`` after it, ``tick`` every tick."""

    # what the C produce lane reads on every request are slots (native/lanes/member_sites.h); the rest stays in __dict__
    __slots__ = ("__dict__", "__weakref__", "total")

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.total = 0  # counted bytes: exact after refresh, then grown by each append through admit
        self.refused = 0  # produce partitions refused by the global cap, ever
        self._retention_at = 0.0
        self._recounted_at = 0.0

    def refresh(self) -> int:
        """Count every partition again (stored_bytes, written out: the call per partition was 40 % of
        a pass)."""
        overhead = BATCH_OVERHEAD
        self.total = sum([log.size_bytes + overhead * len(log.batches)
                          for topic in self.cluster.topics.values() for log in topic.partitions])
        return self.total

    def tick(self) -> None:
        """Recount now and then, near the cap.  Every append is counted as it comes (admit, the produce
        lane, ``added``), so ``total`` is never below what is stored and only lags deletions
        (retention, DeleteRecords, compaction, topics).  Below half of the cap, or with no cap, that lag
        costs nothing (admit recounts before it would refuse anything; the produce lane leaves a
        request it has no room for to admit), so a broker far from its cap does not walk every
        partition each second: with 10k partitions that walk was most of an idle broker's CPU."""
        limit = self.cluster.config.values[TOTAL_CAP]
        if limit < 0 or self.total <= limit // 2:
            return
        now = time.monotonic()
        if now - self._recounted_at >= RECOUNT_S:
            self._recounted_at = now
            self.refresh()

    def admit(self, topic: Any, log: PartitionLog, size: int, batches: int = 1) -> None:
        """Check that ``batches`` batches of ``size`` bytes in all, about to be appended, fit under
        the global cap, running retention when they do not; raise KAFKA_STORAGE_ERROR when they still do not."""
        limit = self.cluster.config.values[TOTAL_CAP]
        need = size + BATCH_OVERHEAD * batches
        if limit < 0 or self.total + need <= limit:
            self.total += need
            return
        if self.refresh() + need > limit and time.monotonic() - self._retention_at >= RETENTION_RETRY_S:
            self._retention_at = time.monotonic()
            freed = self.cluster.log_maintenance.run_retention()
            if freed:
                logger.info("%s: a retention pass at the cap deleted %s offsets", TOTAL_CAP, freed)
            self.refresh()
        if self.total + need > limit:
            self.refused += 1
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR,
                             f"{TOTAL_CAP} ({limit} bytes) reached: the cluster holds {self.total} bytes of "
                             f"record batches and retention cannot make room for {need} more bytes for "
                             f"{topic.name}-{log.index}; produce refused")
        self.total += need

    def added(self, log: PartitionLog, size_before: int) -> None:
        """Count the one batch appended to ``log`` (which held ``size_before`` bytes) by a path that does
        not ask admit: records written from Python or the control API, transaction markers."""
        self.total += log.size_bytes - size_before + BATCH_OVERHEAD

    def appended(self, topic: Any, log: PartitionLog, retention_bytes: int) -> None:
        """Apply retention.bytes at once to a partition far above it (see the module docstring).
        ``retention_bytes`` is the topic's retention.bytes, or -1 when its cleanup.policy has no delete."""
        if retention_bytes < 0 or log.size_bytes <= retention_bytes + max(retention_bytes, PARTITION_SLACK):
            return
        before, counted = log.size_bytes, stored_bytes(log)
        segments = self.cluster.log_maintenance.segments(log, topic.config)
        gone = apply_retention(log, self.cluster.clock.now_ms(), -1, retention_bytes, segments)
        if gone:
            self.total -= counted - stored_bytes(log)
            logger.info("retention.bytes: %s-%s held %s bytes (retention.bytes %s); log start moved to %s at "
                        "append (%s offsets deleted)", topic.name, log.index, before, retention_bytes,
                        log.log_start_offset, gone)
