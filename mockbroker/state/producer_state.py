"""What one partition knows about the producers writing to it (Kafka's ProducerStateManager).

Per producer id: the epoch, the last five batches (first/last sequence and offsets, to answer a
retried batch with its original offsets), the time of the last append and, while a transaction
is open, the offset of its first record.  Per partition: the open transactions (whose first
offsets bound the last stable offset) and the aborted-transaction index that read_committed
fetches return.

Sequence rules, as Kafka checks them on a client append:
- an epoch older than the one known here -> INVALID_PRODUCER_EPOCH;
- a producer this partition has no state for must start at sequence 0, else UNKNOWN_PRODUCER_ID
  (Kafka 0.11-2.4; Kafka 2.5+ accepts any sequence there, which would hide the client's recovery
  path that this error exercises);
- a newer epoch must start at sequence 0, else OUT_OF_ORDER_SEQUENCE_NUMBER;
- the same epoch must continue at last sequence + 1 (INT32_MAX wraps to 0), else
  OUT_OF_ORDER_SEQUENCE_NUMBER;
- a non-transactional batch while the producer's transaction is open -> INVALID_TXN_STATE.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.plain import FrozenSlotted, Slotted

INT32_MAX = 2**31 - 1
WINDOW = 5  # batches remembered per producer for duplicate detection (Kafka's NUM_BATCHES_TO_RETAIN)
NO_EPOCH = -1


def last_sequence(first_sequence: int, record_count: int) -> int:
    """The sequence of a batch's last record (sequences wrap from INT32_MAX to 0)."""
    last = first_sequence + record_count - 1
    return last - INT32_MAX - 1 if last > INT32_MAX else last


class BatchMeta(Slotted):
    __slots__ = ("crc", "first_offset", "first_seq", "last_offset", "last_seq")

    def __init__(self, first_seq: int, last_seq: int, first_offset: int, last_offset: int, crc: int = -1) -> None:
        self.first_seq = first_seq
        self.last_seq = last_seq
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.crc = crc  # the client's CRC of the batch as it arrived (-1: not kept); a true retry repeats it


class ProducerEntry(Slotted):
    __slots__ = (
        "batches",
        "coordinator_epoch",
        "epoch",
        "last_append_ms",
        "last_timestamp",
        "producer_id",
        "txn_first_offset",
    )

    def __init__(self, producer_id: int, epoch: int = NO_EPOCH, batches: deque[BatchMeta] | None = None,
                 last_timestamp: int = -1, last_append_ms: int = 0, coordinator_epoch: int = -1,
                 txn_first_offset: int = -1) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        self.batches: deque[BatchMeta] = deque(maxlen=WINDOW) if batches is None else batches
        self.last_timestamp = last_timestamp  # the largest record timestamp of the last batch (what Kafka reports)
        self.last_append_ms = last_append_ms  # broker time of the last write (what expiry measures)
        self.coordinator_epoch = coordinator_epoch
        self.txn_first_offset = txn_first_offset  # -1: no open transaction

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


class AbortedTxn(FrozenSlotted):
    __slots__ = ("first_offset", "last_offset", "producer_id")
    # the fields, for type checkers (annotations without values: the slot layout stays as above)
    producer_id: int
    first_offset: int
    last_offset: int

    def __init__(self, producer_id: int, first_offset: int, last_offset: int) -> None:
        object.__setattr__(self, "producer_id", producer_id)
        object.__setattr__(self, "first_offset", first_offset)
        object.__setattr__(self, "last_offset", last_offset)  # the offset of the ABORT marker


