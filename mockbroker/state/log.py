"""A partition's log: stored record batches indexed by base offset, watermarks and epochs.

The log never parses bytes.  A stored batch arrives as the buffers to send on a fetch (already
carrying its base offset) plus the facts the log needs: offsets, record count, timestamps and
size.  Fetches hand those buffers back as a list, so the socket writes them without a copy.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from typing import Any

from mockbroker import records as rec
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.plain import Slotted
from mockbroker.state import answer_epoch
from mockbroker.state.producer_state import PartitionProducers


class StoredBatch(Slotted):
    """A batch in a partition's log (the C produce lane fills these slots itself: keep them plain)."""

    __slots__ = ("base_offset", "buffers", "is_control", "is_transactional", "last_offset", "max_timestamp",
                 "producer_id", "size")

    def __init__(self, base_offset: int, last_offset: int, max_timestamp: int, size: int, buffers: tuple[Any, ...],
                 producer_id: int = -1, is_transactional: bool = False, is_control: bool = False) -> None:
        self.base_offset = base_offset
        self.last_offset = last_offset
        self.max_timestamp = max_timestamp
        self.size = size
        self.buffers = buffers  # what goes on the wire, in order
        self.producer_id = producer_id
        self.is_transactional = is_transactional
        self.is_control = is_control


class ReadResult(Slotted):
    __slots__ = ("batches", "buffers", "high_watermark", "log_start_offset", "size")

    def __init__(self, buffers: list[Any], size: int, high_watermark: int, log_start_offset: int,
                 batches: list[StoredBatch] | None = None) -> None:
        self.buffers = buffers
        self.size = size
        self.high_watermark = high_watermark
        self.log_start_offset = log_start_offset
        self.batches: list[StoredBatch] = [] if batches is None else batches


