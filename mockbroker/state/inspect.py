"""Looking into (and writing straight into) partition logs, outside the wire protocol.

Used by scenarios (``produce`` steps, expectations), the HTTP control API (records endpoints) and
tests.  Reading decodes the stored batches themselves, so what it reports does not depend on the
broker's own bookkeeping (producer state, last stable offset): an audit, not a mirror.

- :func:`append_records` writes plain records as one batch, as a producer without idempotence would.
- :func:`read_records` decodes records from an offset (control records skipped, aborted ones marked).
  A stored batch that does not decode (``mock.produce.validation=envelope`` stores batches unchecked)
  is a KafkaError CORRUPT_MESSAGE naming its partition and offsets, here and in the audit.
- :func:`audit_topic` counts data, committed and aborted records and transactions, and finds
  sequence gaps and duplicates per producer and duplicated values.
"""

from __future__ import annotations

import base64
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mockbroker import batches
from mockbroker import records as rec
from mockbroker.errors import KafkaError
from mockbroker.state.log import PartitionLog

RecordSpec = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def append_records(log: PartitionLog, items: list[RecordSpec], now_ms: int) -> int:
    """Append ``items`` (key, value, headers) as one uncompressed batch; returns its base offset."""
    if not items:
        raise ValueError("no records to append")
    base = log.next_offset
    data = rec.build_batch([(k, v, h, now_ms) for k, v, h in items], base_offset=base,
                           partition_leader_epoch=log.leader_epoch)
    log.append(batches.stored_batch(memoryview(data), base, log.leader_epoch))
    return base


@dataclass
class DecodedBatch:
    header: rec.BatchHeader
    records: list[rec.Record]


def decoded_batches(log: PartitionLog, from_offset: int = 0) -> list[DecodedBatch]:
    """The partition's batches from ``from_offset``, decoded; KafkaError CORRUPT_MESSAGE naming the partition
    and offsets for a batch that does not decode (only ``mock.produce.validation=envelope`` stores one)."""
    out = []
    for stored in log.batches:
        if stored.last_offset < max(from_offset, log.log_start_offset):
            continue
        try:
            header, records = batches.decode_stored(stored)
        except KafkaError as exc:
            raise KafkaError(exc.code, f"{log.topic}-{log.index} offsets {stored.base_offset}..{stored.last_offset}: "
                                       f"{exc.message}") from None
        out.append(DecodedBatch(header, records))
    return out


def _text(data: Any) -> str | None:
    if data is None:
        return None
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return None


def _b64(data: Any) -> str | None:
    return None if data is None else base64.b64encode(bytes(data)).decode("ascii")


def aborted_offsets(log: PartitionLog) -> set[int]:
    """Offsets of data records whose transaction ended with an ABORT marker."""
    open_txn: dict[int, list[int]] = {}
    aborted: set[int] = set()
    for batch in decoded_batches(log):
        h = batch.header
        if h.is_control:
            commit = rec.parse_control_record(batch.records[0])[1] == 1 if batch.records else True
            offsets = open_txn.pop(h.producer_id, [])
            if not commit:
                aborted.update(offsets)
        elif h.is_transactional:
            open_txn.setdefault(h.producer_id, []).extend(h.base_offset + r.offset_delta for r in batch.records)
    return aborted


def read_records(log: PartitionLog, offset: int = 0, limit: int = 100) -> list[dict[str, Any]]:
    """Up to ``limit`` data records from ``offset`` as plain data (UTF-8 text where it decodes, base64 always)."""
    aborted = aborted_offsets(log)
    out: list[dict[str, Any]] = []
    for batch in decoded_batches(log, offset):
        h = batch.header
        if h.is_control:
            continue
        for r in batch.records:
            at = h.base_offset + r.offset_delta
            if at < offset or at < log.log_start_offset:
                continue
            out.append({
                "partition": log.index, "offset": at, "timestamp": h.base_timestamp + r.timestamp_delta,
                "key": _text(r.key), "value": _text(r.value), "key_b64": _b64(r.key), "value_b64": _b64(r.value),
                "headers": [{"key": k, "value_b64": _b64(v)} for k, v in r.headers],
                "producer_id": h.producer_id, "transactional": h.is_transactional, "aborted": at in aborted,
            })
            if len(out) >= limit:
                return out
    return out


