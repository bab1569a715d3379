"""Decoding a v2 record batch's records straight into column lists (reads) and encoding column lists into
record bytes (the sink), without a per-record object either way.

The general decoder (:mod:`mockbroker.records.record`) builds a :class:`Record` per record and checks
every length against the batch; here the batch has already passed its CRC check and came from a
broker, so this loop only does what building columns needs: one pass over ``bytes`` (indexing bytes is
faster than a memoryview), single-byte varints inline, no per-record objects.  Malformed input still
fails (IndexError / ValueError: each record must fit its length and the records the data), it just
names the problem less precisely.
"""

from __future__ import annotations

from typing import Any

from mockbroker.records.varint import read_zigzag

_SMALL = 1 << 14
# zigzag varint bytes of every value whose zigzag form fits in two bytes
_VARINT = [bytes([z]) if z < 0x80 else bytes([(z & 0x7F) | 0x80, z >> 7]) for z in range(_SMALL)]


def _zz(value: int) -> bytes:
    z = (value << 1) ^ (value >> 63)
    if z < _SMALL:
        return _VARINT[z]
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def encode_columns(keys: list[bytes | None], values: list[bytes | None],
                   headers: list[list[tuple[str, bytes | None]]] | None, ts_deltas: list[int]) -> bytearray:
    """The records of a v2 batch (offset deltas 0..n-1) from column lists."""
    out = bytearray()
    varint = _VARINT
    for i, value in enumerate(values):
        key = keys[i]
        body = bytearray(b"\x00")  # attributes
        ts = ts_deltas[i]
        body += varint[ts << 1] if 0 <= ts < 8192 else _zz(ts)
        body += varint[i << 1] if i < 8192 else _zz(i)
        if key is None:
            body += b"\x01"
        else:
            n = len(key)
            body += varint[n << 1] if n < 8192 else _zz(n)
            body += key
        if value is None:
            body += b"\x01"
        else:
            n = len(value)
            body += varint[n << 1] if n < 8192 else _zz(n)
            body += value
        row_headers = headers[i] if headers is not None else None
        if row_headers:
            body += _zz(len(row_headers))
            for name, data in row_headers:
                raw = name.encode()
                body += _zz(len(raw))
                body += raw
                if data is None:
                    body += b"\x01"
                else:
                    body += _zz(len(data))
                    body += data
        else:
            body += b"\x00"
        n = len(body)
        out += varint[n << 1] if n < 8192 else _zz(n)
        out += body
    return out


def decode_columns(data: bytes, pos: int, count: int, keys: list[Any], values: list[Any], deltas: list[int],
                   ts_deltas: list[int], headers: list[Any] | None) -> None:
    """Append ``count`` records from ``data[pos:]`` to the column lists (headers only when a list is given).
    Records that do not fill their lengths and the data exactly raise ValueError: a batch whose CRC matches
    damaged records (a broker that stores batches unchecked) is refused, not read as garbage."""
    end = len(data)
    pos = _append_columns(data, pos, count, keys, values, deltas, ts_deltas, headers)
    if pos != end:
        raise ValueError(f"{end - pos} bytes follow the batch's {count} records")


def _append_columns(data: bytes, pos: int, count: int, keys: list[Any], values: list[Any], deltas: list[int],
                    ts_deltas: list[int], headers: list[Any] | None) -> int:
    """The loop of :func:`decode_columns`, one call per batch: the records' columns appended, the end returned."""
    end = len(data)
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            length = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            length, pos = read_zigzag(data, pos, 5)
        rec_end = pos + length
        if length < 6 or rec_end > end:  # attributes, timestamp, offset, key, value, header count: 6 bytes at least
            raise ValueError(f"record length {length} does not fit the batch")
        b = data[pos + 1]  # after the attributes byte: the timestamp delta
        if b < 0x80:
            ts_deltas.append((b >> 1) ^ -(b & 1))
            pos += 2
        elif data[pos + 2] < 0x80:
            b = (b & 0x7F) | (data[pos + 2] << 7)
            ts_deltas.append((b >> 1) ^ -(b & 1))
            pos += 3
        else:
            value, pos = read_zigzag(data, pos + 1, 10)
            ts_deltas.append(value)
        b = data[pos]
        if b < 0x80:
            deltas.append((b >> 1) ^ -(b & 1))
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            deltas.append((b >> 1) ^ -(b & 1))
            pos += 2
        elif data[pos + 2] < 0x80:
            b = (b & 0x7F) | ((data[pos + 1] & 0x7F) << 7) | (data[pos + 2] << 14)
            deltas.append((b >> 1) ^ -(b & 1))
            pos += 3
        else:
            value, pos = read_zigzag(data, pos, 5)
            deltas.append(value)
        b = data[pos]
        if b < 0x80:
            size = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            size, pos = read_zigzag(data, pos, 5)
        keys.append(None if size < 0 else data[pos:pos + size])  # a null key (size -1) takes no bytes
        pos += size if size > 0 else 0
        b = data[pos]
        if b < 0x80:
            size = (b >> 1) ^ -(b & 1)
            pos += 1
        elif data[pos + 1] < 0x80:
            b = (b & 0x7F) | (data[pos + 1] << 7)
            size = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            size, pos = read_zigzag(data, pos, 5)
        values.append(None if size < 0 else data[pos:pos + size])
        pos += size if size > 0 else 0
        if pos >= rec_end:  # the header count is still to come
            raise ValueError("a record's fields run past its length")
        if headers is not None:
            headers.append(_headers(data, pos) if data[pos] else [])
        pos = rec_end
    return pos


def _headers(data: bytes, pos: int) -> list[dict[str, Any]]:
    count, pos = read_zigzag(data, pos, 5)
    out: list[dict[str, Any]] = []
    for _ in range(count):
        size, pos = read_zigzag(data, pos, 5)
        key = data[pos:pos + size].decode("utf-8", "replace")
        pos += size
        size, pos = read_zigzag(data, pos, 5)
        if size < 0:
            out.append({"key": key, "value": None})
        else:
            out.append({"key": key, "value": data[pos:pos + size]})
            pos += size
    return out
