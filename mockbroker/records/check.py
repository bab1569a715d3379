"""A fast pass over the records of a v2 batch that checks them without building Record objects.

A broker must look at every record a producer sends (Kafka's LogValidator does): lengths that add
up, offset deltas 0..n-1, timestamps inside the allowed window, keys on compacted topics.  This pass
skips over keys, values and headers instead of slicing them, which makes it several times cheaper
than :func:`~mockbroker.records.record.decode_records`.  Structural damage raises CodecError;
per-record policy problems are returned so the caller can name them (Produce v8+ record_errors).

Where the optional C extension (``_speedups.c``) is built, a clean batch is confirmed by it in one C
call and this Python pass only runs when it says no, to name the problem.  ``MOCKBROKER_PURE_PYTHON=1``
turns the extension off; :data:`SPEEDUPS` says whether it is in use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mockbroker import native
from mockbroker.codec_errors import CorruptRecordError, InvalidLengthError, RecordCountError, TruncatedError
from mockbroker.records.record import MIN_RECORD_SIZE
from mockbroker.records.varint import read_zigzag

__all__ = ["SPEEDUPS", "batch_envelope", "check_records"]

NO_TIMESTAMP = -1


def _load_speedups(name: str) -> Callable[..., Any] | None:
    speedups = native.load("_speedups")  # None: built without a C compiler, or MOCKBROKER_PURE_PYTHON set
    return None if speedups is None else getattr(speedups, name, None)


_records_ok = _load_speedups("records_ok")
SPEEDUPS = _records_ok is not None
#: ``batch_envelope(buffer, produce_version, max_message_bytes, crc32c)``: the header fields of a
#: Produce v3+ batch whose envelope passes every check (see _speedups.c), else None; None when not built.
batch_envelope = _load_speedups("batch_envelope")


def check_records(  # noqa: C901 -- per record: five varints read inline (1 and 2 bytes) and each check Kafka makes
    view: memoryview,
    pos: int,
    end: int,
    count: int,
    base_timestamp: int,
    min_timestamp: int | None,
    max_timestamp: int | None,
    need_keys: bool = False,
    path: str = "records",
) -> list[tuple[int, str]]:
    """Check ``count`` records filling ``view[pos:end]``; return [(record index, problem)].

    ``min_timestamp``/``max_timestamp`` bound each record's timestamp (None: not checked);
    ``need_keys`` flags null keys (compacted topics)."""
    if count > (end - pos) // MIN_RECORD_SIZE:
        raise RecordCountError(f"batch declares {count} records but {end - pos} bytes cannot hold them", pos, path)
    check_ts = min_timestamp is not None and max_timestamp is not None
    if _records_ok is not None and _records_ok(view, pos, end, count, base_timestamp, _int64(min_timestamp),
                                               _int64(max_timestamp), check_ts, need_keys):
        return []
    problems: list[tuple[int, str]] = []
    index = 0
    try:
        for index in range(count):
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
            if length < 6 or rec_end > end:
                raise InvalidLengthError(f"record {index} length {length} does not fit", pos, path)
            b = view[pos + 1]  # after the attributes byte: timestampDelta
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            elif view[pos + 2] < 0x80:
                b = (b & 0x7F) | (view[pos + 2] << 7)
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 3
            else:
                ts_delta, pos = read_zigzag(view, pos + 1, 10)
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
            if offset_delta != index:
                problems.append((index, f"record {index} has offset delta {offset_delta}"))
            if check_ts:
                ts = base_timestamp + ts_delta
                if ts != NO_TIMESTAMP and not min_timestamp <= ts <= max_timestamp:  # type: ignore[operator]
                    problems.append((index, f"timestamp {ts} is out of range"))
            b = view[pos]  # key length
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
                if need_keys:
                    problems.append((index, "compacted topic record has no key"))
            else:
                pos += size
            b = view[pos]  # value length
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif view[pos + 1] < 0x80:
                b = (b & 0x7F) | (view[pos + 1] << 7)
                size = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                size, pos = read_zigzag(view, pos, 5)
            if size < -1:
                raise InvalidLengthError(f"record {index} value length {size}", pos, path)
            if size > 0:
                pos += size
            b = view[pos]  # header count
            pos += 1
            if b:
                pos = _skip_headers(view, pos - 1, rec_end, index, path)
            if pos != rec_end:
                raise CorruptRecordError(f"record {index} fields end {pos - rec_end:+d} bytes from its length",
                                         pos, path)
    except IndexError:
        raise TruncatedError(f"record {index} is truncated", pos, path) from None
    if pos != end:
        raise RecordCountError(f"{end - pos} bytes follow the {count} records the batch declares", pos, path)
    return problems


def _int64(bound: int | None) -> int:
    """A timestamp bound clamped to int64 (the defaults are Long.MAX_VALUE away from now)."""
    return 0 if bound is None else min(max(bound, -(1 << 63)), (1 << 63) - 1)


def _skip_headers(view: memoryview, pos: int, end: int, index: int, path: str) -> int:
    count, pos = read_zigzag(view, pos, 5)
    if count < 0 or count > (end - pos) // 2:
        raise InvalidLengthError(f"record {index} header count {count} is invalid", pos, path)
    for _ in range(count):
        size, pos = read_zigzag(view, pos, 5)
        if size < 0 or pos + size > end:
            raise InvalidLengthError(f"record {index} header key length {size} is invalid", pos, path)
        pos += size
        size, pos = read_zigzag(view, pos, 5)
        if size < -1 or pos + size > end:
            raise InvalidLengthError(f"record {index} header value length {size} is invalid", pos, path)
        if size > 0:
            pos += size
    return pos
