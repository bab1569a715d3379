"""The records inside a v2 batch: the :class:`Record` type and its varint-based codec.

Record layout: length varint (bytes after it), attributes int8, timestampDelta varlong,
offsetDelta varint, keyLength varint (-1 null) and key, valueLength varint (-1 null) and value,
header count varint, then per header: keyLength varint and UTF-8 key, valueLength varint (-1
null) and value.

:func:`decode_records` walks a block of records with inline one-byte varint fast paths; keys and
values come back as memoryviews of the block (no copies), header values as bytes.  It raises only
:class:`~mockbroker.codec_errors.CodecError` subclasses.
"""

from __future__ import annotations

from collections.abc import Iterable

from mockbroker.codec_errors import (
    CorruptRecordError,
    InvalidLengthError,
    InvalidValueError,
    RecordCountError,
    TruncatedError,
)
from mockbroker.plain import Slotted
from mockbroker.records.varint import append_varint, read_zigzag

__all__ = ["MIN_RECORD_SIZE", "Record", "decode_records", "encode_record"]

Buffer = bytes | bytearray | memoryview

MIN_RECORD_SIZE = 7  # length, attributes, timestampDelta, offsetDelta, keyLen, valueLen, count
_MIN_RECORD_BODY = 6


class Record(Slotted):
    """One record of a v2 batch. Decoded keys/values are memoryviews into the batch data."""

    __slots__ = ("attributes", "headers", "key", "offset_delta", "timestamp_delta", "value")

    def __init__(self, offset_delta: int, timestamp_delta: int, key: bytes | memoryview | None,
                 value: bytes | memoryview | None, headers: list[tuple[str, bytes | None]] | None = None,
                 attributes: int = 0) -> None:
        self.offset_delta = offset_delta
        self.timestamp_delta = timestamp_delta
        self.key = key
        self.value = value
        self.headers: list[tuple[str, bytes | None]] = [] if headers is None else headers
        self.attributes = attributes

    def __repr__(self) -> str:
        key = None if self.key is None else bytes(self.key)
        value = None if self.value is None else bytes(self.value)
        return (
            f"Record(offset_delta={self.offset_delta}, timestamp_delta={self.timestamp_delta}, "
            f"key={key!r}, value={value!r}, headers={self.headers!r}, attributes={self.attributes})"
        )


