"""Zigzag varints as used inside v2 records (the protobuf encoding Kafka's ByteUtils implements).

A *varint* holds an int32 in at most 5 bytes, a *varlong* an int64 in at most 10.  Values are
zigzag-mapped first so small negative numbers stay short (-1 encodes as ``0x01``).

:func:`read_varint` / :func:`read_varlong` are the checked public readers: they raise
:class:`~mockbroker.codec_errors.TruncatedError` when the data ends inside the varint and
:class:`~mockbroker.codec_errors.InvalidVarintError` when it is longer than its type allows or
overflows it.  :func:`read_zigzag` is the unchecked-bounds slow path the record decoder calls
after its inline one-byte fast path; it lets ``IndexError`` through for the caller to wrap.
"""

from __future__ import annotations

from mockbroker.codec_errors import InvalidVarintError, TruncatedError

__all__ = [
    "VARINT_MAX_BYTES",
    "VARLONG_MAX_BYTES",
    "append_varint",
    "read_varint",
    "read_varlong",
    "read_zigzag",
    "varint_bytes",
]

VARINT_MAX_BYTES = 5
VARLONG_MAX_BYTES = 10

Buffer = bytes | bytearray | memoryview


def read_zigzag(buf: Buffer, pos: int, max_bytes: int) -> tuple[int, int]:
    """Decode a zigzag varint of at most ``max_bytes`` bytes at ``pos``; return (value, next pos).

    Raises ``IndexError`` if ``buf`` ends first (callers wrap it) and
    :class:`InvalidVarintError` if the varint is too long or overflows 32/64 bits.
    """
    start = pos
    raw = 0
    shift = 0
    limit = 32 if max_bytes == VARINT_MAX_BYTES else 64
    for _ in range(max_bytes):
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            if raw >> limit:
                raise InvalidVarintError(f"varint overflows {limit} bits", start)
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
    raise InvalidVarintError(f"varint is longer than {max_bytes} bytes", start)


def read_varint(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Read a zigzag int32 varint at ``pos``; return (value, next position)."""
    try:
        return read_zigzag(buf, pos, VARINT_MAX_BYTES)
    except IndexError:
        raise TruncatedError("data ends inside a varint", pos) from None


def read_varlong(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Read a zigzag int64 varlong at ``pos``; return (value, next position)."""
    try:
        return read_zigzag(buf, pos, VARLONG_MAX_BYTES)
    except IndexError:
        raise TruncatedError("data ends inside a varlong", pos) from None


def append_varint(out: bytearray, value: int) -> None:
    """Append ``value`` (an int64; int32 values encode identically) as a zigzag varint."""
    raw = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)


def varint_bytes(value: int) -> bytes:
    """``value`` as zigzag varint bytes."""
    out = bytearray()
    append_varint(out, value)
    return bytes(out)