class PartitionProducers:
    """Producer state of one partition (slotted: the C lanes read ``open_txns`` and ``aborted`` in place)."""

    __slots__ = ("_aborted_ends", "aborted", "entries", "open_txns")

    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}
        self.open_txns: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.aborted: list[AbortedTxn] = []  # ordered by marker offset
        self._aborted_ends: list[int] = []

    # -- appends ----------------------------------------------------------------------------------
    def duplicate_of(self, pid: int, epoch: int, first_seq: int, last_seq: int) -> BatchMeta | None:
        """The stored batch a retried batch repeats (same epoch and sequences), if any."""
        entry = self.entries.get(pid)
        if entry is None or entry.epoch != epoch:
            return None
        for meta in entry.batches:
            if meta.first_seq == first_seq and meta.last_seq == last_seq:
                return meta
        return None

    def check_append(self, pid: int, epoch: int, first_seq: int, transactional: bool, where: str) -> None:
        """Raise the error Kafka answers for a client batch that breaks the producer's sequence."""
        entry = self.entries.get(pid)
        known = entry is not None and entry.epoch != NO_EPOCH
        if known and epoch < entry.epoch:  # type: ignore[union-attr]  # known: entry is not None
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"epoch {epoch} of producer {pid} in {where} is older than the last seen epoch "
                             f"{entry.epoch}")  # type: ignore[union-attr]  # known: entry is not None
        if not known:
            if first_seq != 0:
                raise KafkaError(ErrorCode.UNKNOWN_PRODUCER_ID,
                                 f"{where} has no state for producer {pid} (never written here, or expired) "
                                 f"and its batch starts at sequence {first_seq}, not 0")
        elif epoch != entry.epoch:  # type: ignore[union-attr]  # known: entry is not None
            if first_seq != 0:
                raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"producer {pid} starts epoch {epoch} in {where} at sequence {first_seq}, not 0")
        else:
            last = entry.last_seq  # type: ignore[union-attr]  # known: entry is not None
            if not (first_seq == last + 1 or (first_seq == 0 and last == INT32_MAX)):
                raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"out of order sequence for producer {pid} in {where}: got {first_seq}, "
                                 f"expected {last + 1 if last < INT32_MAX else 0}")
        if entry is not None and entry.txn_first_offset >= 0 and not transactional:
            raise KafkaError(ErrorCode.INVALID_TXN_STATE,
                             f"non-transactional batch from producer {pid} in {where} while its transaction is open")

    def admits(self, pid: int, epoch: int, first_seq: int, record_count: int) -> int | None:
        """The last sequence of a non-transactional batch that would be appended as it is (not a retry
        of a stored batch, in sequence, no open transaction), else None.  The produce lane's question
        (mockbroker/native/lanes/_producelane.c): on None it leaves the batch to the Produce handler, whose
        duplicate_of and check_append answer the retry or name the error."""
        last_seq = last_sequence(first_seq, record_count)
        if self.duplicate_of(pid, epoch, first_seq, last_seq) is not None:
            return None
        try:
            self.check_append(pid, epoch, first_seq, False, "")
        except KafkaError:
            return None
        return last_seq

    def record_append(self, pid: int, epoch: int, first_seq: int, last_seq: int, first_offset: int,
                      last_offset: int, max_timestamp: int, now_ms: int, transactional: bool, crc: int = -1) -> None:
        entry = self.entries.get(pid)
        if entry is None:
            entry = self.entries[pid] = ProducerEntry(pid)
        if entry.epoch != epoch:
            entry.epoch = epoch
            entry.batches.clear()
        entry.batches.append(BatchMeta(first_seq, last_seq, first_offset, last_offset, crc))
        entry.last_timestamp = max_timestamp
        entry.last_append_ms = now_ms
        if transactional and entry.txn_first_offset < 0:
            entry.txn_first_offset = first_offset
            self.open_txns[pid] = first_offset

    # -- transaction markers --------------------------------------------------------------------
    def check_marker(self, pid: int, epoch: int, coordinator_epoch: int, where: str) -> None:
        entry = self.entries.get(pid)
        if entry is None:
            return
        if epoch < entry.epoch:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"marker epoch {epoch} of producer {pid} in {where} is older than {entry.epoch}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise KafkaError(ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                             f"coordinator epoch {coordinator_epoch} for producer {pid} in {where} is older "
                             f"than {entry.coordinator_epoch}")

    def record_marker(self, pid: int, epoch: int, coordinator_epoch: int, commit: bool, marker_offset: int,
                      now_ms: int) -> None:
        """A COMMIT/ABORT marker was written at ``marker_offset``: close the producer's transaction."""
        entry = self.entries.get(pid)
        if entry is None:
            entry = self.entries[pid] = ProducerEntry(pid)
        first = entry.txn_first_offset
        if first >= 0 and not commit:
            self.aborted.append(AbortedTxn(pid, first, marker_offset))
            self._aborted_ends.append(marker_offset)
        if entry.epoch != epoch:
            entry.epoch = epoch
            entry.batches.clear()
        entry.coordinator_epoch = coordinator_epoch
        entry.txn_first_offset = -1
        entry.last_append_ms = now_ms
        self.open_txns.pop(pid, None)

    # -- reads -------------------------------------------------------------------------------------
    def last_stable_offset(self, high_watermark: int) -> int:
        """The first offset of the oldest open transaction, else the high watermark."""
        return min(self.open_txns.values()) if self.open_txns else high_watermark

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions a read_committed fetch of offsets [start, end) must be told about."""
        out = []
        for i in range(bisect_left(self._aborted_ends, start), len(self.aborted)):
            txn = self.aborted[i]
            if txn.first_offset < end:
                out.append(txn)
        return out

    # -- housekeeping ----------------------------------------------------------------------------
    def expire(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers idle for ``expiration_ms`` with no open transaction; return their ids."""
        gone = [pid for pid, e in self.entries.items()
                if e.txn_first_offset < 0 and now_ms - e.last_append_ms >= expiration_ms]
        for pid in gone:
            del self.entries[pid]
        return gone

    def truncate_before(self, offset: int) -> None:
        """Drop aborted-index entries wholly below ``offset`` (the log start moved)."""
        keep = [t for t in self.aborted if t.last_offset >= offset]
        if len(keep) != len(self.aborted):
            self.aborted = keep
            self._aborted_ends = [t.last_offset for t in keep]