@dataclass
class TopicAudit:
    """What is in a topic, counted from its batches."""

    records: int = 0  # data records (control records excluded)
    committed: int = 0  # non-transactional records plus records of committed transactions
    aborted: int = 0
    open: int = 0  # records of transactions not ended yet
    commit_markers: int = 0
    abort_markers: int = 0
    sequence_gaps: list[str] = field(default_factory=list)
    sequence_duplicates: list[str] = field(default_factory=list)
    committed_values: Counter[bytes] = field(default_factory=Counter)

    @property
    def duplicate_values(self) -> int:
        """Committed records whose value appeared before (the extra copies)."""
        return sum(n - 1 for n in self.committed_values.values() if n > 1)

    def to_dict(self) -> dict[str, Any]:
        return {"records": self.records, "committed": self.committed, "aborted": self.aborted, "open": self.open,
                "commit_markers": self.commit_markers,
                "abort_markers": self.abort_markers, "sequence_gaps": self.sequence_gaps[:20],
                "sequence_duplicates": self.sequence_duplicates[:20], "duplicate_values": self.duplicate_values}


def audit_topic(logs: list[PartitionLog]) -> TopicAudit:
    audit = TopicAudit()
    for log in logs:
        _audit_partition(log, audit)
    return audit


def _audit_partition(log: PartitionLog, audit: TopicAudit) -> None:
    where = f"{log.topic}-{log.index}"
    last_seq: dict[int, tuple[int, int]] = {}  # producer id -> (epoch, last sequence)
    seen: dict[int, set[tuple[int, int]]] = {}  # producer id -> (epoch, sequence) pairs
    open_txn: dict[int, list[bytes]] = {}
    for batch in decoded_batches(log):
        h = batch.header
        if h.is_control:
            commit = rec.parse_control_record(batch.records[0])[1] == 1 if batch.records else True
            values = open_txn.pop(h.producer_id, None)
            if values is None:
                continue
            if commit:
                audit.commit_markers += 1
                audit.committed += len(values)
                audit.committed_values.update(values)
            else:
                audit.abort_markers += 1
                audit.aborted += len(values)
            audit.open -= len(values)
            continue
        audit.records += len(batch.records)
        values = [b"" if r.value is None else bytes(r.value) for r in batch.records]
        if h.is_transactional:
            open_txn.setdefault(h.producer_id, []).extend(values)
            audit.open += len(values)
        else:
            audit.committed += len(values)
            audit.committed_values.update(values)
        if h.producer_id >= 0 and h.base_sequence >= 0:
            _check_sequences(h, where, last_seq, seen, audit)


def _check_sequences(h: rec.BatchHeader, where: str, last_seq: dict[int, tuple[int, int]],
                     seen: dict[int, set[tuple[int, int]]], audit: TopicAudit) -> None:
    pid, epoch = h.producer_id, h.producer_epoch
    pairs = seen.setdefault(pid, set())
    sequences = [(h.base_sequence + i) % 2**31 for i in range(h.record_count)]
    for seq in sequences:
        if (epoch, seq) in pairs:
            audit.sequence_duplicates.append(f"{where}: producer {pid} epoch {epoch} sequence {seq} at offset "
                                             f"{h.base_offset}")
        pairs.add((epoch, seq))
    previous = last_seq.get(pid)
    if previous is not None and previous[0] == epoch and h.base_sequence != (previous[1] + 1) % 2**31:
        audit.sequence_gaps.append(f"{where}: producer {pid} epoch {epoch} jumps from sequence {previous[1]} to "
                                   f"{h.base_sequence} at offset {h.base_offset}")
    if previous is None and h.base_sequence != 0 and epoch == 0:
        audit.sequence_gaps.append(f"{where}: producer {pid} starts at sequence {h.base_sequence}")
    last_seq[pid] = (epoch, sequences[-1] if sequences else h.base_sequence - 1)
