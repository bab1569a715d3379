"""A minimal reader of OTLP ``MetricsData`` (opentelemetry/proto/metrics/v1), the payload of KIP-714
PushTelemetry, in plain Python over the protobuf wire format: no generated code, no dependency.

It reads what a test wants to see: the resource attributes, and per metric its name, unit, kind
(gauge, sum, histogram, ...) and data points (value, attributes, timestamps; histograms give count
and sum).  Unknown fields are skipped as protobuf says; malformed bytes raise :class:`OTLPError`.
"""

from __future__ import annotations

import struct
from typing import Any

VARINT, I64, LEN, I32 = 0, 1, 2, 5
_DOUBLE = struct.Struct("<d")
_Q = struct.Struct("<Q")
_q = struct.Struct("<q")
_KINDS = {5: "gauge", 7: "sum", 9: "histogram", 10: "exponential_histogram", 11: "summary"}


class OTLPError(ValueError):
    """The bytes are not a well-formed OTLP MetricsData message."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise OTLPError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise OTLPError("varint longer than 10 bytes")


def fields(buf: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) of each field of one message: ints for VARINT, I64 and I32 (raw
    little-endian), bytes for LEN."""
    out: list[tuple[int, int, Any]] = []
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, kind = key >> 3, key & 7
        if number == 0:
            raise OTLPError("field number 0")
        value: int | bytes
        if kind == VARINT:
            value, pos = _varint(buf, pos)
        elif kind == I64:
            if pos + 8 > end:
                raise OTLPError("truncated fixed64")
            value, pos = _Q.unpack_from(buf, pos)[0], pos + 8
        elif kind == LEN:
            length, pos = _varint(buf, pos)
            if pos + length > end:
                raise OTLPError(f"field {number}: length {length} beyond the message")
            value, pos = bytes(buf[pos:pos + length]), pos + length
        elif kind == I32:
            if pos + 4 > end:
                raise OTLPError("truncated fixed32")
            value, pos = int.from_bytes(buf[pos:pos + 4], "little"), pos + 4
        else:
            raise OTLPError(f"field {number}: unsupported wire type {kind}")
        out.append((number, kind, value))
    return out


def _double(raw: int) -> float:
    return float(_DOUBLE.unpack(_Q.pack(raw))[0])


def _signed64(raw: int) -> int:
    return int(_q.unpack(_Q.pack(raw & 0xFFFFFFFFFFFFFFFF))[0])


def _text(raw: Any) -> str:
    if not isinstance(raw, bytes):
        raise OTLPError("string field with a non-length wire type")
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise OTLPError("string field is not UTF-8") from None


def any_value(buf: bytes) -> Any:
    for number, _kind, value in fields(buf):
        if number == 1:
            return _text(value)
        if number == 2:
            return bool(value)
        if number == 3:
            return _signed64(value)
        if number == 4:
            return _double(value)
        if number == 5:  # ArrayValue { repeated AnyValue values = 1 }
            return [any_value(v) for n, _k, v in fields(value) if n == 1]
        if number == 6:  # KeyValueList { repeated KeyValue values = 1 }
            return dict(key_value(v) for n, _k, v in fields(value) if n == 1)
        if number == 7:  # bytes, as hex text (the decoded metrics are served as JSON)
            return bytes(value).hex()
    return None


def key_value(buf: bytes) -> tuple[str, Any]:
    key, value = "", None
    for number, _kind, raw in fields(buf):
        if number == 1:
            key = _text(raw)
        elif number == 2:
            value = any_value(raw)
    return key, value


def _number_point(buf: bytes) -> dict[str, Any]:
    point: dict[str, Any] = {"attributes": {}, "start_time_unix_nano": 0, "time_unix_nano": 0, "value": None}
    for number, _kind, raw in fields(buf):
        if number == 7:
            k, v = key_value(raw)
            point["attributes"][k] = v
        elif number == 2:
            point["start_time_unix_nano"] = raw
        elif number == 3:
            point["time_unix_nano"] = raw
        elif number == 4:
            point["value"] = _double(raw)
        elif number == 6:
            point["value"] = _signed64(raw)
    return point


def _histogram_point(buf: bytes) -> dict[str, Any]:
    point: dict[str, Any] = {"attributes": {}, "start_time_unix_nano": 0, "time_unix_nano": 0, "count": 0,
                             "sum": None}
    for number, _kind, raw in fields(buf):
        if number == 9:
            k, v = key_value(raw)
            point["attributes"][k] = v
        elif number == 2:
            point["start_time_unix_nano"] = raw
        elif number == 3:
            point["time_unix_nano"] = raw
        elif number == 4:
            point["count"] = raw
        elif number == 5:
            point["sum"] = _double(raw)
        elif number == 11:
            point["min"] = _double(raw)
        elif number == 12:
            point["max"] = _double(raw)
    return point


def _metric(buf: bytes) -> dict[str, Any]:
    metric: dict[str, Any] = {"name": "", "description": "", "unit": "", "type": None, "data_points": []}
    for number, _kind, raw in fields(buf):
        if number in (1, 2, 3):
            metric[("name", "description", "unit")[number - 1]] = _text(raw)
        elif number in _KINDS:
            metric["type"] = _KINDS[number]
            for n, _k, v in fields(raw):
                if n == 1:
                    metric["data_points"].append(_number_point(v) if number in (5, 7) else _histogram_point(v))
                elif n == 2:
                    metric["aggregation_temporality"] = v
                elif n == 3 and number == 7:
                    metric["is_monotonic"] = bool(v)
    return metric


def decode_metrics_data(buf: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An OTLP MetricsData message -> (resource attributes, metrics), the metrics of every
    ResourceMetrics and ScopeMetrics in order."""
    resource: dict[str, Any] = {}
    metrics: list[dict[str, Any]] = []
    for number, _kind, resource_metrics in fields(buf):
        if number != 1:
            continue
        for n, _k, raw in fields(resource_metrics):
            if n == 1:  # Resource { repeated KeyValue attributes = 1 }
                resource.update(key_value(a) for an, _ak, a in fields(raw) if an == 1)
            elif n == 2:  # ScopeMetrics { scope = 1; repeated Metric metrics = 2 }
                metrics.extend(_metric(m) for mn, _mk, m in fields(raw) if mn == 2)
    return resource, metrics


# -- writing, for tests and tools that need a payload ----------------------------------------------
def _key(number: int, kind: int) -> bytes:
    return _uvarint(number << 3 | kind)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _len(number: int, payload: bytes) -> bytes:
    return _key(number, LEN) + _uvarint(len(payload)) + payload


def _kv(key: str, value: str) -> bytes:
    return _len(1, key.encode()) + _len(2, _len(1, value.encode()))


def encode_gauges(resource: dict[str, str], gauges: dict[str, float], time_unix_nano: int = 0) -> bytes:
    """A MetricsData with one gauge data point (as_double) per name: what a client would push."""
    metrics = b""
    for name, value in gauges.items():
        point = _key(3, I64) + _Q.pack(time_unix_nano) + _key(4, I64) + _DOUBLE.pack(value)
        metrics += _len(2, _len(1, name.encode()) + _len(5, _len(1, point)))
    res = b"".join(_len(1, _kv(k, v)) for k, v in resource.items())
    return _len(1, _len(1, res) + _len(2, metrics))
