"""Kafka record batches, magic 2 (the format of every produce and fetch since Kafka 0.11).

Layout (big-endian), 61-byte header then records::

    0  baseOffset int64        8  batchLength int32 (bytes after this field)
    12 partitionLeaderEpoch    16 magic int8 (= 2)     17 crc uint32 (CRC-32C of 21..end)
    21 attributes int16        23 lastOffsetDelta int32
    27 baseTimestamp int64     35 maxTimestamp int64   43 producerId int64
    51 producerEpoch int16     53 baseSequence int32   57 recordCount int32
    61 records (compressed as one block when attributes bits 0-2 are non-zero)

Each record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
key (varint length, -1 null), value (same), header count varint, headers (key: varint length
and UTF-8, value: varint length, -1 null).

Decoders raise only :class:`~mockbroker.codec_errors.CodecError` subclasses naming the field
and byte offset.  In compressed batches, record offsets in messages are positions in the
decompressed record data (the error's ``path`` says so).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from mockbroker.codec_errors import (
    CorruptRecordError,
    InvalidLengthError,
    InvalidValueError,
    TruncatedError,
    UnsupportedCompressionError,
)
from mockbroker.plain import Slotted
from mockbroker.records.compression import DEFAULT_MAX_SIZE, NONE, ZSTD, compress, decompress
from mockbroker.records.record import Record, decode_records, encode_record

_crc32c: Callable[[Buffer], int] | None = None


def crc32c_function() -> Callable[[Buffer], int]:
    """The CRC-32C function (mockbroker's folding one where the CPU has VPCLMULQDQ with AVX-512, else
    the crc32c package's), loaded on first use (see records/crc.py)."""
    global _crc32c
    if _crc32c is None:
        from mockbroker.records.crc import load_crc32c

        _crc32c = load_crc32c()
    return _crc32c


def crc32c(data: Buffer) -> int:
    """CRC-32C of ``data``."""
    return (_crc32c or crc32c_function())(data)

__all__ = [
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "NO_TIMESTAMP",
    "BatchHeader",
    "Record",
    "RecordInput",
    "build_batch",
    "build_control_batch",
    "decode_batch",
    "iter_batches",
    "parse_batch_header",
    "parse_control_record",
    "parse_control_value",
    "set_base_offset",
    "set_log_append_time",
    "set_partition_leader_epoch",
    "verify_batch",
]

Buffer = bytes | bytearray | memoryview

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes batchLength does not count
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
RECORD_COUNT_OFFSET = 57
NO_TIMESTAMP = -1

ATTR_CODEC_MASK = 0x07
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

CONTROL_ABORT = 0
CONTROL_COMMIT = 1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


class BatchHeader(Slotted):
    """The 61-byte header of a v2 record batch (field names follow Kafka's)."""

    __slots__ = ("attributes", "base_offset", "base_sequence", "base_timestamp", "batch_length", "crc",
                 "last_offset_delta", "magic", "max_timestamp", "partition_leader_epoch", "producer_epoch",
                 "producer_id", "record_count")

    def __init__(self, base_offset: int, batch_length: int, partition_leader_epoch: int, magic: int, crc: int,
                 attributes: int, last_offset_delta: int, base_timestamp: int, max_timestamp: int, producer_id: int,
                 producer_epoch: int, base_sequence: int, record_count: int) -> None:
        self.base_offset = base_offset
        self.batch_length = batch_length
        self.partition_leader_epoch = partition_leader_epoch
        self.magic = magic
        self.crc = crc
        self.attributes = attributes
        self.last_offset_delta = last_offset_delta
        self.base_timestamp = base_timestamp
        self.max_timestamp = max_timestamp
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.record_count = record_count

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        """0 for CreateTime, 1 for LogAppendTime."""
        return 1 if self.attributes & ATTR_LOG_APPEND_TIME else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & ATTR_DELETE_HORIZON)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies (``batchLength`` + 12)."""
        return self.batch_length + LOG_OVERHEAD


#: What :func:`build_batch` accepts per record: a :class:`Record`, or a tuple
#: ``(key, value)``, ``(key, value, headers)`` or ``(key, value, headers, timestamp)``.
RecordInput = Record | tuple[Any, ...]


def _view(buf: Buffer) -> memoryview:
    view = memoryview(buf)
    return view if view.format == "B" else view.cast("B")


# ---------------------------------------------------------------------------------------------
# header / verification


def parse_batch_header(buf: Buffer, pos: int = 0) -> BatchHeader:
    """Read the 61-byte v2 header at ``pos`` (checks magic and batchLength, not the CRC)."""
    n = len(buf)
    if pos + MAGIC_OFFSET >= n:
        raise TruncatedError(f"record batch header needs {HEADER_SIZE} bytes, got {n - pos}", pos)
    magic = buf[pos + MAGIC_OFFSET]
    if magic != 2:
        raise InvalidValueError(f"record batch magic is {magic}, expected 2", pos + MAGIC_OFFSET)
    if pos + HEADER_SIZE > n:
        raise TruncatedError(f"record batch header needs {HEADER_SIZE} bytes, got {n - pos}", pos)
    header = BatchHeader(*_HEADER.unpack_from(buf, pos))
    if header.batch_length < MIN_BATCH_LENGTH:
        raise InvalidLengthError(f"batchLength {header.batch_length} is below {MIN_BATCH_LENGTH}", pos + 8)
    return header


def verify_batch(buf: Buffer, *, check_crc: bool = True) -> BatchHeader:
    """Validate what a broker checks on produce without decoding records; return the header.

    ``buf`` must hold exactly one batch.  Checks magic, batchLength against the buffer, the
    CRC-32C, the codec id and a non-negative record count.
    """
    view = _view(buf)
    header = parse_batch_header(view)
    n = len(view)
    size = header.batch_length + LOG_OVERHEAD
    if size > n:
        raise TruncatedError(f"record batch of {size} bytes is truncated to {n}", 8)
    if size < n:
        raise InvalidLengthError(f"{n - size} bytes follow the {size}-byte record batch", size)
    if check_crc:
        actual = crc32c(view[ATTRIBUTES_OFFSET:])
        if actual != header.crc:
            raise CorruptRecordError(
                f"record batch CRC is {header.crc:#010x} but the data has {actual:#010x}", CRC_OFFSET
            )
    if header.attributes & ATTR_CODEC_MASK > ZSTD:
        raise UnsupportedCompressionError(
            f"unknown compression codec {header.attributes & ATTR_CODEC_MASK}", ATTRIBUTES_OFFSET
        )
    if header.record_count < 0:
        raise InvalidLengthError(f"record count {header.record_count} is negative", RECORD_COUNT_OFFSET)
    return header


# ---------------------------------------------------------------------------------------------
# decoding


def decode_batch(
    buf: Buffer, *, max_size: int = DEFAULT_MAX_SIZE, check_crc: bool = True
) -> tuple[BatchHeader, list[Record]]:
    """Decode one v2 batch (``buf`` holds exactly the batch) into its header and records.

    Compressed record data is decompressed with ``max_size`` as the cap; record keys and values
    are memoryviews into ``buf`` (uncompressed) or into the decompressed bytes.
    """
    view = _view(buf)
    header = verify_batch(view, check_crc=check_crc)
    codec = header.attributes & ATTR_CODEC_MASK
    if codec == NONE:
        records = decode_records(view, HEADER_SIZE, len(view), header.record_count, "records")
    else:
        data = decompress(codec, view[HEADER_SIZE:], max_size, HEADER_SIZE)
        records = decode_records(memoryview(data), 0, len(data), header.record_count, "decompressed records")
    return header, records


# ---------------------------------------------------------------------------------------------
# encoding


def build_batch(
    records: Iterable[RecordInput],
    *,
    base_offset: int = 0,
    compression: int = NONE,
    base_timestamp: int | None = None,
    timestamp_type: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = -1,
    compression_level: int | None = None,
    xerial: bool = False,
) -> bytes:
    """Encode a v2 batch, computing lastOffsetDelta, maxTimestamp, recordCount and the CRC.

    ``records`` items are :class:`Record` objects (deltas used as given, relative to
    ``base_offset`` and ``base_timestamp``) or tuples ``(key, value[, headers[, timestamp]])``
    whose offset delta is their index and whose timestamp is absolute (None: the base).
    ``base_timestamp`` defaults to the first tuple's timestamp, else the current time.
    An empty batch gets lastOffsetDelta -1 and maxTimestamp -1.
    ``compression_level`` and ``xerial`` are passed to :func:`compress`.
    """
    items = list(records)
    if base_timestamp is None:
        first = items[0] if items else None
        if isinstance(first, tuple) and len(first) > 3 and first[3] is not None:
            base_timestamp = first[3]
        else:
            base_timestamp = int(time.time() * 1000)
    body = bytearray()
    max_delta: int | None = None
    last_delta = -1
    headers: Iterable[tuple[str | bytes, Buffer | None]]
    for index, item in enumerate(items):
        if isinstance(item, Record):
            offset_delta, ts_delta = item.offset_delta, item.timestamp_delta
            key, value, headers, attributes = item.key, item.value, item.headers, item.attributes
        else:
            key, value = item[0], item[1]
            headers = item[2] if len(item) > 2 and item[2] is not None else ()
            timestamp = item[3] if len(item) > 3 and item[3] is not None else base_timestamp
            offset_delta, ts_delta, attributes = index, timestamp - base_timestamp, 0
        encode_record(body, offset_delta, ts_delta, key, value, headers, attributes)
        last_delta = offset_delta
        if max_delta is None or ts_delta > max_delta:
            max_delta = ts_delta
    max_timestamp = NO_TIMESTAMP if max_delta is None else base_timestamp + max_delta
    return batch_from_body(
        body, len(items), last_delta, base_timestamp, max_timestamp, base_offset=base_offset,
        compression=compression, timestamp_type=timestamp_type, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, transactional=transactional, control=control,
        partition_leader_epoch=partition_leader_epoch, compression_level=compression_level, xerial=xerial,
    )


def batch_from_body(
    body: Buffer,
    record_count: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    *,
    base_offset: int = 0,
    compression: int = NONE,
    timestamp_type: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = -1,
    compression_level: int | None = None,
    xerial: bool = False,
) -> bytes:
    """A v2 batch around already encoded records (``body``): compression, header and CRC."""
    if compression & ~ATTR_CODEC_MASK or compression > ZSTD:
        raise UnsupportedCompressionError(f"unknown compression codec {compression}")
    payload = compress(compression, body, level=compression_level, xerial=xerial) if compression else body
    attributes = compression
    if timestamp_type:
        attributes |= ATTR_LOG_APPEND_TIME
    if transactional:
        attributes |= ATTR_TRANSACTIONAL
    if control:
        attributes |= ATTR_CONTROL
    out = bytearray(HEADER_SIZE)
    _HEADER.pack_into(
        out, 0, base_offset, MIN_BATCH_LENGTH + len(payload), partition_leader_epoch, 2, 0,
        attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
        base_sequence, record_count,
    )  # fmt: skip
    out += payload
    _UINT32.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# control records


def build_control_batch(
    commit: bool,
    producer_id: int,
    producer_epoch: int,
    base_offset: int,
    timestamp: int,
    coordinator_epoch: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A transactional control batch holding one COMMIT (or ABORT) end-transaction marker."""
    key = _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = _CONTROL_VALUE.pack(0, coordinator_epoch)
    return build_batch(
        [Record(0, 0, key, value)],
        base_offset=base_offset,
        base_timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
        control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def parse_control_record(record: Record) -> tuple[int, int]:
    """The (version, type) of a control record's key; type 0 is ABORT, 1 is COMMIT."""
    key = record.key
    if key is None or len(key) < _CONTROL_KEY.size:
        raise InvalidValueError("control record key is shorter than 4 bytes")
    version, kind = _CONTROL_KEY.unpack_from(key, 0)
    if version < 0:
        raise InvalidValueError(f"control record version {version} is negative")
    return version, kind


def parse_control_value(record: Record) -> tuple[int, int]:
    """The (version, coordinatorEpoch) of an end-transaction marker's value."""
    value = record.value
    if value is None or len(value) < _CONTROL_VALUE.size:
        raise InvalidValueError("end-transaction marker value is shorter than 6 bytes")
    version, epoch = _CONTROL_VALUE.unpack_from(value, 0)
    return version, epoch


# ---------------------------------------------------------------------------------------------
# in-place rewrites


def _check_room(buf: Buffer, pos: int, needed: int) -> None:
    if pos < 0 or pos + needed > len(buf):
        raise TruncatedError(f"{needed} bytes needed at {pos}, buffer has {len(buf)}", pos)


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Overwrite the baseOffset (or a legacy entry's offset) at ``pos``; not covered by the CRC."""
    _check_room(buf, pos, 8)
    _INT64.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Overwrite the partitionLeaderEpoch of the v2 batch at ``pos``; not covered by the CRC."""
    _check_room(buf, pos, MAGIC_OFFSET + 1)
    if buf[pos + MAGIC_OFFSET] != 2:
        raise InvalidValueError(f"record batch magic is {buf[pos + MAGIC_OFFSET]}", pos + MAGIC_OFFSET)
    _INT32.pack_into(buf, pos + 12, epoch)


def set_log_append_time(buf: bytearray | memoryview, pos: int, timestamp: int) -> None:
    """Mark the v2 batch at ``pos`` LogAppendTime with maxTimestamp ``timestamp``; redo the CRC."""
    view = _view(buf)
    header = parse_batch_header(view, pos)
    _check_room(view, pos, header.size)
    _INT16.pack_into(view, pos + ATTRIBUTES_OFFSET, header.attributes | ATTR_LOG_APPEND_TIME)
    _INT64.pack_into(view, pos + MAX_TIMESTAMP_OFFSET, timestamp)
    crc = crc32c(view[pos + ATTRIBUTES_OFFSET : pos + header.size])
    _UINT32.pack_into(view, pos + CRC_OFFSET, crc)


# ---------------------------------------------------------------------------------------------
# walking a records blob

_LEGACY_MIN_SIZE = {0: 14, 1: 22, 2: MIN_BATCH_LENGTH}  # smallest message_size / batchLength


def iter_batches(buf: Buffer, *, allow_partial_tail: bool = False) -> Iterator[tuple[int, int, memoryview]]:
    """Walk a records blob (v2 batches and/or legacy message-set entries, in any mix).

    Yields ``(pos, magic, view)`` per entry, ``view`` being a zero-copy slice of the whole
    entry (its size is ``len(view)``).  Only the framing (offset, size, magic) is checked.
    A partial trailing entry raises :class:`TruncatedError` unless ``allow_partial_tail``
    (fetch responses may cut the last batch short), in which case it is silently dropped.
    """
    view = _view(buf)
    n = len(view)
    pos = 0
    while pos < n:
        if pos + MAGIC_OFFSET >= n:
            if allow_partial_tail:
                return
            raise TruncatedError(f"records entry header is truncated to {n - pos} bytes", pos)
        (length,) = _INT32.unpack_from(view, pos + 8)
        magic = view[pos + MAGIC_OFFSET]
        if magic > 2:
            raise InvalidValueError(f"records entry has unknown magic {magic}", pos + MAGIC_OFFSET)
        if length < _LEGACY_MIN_SIZE[magic]:
            raise InvalidLengthError(f"magic {magic} entry size {length} is too small", pos + 8)
        end = pos + LOG_OVERHEAD + length
        if end > n:
            if allow_partial_tail:
                return
            raise TruncatedError(f"records entry of {end - pos} bytes is truncated to {n - pos}", pos)
        yield pos, magic, view[pos:end]
        pos = end
