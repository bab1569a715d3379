"""Decoding a v2 record batch's records straight into column lists, for Arrow.

The general decoder (:mod:`mockbroker.records.record`) builds a :class:`Record` per record and checks
every length against the batch; here the batch has already passed its CRC check and came from a
broker, so this loop only does what building columns needs: one pass over ``bytes`` (indexing bytes is
faster than a memoryview), single-byte varints inline, no per-record objects.  Malformed input still
fails (IndexError / ValueError), it just names the problem less precisely.
"""

from __future__ import annotations

from typing import Any

from mockbroker.records.varint import read_zigzag


def decode_columns(data: bytes, pos: int, count: int, keys: list[Any], values: list[Any], deltas: list[int],
                   ts_deltas: list[int], headers: list[Any] | None) -> None:
    """Append ``count`` records from ``data[pos:]`` to the column lists (headers only when a list is given)."""
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
        if size < 0:
            keys.append(None)
        else:
            keys.append(data[pos:pos + size])
            pos += size
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
        if size < 0:
            values.append(None)
        else:
            values.append(data[pos:pos + size])
            pos += size
        if headers is not None:
            headers.append(_headers(data, pos) if data[pos] else [])
        pos = rec_end


def _headers(data: bytes, pos: int) -> list[dict[str, Any]]:
    count, pos = read_zigzag(data, pos, 5)
    out = []
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