class PartitionLog:
    """One partition: batches in offset order; the high watermark is the next offset.  Slotted: the C
    produce lane reads and writes these fields in place (``log_get``/``log_set`` in _producelane.c)."""

    __slots__ = ("__weakref__", "_bases", "answer_at_end", "batches", "epoch_starts", "index", "leader", "leader_epoch",
                 "listeners", "log_start_offset", "next_offset", "producers", "replicas", "size_bytes", "topic")

    def __init__(self, topic: str, index: int, leader: int, replicas: list[int]) -> None:
        self.topic = topic
        self.index = index
        self.leader = leader
        self.replicas = replicas
        self.leader_epoch = 0
        self.epoch_starts: list[tuple[int, int]] = [(0, 0)]  # (leader epoch, start offset)
        self.batches: list[StoredBatch] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self.next_offset = 0
        self.size_bytes = 0
        self.listeners: list[Callable[[PartitionLog], None]] = []
        self.producers = PartitionProducers()
        self.answer_at_end: Any = None  # (key, answer): a Fetch's answer for a read at the end (handlers/k01_fetch)

    @property
    def high_watermark(self) -> int:
        return self.next_offset

    @property
    def last_stable_offset(self) -> int:
        return self.producers.last_stable_offset(self.next_offset)

    def append(self, batch: StoredBatch) -> None:
        if batch.base_offset != self.next_offset:
            raise ValueError(f"batch at {batch.base_offset} appended where the log ends at {self.next_offset}")
        self.batches.append(batch)
        self._bases.append(batch.base_offset)
        self.next_offset = batch.last_offset + 1
        self.size_bytes += batch.size
        for notify in self.listeners:
            notify(self)

    def _first_index(self, offset: int) -> int:
        """Index of the batch holding ``offset`` (or the first batch after it)."""
        i = bisect_right(self._bases, offset) - 1
        if i < 0:
            return 0
        if self.batches[i].last_offset < offset:
            return i + 1
        return i

    def advance_log_start(self, offset: int) -> int:
        """Move the log start up to ``offset`` (DeleteRecords, retention): batches wholly below it are
        dropped; a batch holding it stays, but reads from below the new start are OFFSET_OUT_OF_RANGE.
        Never moves backwards or past the high watermark. Returns the new log start offset.  A move
        calls the listeners: a long poll waiting on this partition looks again (the fetch of an offset
        now below the start completes with OFFSET_OUT_OF_RANGE, where Kafka's delayed fetch does)."""
        offset = min(offset, self.next_offset)
        if offset <= self.log_start_offset:
            return self.log_start_offset
        keep = self._first_index(offset)
        for b in self.batches[:keep]:
            self.size_bytes -= b.size
        del self.batches[:keep]
        del self._bases[:keep]
        self.log_start_offset = offset
        for notify in self.listeners:  # a waiting fetch now below the start answers OFFSET_OUT_OF_RANGE
            notify(self)
        return offset

    def replace_batches(self, batches: list[StoredBatch]) -> None:
        """Swap in a rewritten list of the same offsets' batches (compaction), in offset order."""
        self.batches = batches
        self._bases = [b.base_offset for b in batches]
        self.size_bytes = sum(b.size for b in batches)

    def append_marker(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                      now_ms: int) -> StoredBatch:
        """Write a COMMIT/ABORT control batch for ``producer_id`` and close its transaction here."""
        offset = self.next_offset
        data = rec.build_control_batch(commit, producer_id, producer_epoch, offset, now_ms, coordinator_epoch,
                                       self.leader_epoch)
        batch = StoredBatch(offset, offset, now_ms, len(data), (data,), producer_id, True, True)
        self.producers.record_marker(producer_id, producer_epoch, coordinator_epoch, commit, offset, now_ms)
        self.append(batch)
        return batch

    def read(self, offset: int, max_bytes: int, first_always: bool = True, end_offset: int | None = None) -> ReadResult:
        """Whole batches from the one holding ``offset``, up to ``max_bytes`` (the first batch is
        returned even when larger, as Kafka does from Fetch v3 on) and, when ``end_offset`` is given
        (the last stable offset of a read_committed fetch), only batches starting below it."""
        if offset < self.log_start_offset or offset > self.next_offset:
            raise KafkaError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"offset {offset} is outside {self.log_start_offset}..{self.next_offset}",
            )
        buffers: list[Any] = []
        chosen: list[StoredBatch] = []
        size = 0
        for i in range(self._first_index(offset), len(self.batches)):
            b = self.batches[i]
            if end_offset is not None and b.base_offset >= end_offset:
                break
            if size + b.size > max_bytes and (chosen or not first_always):
                break
            buffers.extend(b.buffers)
            chosen.append(b)
            size += b.size
        return ReadResult(buffers, size, self.next_offset, self.log_start_offset, chosen)

    def bytes_after(self, offset: int, limit: int, end_offset: int | None = None) -> int:
        """How many bytes a fetch from ``offset`` would get (below ``end_offset``), counting up to ``limit``."""
        total = 0
        for i in range(self._first_index(offset), len(self.batches)):
            if end_offset is not None and self.batches[i].base_offset >= end_offset:
                break
            total += self.batches[i].size
            if total >= limit:
                break
        return total

    def max_timestamp_batch(self) -> StoredBatch | None:
        best: StoredBatch | None = None
        for b in self.batches:
            if not b.is_control and (best is None or b.max_timestamp > best.max_timestamp):
                best = b
        return best

    def epoch_error(self, current_leader_epoch: int) -> int:
        """The error for a request that names the leader epoch it believes current (-1: unchecked):
        FENCED_LEADER_EPOCH when it is older than ours, UNKNOWN_LEADER_EPOCH when newer, else 0."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return 0
        if current_leader_epoch < self.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        return ErrorCode.UNKNOWN_LEADER_EPOCH

    def bump_leader_epoch(self, new_leader: int | None = None) -> None:
        self.leader_epoch += 1
        if new_leader is not None:
            self.leader = new_leader
            if new_leader not in self.replicas:  # the new leader is a replica, as Kafka's controller ensures
                self.replicas = [*self.replicas, new_leader]
        self.epoch_starts.append((self.leader_epoch, self.next_offset))
        answer_epoch.bump()  # Metadata answers name leaders, epochs and replicas
        for notify in self.listeners:  # waiting fetches answer now (fenced, or no longer the leader), as Kafka's do
            notify(self)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch: the start of the next higher epoch."""
        if epoch > self.leader_epoch:
            return -1, -1
        found = -1
        for i, (e, _start) in enumerate(self.epoch_starts):
            if e <= epoch:
                found = i
        if found < 0:
            return -1, -1
        nxt = found + 1
        end = self.epoch_starts[nxt][1] if nxt < len(self.epoch_starts) else self.next_offset
        return self.epoch_starts[found][0], end