def decode_records(  # noqa: C901 -- per record: five varints read inline (1 and 2 bytes) and each field checked
    view: memoryview, pos: int, end: int, count: int, path: str = "records"
) -> list[Record]:
    """Decode exactly ``count`` records filling ``view[pos:end]`` (``path`` names it in errors)."""
    room = (end - pos) // MIN_RECORD_SIZE
    if count > room:
        raise RecordCountError(
            f"batch declares {count} records but {end - pos} bytes hold at most {room}", pos, path
        )
    records: list[Record] = []
    append = records.append
    index = 0
    try:
        for index in range(count):
            if pos >= end:
                raise RecordCountError(f"batch declares {count} records but holds {index}", pos, path)
            b = view[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif view[pos + 1] < 0x80:
                b = (b & 0x7F) | (view[pos + 1] << 7)
                length = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                length, pos = read_zigzag(view, pos, 5)
            rec_end = pos + length
            if length < _MIN_RECORD_BODY or rec_end > end:
                raise InvalidLengthError(
                    f"record {index} length {length} does not fit in {end - pos} bytes", pos, path
                )
            attributes = view[pos]
            b = view[pos + 1]
            if b < 0x80:
                timestamp_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            elif view[pos + 2] < 0x80:
                b = (b & 0x7F) | (view[pos + 2] << 7)
                timestamp_delta = (b >> 1) ^ -(b & 1)
                pos += 3
            else:
                timestamp_delta, pos = read_zigzag(view, pos + 1, 10)
            b = view[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif view[pos + 1] < 0x80:
                b = (b & 0x7F) | (view[pos + 1] << 7)
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                offset_delta, pos = read_zigzag(view, pos, 5)
            # key
            b = view[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif view[pos + 1] < 0x80:
                b = (b & 0x7F) | (view[pos + 1] << 7)
                size = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                size, pos = read_zigzag(view, pos, 5)
            if size < 0:
                if size != -1:
                    raise InvalidLengthError(f"record {index} key length {size}", pos, path)
                key = None
            else:
                if pos + size > rec_end:
                    raise InvalidLengthError(f"record {index} key length {size} overruns it", pos, path)
                key = view[pos : pos + size]
                pos += size
            # value
            b = view[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif view[pos + 1] < 0x80:
                b = (b & 0x7F) | (view[pos + 1] << 7)
                size = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                size, pos = read_zigzag(view, pos, 5)
            if size < 0:
                if size != -1:
                    raise InvalidLengthError(f"record {index} value length {size}", pos, path)
                value = None
            else:
                if pos + size > rec_end:
                    raise InvalidLengthError(f"record {index} value length {size} overruns it", pos, path)
                value = view[pos : pos + size]
                pos += size
            # headers
            b = view[pos]
            if b == 0:
                headers: list[tuple[str, bytes | None]] = []
                pos += 1
            else:
                headers, pos = _decode_headers(view, pos, rec_end, index, path)
            if pos != rec_end:
                raise CorruptRecordError(
                    f"record {index} fields end {pos - rec_end:+d} bytes from its declared length",
                    pos,
                    path,
                )
            append(Record(offset_delta, timestamp_delta, key, value, headers, attributes))
    except IndexError:
        raise TruncatedError(f"record {index} is truncated", pos, path) from None
    if pos != end:
        raise RecordCountError(f"{end - pos} bytes follow the {count} records the batch declares", pos, path)
    return records


def _decode_headers(
    view: memoryview, pos: int, end: int, index: int, path: str
) -> tuple[list[tuple[str, bytes | None]], int]:
    count, pos = read_zigzag(view, pos, 5)
    if count < 0 or count > (end - pos) // 2:
        raise InvalidLengthError(f"record {index} header count {count} is invalid", pos, path)
    headers: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        size, pos = read_zigzag(view, pos, 5)
        if size < 0 or pos + size > end:
            raise InvalidLengthError(f"record {index} header key length {size} is invalid", pos, path)
        try:
            name = str(view[pos : pos + size], "utf-8")
        except UnicodeDecodeError:
            raise InvalidValueError(f"record {index} header key is not UTF-8", pos, path) from None
        pos += size
        size, pos = read_zigzag(view, pos, 5)
        if size < 0:
            if size != -1:
                raise InvalidLengthError(f"record {index} header value length {size}", pos, path)
            headers.append((name, None))
        else:
            if pos + size > end:
                raise InvalidLengthError(f"record {index} header value length {size} overruns", pos, path)
            headers.append((name, bytes(view[pos : pos + size])))
            pos += size
    return headers, pos


def _append_bytes(out: bytearray, data: Buffer | None) -> None:
    if data is None:
        out.append(1)  # zigzag(-1)
    else:
        append_varint(out, len(data))
        out += data


def encode_record(
    out: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    key: Buffer | None,
    value: Buffer | None,
    headers: Iterable[tuple[str | bytes, Buffer | None]],
    attributes: int,
) -> None:
    """Append one encoded record (its length varint first) to ``out``."""
    body = bytearray()
    body.append(attributes & 0xFF)
    append_varint(body, timestamp_delta)
    append_varint(body, offset_delta)
    _append_bytes(body, key)
    _append_bytes(body, value)
    headers = list(headers)
    append_varint(body, len(headers))
    for name, data in headers:
        _append_bytes(body, name.encode("utf-8") if isinstance(name, str) else name)
        _append_bytes(body, data)
    append_varint(out, len(body))
    out += body
