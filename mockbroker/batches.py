"""Between the wire and the log: validating produced record data into stored batches, and turning
stored batches into what an old fetch version can read.

Produce: every batch is checked as strictly as Kafka does (CRC, sizes, magic per request version,
record count, offsets, timestamps, compression allowed by the version), converted to magic 2 when
an old client sent magic 0/1, re-compressed when the topic's ``compression.type`` says so, and
stamped with the log-append time when the topic uses ``LogAppendTime``.  The stored batch keeps the
producer's bytes: only a 16-byte prefix (base offset, length, leader epoch) is written anew.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from mockbroker import records as rec
from mockbroker.codec_errors import (
    CodecError,
    CorruptRecordError,
    DecompressionCapError,
    UnsupportedCompressionError,
)
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.records.batch import BatchHeader, crc32c_function
from mockbroker.records.check import batch_envelope
from mockbroker.state.log import StoredBatch

_PREFIX = struct.Struct(">qii")  # base offset, batch length, partition leader epoch
_MAGIC_AT = 16
_MIN_ENTRY = 14  # Kafka's LegacyRecord.RECORD_OVERHEAD_V0: no entry (v0, v1 or v2) is shorter
_CODEC_IDS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4, "uncompressed": 0, "none": 0}
NO_TIMESTAMP = -1


@dataclass(slots=True)
class RecordError:
    batch_index: int
    message: str | None


class BatchRejected(KafkaError):
    """A partition's produce data was refused; ``record_errors`` lists records (v8+)."""

    def __init__(self, code: int, message: str, record_errors: list[RecordError] | None = None) -> None:
        super().__init__(code, message)
        self.record_errors = record_errors or []


@dataclass(slots=True)
class Policy:
    """What the topic asks of appended data."""

    max_message_bytes: int
    compression: str  # producer / uncompressed / gzip / ...
    log_append_time: bool
    before_max_ms: int
    after_max_ms: int
    now_ms: int
    compacted: bool = False
    # mock.produce.validation: True (strict, Kafka's checks) or False (envelope: no CRC, no
    # decompression, no per-record checks; the batch is stored as the producer sent it)
    check_records: bool = True


def split_batches(data: memoryview) -> list[memoryview]:
    """The entries of a records blob: v2 batches or v0/v1 messages, each with its 12-byte prefix."""
    out = []
    pos = 0
    end = len(data)
    while pos < end:
        if end - pos < 12:
            raise BatchRejected(ErrorCode.CORRUPT_MESSAGE, f"{end - pos} stray bytes after the last batch")
        size = struct.unpack_from(">i", data, pos + 8)[0]
        if size < _MIN_ENTRY:  # Kafka's ByteBufferLogInputStream: below the smallest (v0) message's overhead
            raise BatchRejected(ErrorCode.CORRUPT_MESSAGE,
                                f"Record size {size} is less than the minimum record overhead ({_MIN_ENTRY})")
        if pos + 12 + size > end:
            raise BatchRejected(ErrorCode.CORRUPT_MESSAGE, f"batch at byte {pos} claims {size} bytes, past the end")
        out.append(data[pos : pos + 12 + size])
        pos += 12 + size
    return out


def validate_produce(data: memoryview | None, version: int, policy: Policy) -> list[tuple[memoryview, Any]]:
    """Check one partition's records; return v2 batches ready to store (each one buffer), with their headers."""
    if data is None or len(data) == 0:
        raise BatchRejected(ErrorCode.INVALID_RECORD, "produce request carries no record batch for the partition")
    if version >= 3 and batch_envelope is not None:
        # the usual batch: everything checked before its records, and the records too when they are
        # not compressed, in one C call (None: the path below runs and names the problem)
        strict = policy.check_records
        try:
            fields = batch_envelope(data, version, policy.max_message_bytes, crc32c_function() if strict else None,
                                    _record_bounds(policy) if strict else None)
        except (TypeError, ValueError, OverflowError):  # e.g. a max.message.bytes past 64 bits
            fields = None
        if fields is not None:
            header = BatchHeader(*fields)
            records_checked = strict and not header.compression
            if (records_checked or not strict) and policy.compression == "producer" and not policy.log_append_time:
                return [(data, header)]  # the C call checked all _validate_v2 would, and nothing is rewritten
            return [_validate_v2(data, version, policy, header, records_checked=records_checked)]
    entries = split_batches(data)
    if version >= 3:
        if len(entries) != 1:
            raise BatchRejected(ErrorCode.INVALID_RECORD,
                                f"Produce v{version} must carry exactly one record batch per partition")
        if entries[0][_MAGIC_AT] != 2:
            raise BatchRejected(ErrorCode.INVALID_RECORD,
                                f"Produce v{version} only takes record batches with magic 2")
    if any(e[_MAGIC_AT] < 2 for e in entries):
        entries = _legacy_to_v2(data)
    return [_validate_v2(e, version, policy) for e in entries]


