"""Legacy message sets, magic 0 (Kafka 0.8) and magic 1 (Kafka 0.10, adds timestamps).

A message set is a bare sequence of entries (no count prefix), each::

    offset int64 | message_size int32 | crc uint32 | magic int8 | attributes int8
    | timestamp int64 (magic 1 only) | key (int32 length, -1 null) | value (int32 length, -1 null)

The CRC is CRC-32 (zlib) of magic..end.  Attribute bits 0-2 name a codec (1 gzip, 2 snappy,
3 lz4 at magic 1 only), bit 3 the timestamp type at magic 1 (0 CreateTime, 1 LogAppendTime).

A compressed *wrapper* message holds, in its value, a compressed message set of plain inner
messages (one level only: Kafka rejects deeper nesting, and so do we).  At magic 1 inner
offsets are relative: ``absolute = wrapper_offset - last_inner_relative + inner_relative`` (the
wrapper carries the offset of its last inner message); as in Kafka, when that base would be
negative (a producer's wrapper left at offset 0) inner offsets stay as written.  At magic 0
inner offsets are absolute.
When a magic-1 wrapper is LogAppendTime, its timestamp applies to all inner messages.

Decoding raises only :class:`~mockbroker.codec_errors.CodecError` subclasses.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mockbroker.codec_errors import (
    CorruptRecordError,
    InvalidLengthError,
    InvalidValueError,
    TruncatedError,
    UnsupportedCompressionError,
)
from mockbroker.records.compression import DEFAULT_MAX_SIZE, LZ4, NONE, SNAPPY, compress, decompress

__all__ = [
    "LegacyMessage",
    "LegacyMessageInput",
    "build_message_set",
    "decode_message_set",
    "legacy_codec_allowed",
]

Buffer = bytes | bytearray | memoryview

NO_TIMESTAMP = -1
ATTR_CODEC_MASK = 0x07
ATTR_LOG_APPEND_TIME = 0x08
LOG_OVERHEAD = 12
MAGIC_OFFSET = 16
_MIN_SIZE = (14, 22)  # smallest message_size at magic 0 / 1
_KEY_OFFSET = (18, 26)  # key length field position inside an entry at magic 0 / 1

_ENTRY_HEAD = struct.Struct(">qiI")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")
_BODY_V0 = struct.Struct(">bb")
_BODY_V1 = struct.Struct(">bbq")


@dataclass(slots=True)
class LegacyMessage:
    """One (flattened) message of a v0/v1 message set.

    ``timestamp`` is -1 and ``timestamp_type`` -1 at magic 0.  Inner messages of a compressed
    wrapper carry their absolute offsets and the wrapper's timestamp type.
    """

    offset: int
    magic: int
    attributes: int
    timestamp: int
    timestamp_type: int
    key: bytes | memoryview | None
    value: bytes | memoryview | None

    def __repr__(self) -> str:
        key = None if self.key is None else bytes(self.key)
        value = None if self.value is None else bytes(self.value)
        return (
            f"LegacyMessage(offset={self.offset}, magic={self.magic}, attributes={self.attributes}, "
            f"timestamp={self.timestamp}, timestamp_type={self.timestamp_type}, key={key!r}, value={value!r})"
        )


#: What :func:`build_message_set` accepts per message: a :class:`LegacyMessage` or a tuple
#: ``(key, value)``, ``(key, value, timestamp)`` or ``(key, value, timestamp, offset)``.
LegacyMessageInput = LegacyMessage | tuple[Any, ...]


def legacy_codec_allowed(codec: int, magic: int) -> bool:
    """Whether a magic 0/1 wrapper may use ``codec`` (Kafka: gzip, snappy; lz4 at magic 1)."""
    return 0 <= codec <= SNAPPY or (codec == LZ4 and magic == 1)


def _view(buf: Buffer) -> memoryview:
    view = memoryview(buf)
    return view if view.format == "B" else view.cast("B")


# ---------------------------------------------------------------------------------------------
# decoding


def decode_message_set(
    buf: Buffer, max_size: int = DEFAULT_MAX_SIZE, *, allow_partial_tail: bool = False
) -> list[LegacyMessage]:
    """Decode a v0/v1 message set into its messages, flattening compressed wrappers.

    Every entry's CRC is checked.  ``max_size`` caps each wrapper's decompressed size.  A
    partial trailing entry raises :class:`TruncatedError` unless ``allow_partial_tail``.
    """
    view = _view(buf)
    out: list[LegacyMessage] = []
    pos = 0
    n = len(view)
    while pos < n:
        entry = _parse_entry(view, pos, n, "message set", allow_partial_tail)
        if entry is None:
            break
        end, message, value_pos = entry
        codec = message.attributes & ATTR_CODEC_MASK
        if codec == NONE:
            out.append(message)
        else:
            _unwrap(message, codec, value_pos, max_size, out)
        pos = end
    return out


def _parse_entry(
    view: memoryview, pos: int, n: int, path: str, allow_partial: bool = False
) -> tuple[int, LegacyMessage, int] | None:
    """Parse the entry at ``pos``: (end, message, value position), or None for a partial tail."""
    if n - pos <= MAGIC_OFFSET:
        if allow_partial:
            return None
        raise TruncatedError(f"message entry header is truncated to {n - pos} bytes", pos, path)
    offset, size, crc = _ENTRY_HEAD.unpack_from(view, pos)
    magic = view[pos + MAGIC_OFFSET]
    if magic > 1:
        raise InvalidValueError(f"message magic is {magic}, expected 0 or 1", pos + MAGIC_OFFSET, path)
    if size < _MIN_SIZE[magic]:
        raise InvalidLengthError(f"message size {size} is below {_MIN_SIZE[magic]}", pos + 8, path)
    end = pos + LOG_OVERHEAD + size
    if end > n:
        if allow_partial:
            return None
        raise TruncatedError(f"message of {size + LOG_OVERHEAD} bytes is truncated to {n - pos}", pos, path)
    actual = zlib.crc32(view[pos + MAGIC_OFFSET : end])
    if actual != crc:
        raise CorruptRecordError(
            f"message CRC is {crc:#010x} but the data has {actual:#010x}", pos + 12, path
        )
    attributes = view[pos + MAGIC_OFFSET + 1]
    if magic:
        (timestamp,) = _INT64.unpack_from(view, pos + 18)
        timestamp_type = 1 if attributes & ATTR_LOG_APPEND_TIME else 0
    else:
        timestamp = timestamp_type = NO_TIMESTAMP
    p = pos + _KEY_OFFSET[magic]
    key, p = _read_bytes(view, p, end, "key", path)
    if p + 4 > end:
        raise InvalidLengthError("message value length overruns the message", p, path)
    value_pos = p
    value, p = _read_bytes(view, p, end, "value", path)
    if p != end:
        raise CorruptRecordError(f"{end - p} bytes follow the message value", p, path)
    return end, LegacyMessage(offset, magic, attributes, timestamp, timestamp_type, key, value), value_pos


def _read_bytes(view: memoryview, p: int, end: int, what: str, path: str) -> tuple[memoryview | None, int]:
    (size,) = _INT32.unpack_from(view, p)
    p += 4
    if size == -1:
        return None, p
    if size < 0 or p + size > end:
        raise InvalidLengthError(f"message {what} length {size} is invalid", p - 4, path)
    return view[p : p + size], p + size


def _unwrap(
    wrapper: LegacyMessage, codec: int, value_pos: int, max_size: int, out: list[LegacyMessage]
) -> None:
    magic = wrapper.magic
    if not legacy_codec_allowed(codec, magic):
        # Magic-0 LZ4 used a broken frame header checksum (KAFKA-3160); we do not read it.
        raise UnsupportedCompressionError(
            f"compression codec {codec} is not allowed at magic {magic}", value_pos
        )
    if wrapper.value is None:
        raise CorruptRecordError("compressed wrapper message has a null value", value_pos)
    data = memoryview(decompress(codec, wrapper.value, max_size, value_pos + 4))
    path = f"compressed message set of the wrapper at byte {value_pos}"
    inner: list[LegacyMessage] = []
    pos = 0
    n = len(data)
    while pos < n:
        entry = _parse_entry(data, pos, n, path)
        assert entry is not None  # allow_partial is off
        end, message, _ = entry
        if message.attributes & ATTR_CODEC_MASK:
            raise CorruptRecordError("compressed message set holds another compressed message", pos, path)
        if message.magic != magic:
            raise InvalidValueError(
                f"inner message magic {message.magic} in a magic {magic} wrapper", pos, path
            )
        inner.append(message)
        pos = end
    if not inner:
        raise CorruptRecordError("compressed wrapper message holds no messages", value_pos)
    if magic:
        # As in Kafka, a negative base (a producer's wrapper at offset 0 holding relative
        # offsets 0..n-1) leaves the inner offsets as written.
        shift = wrapper.offset - inner[-1].offset
        if shift < 0:
            shift = 0
        log_append = wrapper.timestamp_type == 1
        for message in inner:
            message.offset += shift
            message.timestamp_type = wrapper.timestamp_type
            if log_append:
                message.timestamp = wrapper.timestamp
    out.extend(inner)


# ---------------------------------------------------------------------------------------------
# encoding


def _encode_message(
    out: bytearray,
    offset: int,
    magic: int,
    attributes: int,
    timestamp: int,
    key: Buffer | None,
    value: Buffer | None,
) -> None:
    parts: list[Buffer] = [
        _BODY_V1.pack(magic, attributes, timestamp) if magic else _BODY_V0.pack(magic, attributes)
    ]
    for data in (key, value):
        if data is None:
            parts.append(b"\xff\xff\xff\xff")
        else:
            parts.append(_INT32.pack(len(data)))
            parts.append(data)
    body = b"".join(parts)
    out += _ENTRY_HEAD.pack(offset, len(body) + 4, zlib.crc32(body))
    out += body


def _normalize(messages: Iterable[LegacyMessageInput], base_offset: int) -> list[tuple[Any, ...]]:
    items = []
    for index, item in enumerate(messages):
        if isinstance(item, LegacyMessage):
            items.append((item.key, item.value, item.timestamp, item.offset))
        else:
            timestamp = item[2] if len(item) > 2 and item[2] is not None else NO_TIMESTAMP
            offset = item[3] if len(item) > 3 and item[3] is not None else base_offset + index
            items.append((item[0], item[1], timestamp, offset))
    return items


def build_message_set(
    messages: Iterable[LegacyMessageInput],
    magic: int,
    compression: int = NONE,
    base_offset: int = 0,
    log_append_time: int | None = None,
    *,
    compression_level: int | None = None,
) -> bytes:
    """Encode a magic 0/1 message set.

    Messages are :class:`LegacyMessage` objects (their offset and timestamp are used) or tuples
    ``(key, value[, timestamp[, offset]])``; a missing offset is ``base_offset`` + index and a
    missing timestamp is -1.  Timestamps are dropped at magic 0.

    With ``compression`` the messages go into one wrapper (snappy in xerial framing, as Java
    writes it) whose offset is the last message's; at magic 1 inner offsets are relative to the
    first message and the wrapper timestamp is the largest inner one.  ``log_append_time``
    (magic 1) marks the set LogAppendTime: plain messages get that timestamp, a wrapper gets it
    and the type bit (inner messages are left as they are, as Kafka does).
    """
    if magic not in (0, 1):
        raise InvalidValueError(f"message set magic must be 0 or 1, not {magic}")
    if not legacy_codec_allowed(compression, magic):
        raise UnsupportedCompressionError(f"compression codec {compression} is not allowed at magic {magic}")
    items = _normalize(messages, base_offset)
    out = bytearray()
    if not items:
        return b""
    log_append = magic == 1 and log_append_time is not None
    if compression == NONE:
        attributes = ATTR_LOG_APPEND_TIME if log_append else 0
        for key, value, timestamp, offset in items:
            stamp = log_append_time if log_append else timestamp
            _encode_message(out, offset, magic, attributes, stamp, key, value)  # type: ignore[arg-type]  # log_append: log_append_time is not None
        return bytes(out)
    inner = bytearray()
    first = items[0][3]
    for key, value, timestamp, offset in items:
        _encode_message(inner, offset - first if magic else offset, magic, 0, timestamp, key, value)
    payload = compress(compression, inner, level=compression_level, xerial=compression == SNAPPY)
    attributes = compression | (ATTR_LOG_APPEND_TIME if log_append else 0)
    stamp = log_append_time if log_append else max(item[2] for item in items)
    _encode_message(out, items[-1][3], magic, attributes, stamp, None, payload)  # type: ignore[arg-type]  # log_append: log_append_time is not None
    return bytes(out)