def _legacy_to_v2(data: memoryview) -> list[memoryview]:
    try:
        converted = rec.legacy_to_v2(data, base_offset=0)
    except CorruptRecordError as exc:
        raise BatchRejected(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
    except CodecError as exc:
        raise BatchRejected(ErrorCode.CORRUPT_MESSAGE, f"unreadable message set: {exc}") from None
    return split_batches(memoryview(converted))


def _validate_v2(batch: memoryview, version: int, policy: Policy, header: BatchHeader | None = None,
                 records_checked: bool = False) -> tuple[memoryview, Any]:
    """Check one v2 batch; ``header`` is given when its envelope is already checked (batch_envelope),
    ``records_checked`` when its records are too."""
    if header is None:
        if len(batch) > policy.max_message_bytes:
            raise BatchRejected(ErrorCode.MESSAGE_TOO_LARGE,
                                f"batch of {len(batch)} bytes exceeds max.message.bytes {policy.max_message_bytes}")
        header = _verified_header(batch, policy.check_records)
        if header.compression == 4 and version < 7:
            raise BatchRejected(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"zstd needs Produce v7+, got v{version}")
    problems = _record_problems(batch, header, policy) if policy.check_records and not records_checked else []
    if header.is_control:
        raise BatchRejected(ErrorCode.INVALID_RECORD, "clients are not allowed to write control records")
    if header.record_count == 0 or header.last_offset_delta + 1 != header.record_count:
        raise BatchRejected(ErrorCode.INVALID_RECORD,
                            f"batch offset range 0..{header.last_offset_delta} does not match its "
                            f"{header.record_count} records")
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise BatchRejected(ErrorCode.INVALID_RECORD, "idempotent batch without a base sequence")
    if problems:
        only_timestamps = all("timestamp" in message for _, message in problems)
        code = ErrorCode.INVALID_TIMESTAMP if only_timestamps else ErrorCode.INVALID_RECORD
        raise BatchRejected(code, problems[0][1], [RecordError(i, m) for i, m in problems])
    target = _target_codec(policy.compression, header.compression)
    if target == header.compression and not policy.log_append_time:
        return batch, header
    if target != header.compression:
        try:
            _, records = rec.decode_batch(batch, check_crc=policy.check_records)
        except CodecError as exc:  # only unchecked batches (mock.produce.validation=envelope) get here
            raise BatchRejected(ErrorCode.INVALID_RECORD, f"invalid record structure: {exc}") from None
        batch = memoryview(rec.build_batch(
            records,
            compression=target,
            base_timestamp=header.base_timestamp,
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence,
            transactional=header.is_transactional,
        ))
    if policy.log_append_time:
        stamped = bytearray(batch)
        rec.set_log_append_time(stamped, 0, policy.now_ms)
        batch = memoryview(stamped)
    return batch, rec.parse_batch_header(batch)


def _record_problems(batch: memoryview, header: BatchHeader, policy: Policy) -> list[tuple[int, str]]:
    """Kafka's per-record checks (LogValidator), decompressing first: [(record index, problem)]."""
    if header.compression:
        data = decompressed(batch, header.compression)
        start, path = 0, "decompressed records"
    else:
        data, start, path = batch, rec.HEADER_SIZE, "records"
    lo, hi, need_keys = _record_bounds(policy)
    try:
        return rec.check_records(data, start, len(data), header.record_count, header.base_timestamp,  # type: ignore[no-any-return]
                                 lo, hi, need_keys, path)
    except CodecError as exc:  # Kafka: InvalidRecordException ("Found invalid record structure", ...)
        raise BatchRejected(ErrorCode.INVALID_RECORD, f"invalid record structure: {exc}") from None


def _record_bounds(policy: Policy) -> tuple[int | None, int | None, bool]:
    """(lowest, highest timestamp a record may carry, keys required): Kafka's
    message.timestamp.before/after.max.ms around now (None, None: LogAppendTime overwrites them),
    keys for compacted topics."""
    if policy.log_append_time:
        return None, None, policy.compacted
    return policy.now_ms - policy.before_max_ms, policy.now_ms + policy.after_max_ms, policy.compacted


def _verified_header(batch: memoryview, check_crc: bool = True) -> Any:
    """The batch header once its size and CRC check out (Kafka's RecordBatch.ensureValid)."""
    try:
        return rec.verify_batch(batch, check_crc=check_crc)
    except CorruptRecordError as exc:  # sizes, CRC
        raise BatchRejected(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
    except UnsupportedCompressionError as exc:  # codec ids 5-7: Kafka's CompressionType.forId throws
        raise BatchRejected(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)) from None
    except CodecError as exc:  # a negative record count: Kafka's LogValidator, InvalidRecordException
        raise BatchRejected(ErrorCode.INVALID_RECORD, f"invalid record batch: {exc}") from None


def decompressed(batch: memoryview, codec: int) -> memoryview:
    """The batch's records, decompressed within the cap (records.compression.DEFAULT_MAX_SIZE).

    Kafka answers data its codec cannot read with UNKNOWN_SERVER_ERROR (a KafkaException, "Failed
    to decompress record stream").  Kafka has no cap: a bomb of zeros fails there as an invalid
    record (INVALID_RECORD) at its first record, without inflating the rest; the mock answers
    INVALID_RECORD for anything past the cap, having inflated at most about the cap.
    """
    try:
        return memoryview(rec.decompress(codec, batch[rec.HEADER_SIZE:], where=rec.HEADER_SIZE))
    except DecompressionCapError as exc:
        raise BatchRejected(ErrorCode.INVALID_RECORD, f"decompression bomb refused: {exc}") from None
    except CodecError as exc:
        raise BatchRejected(ErrorCode.UNKNOWN_SERVER_ERROR, f"Failed to decompress record stream: {exc}") from None


def _target_codec(policy: str, current: int) -> int:
    if policy == "producer":
        return current
    return _CODEC_IDS[policy]


def stored_batch(batch: memoryview, base_offset: int, leader_epoch: int, header: Any = None) -> StoredBatch:
    """A validated v2 batch placed at ``base_offset``: a fresh prefix, then the producer's bytes."""
    if header is None:
        header = rec.parse_batch_header(batch)
    prefix = _PREFIX.pack(base_offset, len(batch) - 12, leader_epoch)
    return StoredBatch(
        base_offset=base_offset,
        last_offset=base_offset + header.last_offset_delta,
        max_timestamp=header.max_timestamp,
        size=len(batch),
        buffers=(prefix, batch[16:]),
        producer_id=header.producer_id,
        is_transactional=header.is_transactional,
        is_control=header.is_control,
    )


def _unreadable(exc: CodecError) -> KafkaError:
    """A stored batch that does not decode: only mock.produce.validation=envelope stores one. Kafka
    answers a corrupt batch it reads with CORRUPT_MESSAGE for the partition."""
    return KafkaError(ErrorCode.CORRUPT_MESSAGE, f"a stored batch does not decode (stored unchecked): {exc}")


def decode_stored(stored: StoredBatch) -> tuple[BatchHeader, list[Any]]:
    """A stored batch's header and records; KafkaError CORRUPT_MESSAGE when it does not decode."""
    try:
        return rec.decode_batch(memoryview(b"".join(stored.buffers)))  # type: ignore[no-any-return]
    except CodecError as exc:
        raise _unreadable(exc) from None


def down_convert(buffers: list[Any], magic: int) -> bytes:
    """Stored v2 batches as a v0/v1 message set for Fetch v0-3 (headers dropped); KafkaError
    CORRUPT_MESSAGE when one does not decode."""
    try:
        return rec.v2_to_legacy(b"".join(buffers), magic)  # type: ignore[no-any-return]
    except CodecError as exc:
        raise _unreadable(exc) from None
