"""How the console and the report show the records of Kafka's internal topics: the coordinators' keys and
values (``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``; docs/internal-topics.md)
decoded with Kafka's own record schemas into their fields, as JSON, the schema and version in the pill's
title.  Bytes that do not decode are shown as values.py shows any bytes (hex)."""

from __future__ import annotations

import base64
from typing import Any

from mockbroker.codec_errors import CodecError
from mockbroker.console.values import LIMIT, Shown, pretty
from mockbroker.state.ids import uuid_text
from mockbroker.state.internal_topics import CONSUMER_OFFSETS, SHARE_GROUP_STATE, TRANSACTION_STATE

KIND = "kafka record"
_UUID_FIELDS = ("topic_id",)


def plain(obj: Any, version: int) -> Any:
    """A generated message struct as JSON-able data: its fields present at ``version`` (Kafka's names),
    nested structs alike, byte fields as base64 (topic ids as Kafka prints them)."""
    fields = getattr(type(obj), "FIELDS", None)
    if fields is None:
        if isinstance(obj, list):
            return [plain(item, version) for item in obj]
        if isinstance(obj, (bytes, bytearray, memoryview)):
            return base64.b64encode(bytes(obj)).decode()
        return obj
    out: dict[str, Any] = {}
    for field in fields:
        if not field.present_in(version):
            continue
        value = getattr(obj, field.attr)
        if field.attr in _UUID_FIELDS and isinstance(value, (bytes, bytearray)):
            out[field.name] = uuid_text(value)
        else:
            out[field.name] = plain(value, version)
    return out


def _fields_version(obj: Any, version: int) -> int:
    """The version a key's fields were read at: its own, or 0 where the version is only the record type."""
    fields = getattr(type(obj), "FIELDS", ())
    return version if any(f.present_in(version) for f in fields) else 0


def _decode(topic: str, key: bytes, value: bytes | None) -> tuple[str, Any, int, str, Any, int]:
    """(key schema, key struct, its version, value schema, value struct or None, its version)."""
    from mockbroker.state import coordinator_records as records

    record_type = records.record_type(key)
    if topic == CONSUMER_OFFSETS:
        from mockbroker.state import offsets_records

        kind, key_obj, value_version, value_obj = offsets_records.decode(key, value)
        stem = offsets_records.record_name(kind)
        return f"{stem}Key", key_obj, record_type, f"{stem}Value", value_obj, value_version
    if topic == TRANSACTION_STATE:
        key_name, value_name = "TransactionLogKey", "TransactionLogValue"
    else:
        from mockbroker.state.share_state_log import RECORD_NAMES

        if record_type not in RECORD_NAMES:
            raise ValueError(f"record type {record_type} is not a share coordinator record")
        key_name, value_name = RECORD_NAMES[record_type]
    key_obj = records.decode(key_name, key, 0)
    if value is None:
        return key_name, key_obj, record_type, value_name, None, -1
    value_version = records.record_type(value)
    return key_name, key_obj, record_type, value_name, records.decode(value_name, value), value_version


def describe(topic: str, key: bytes | None, value: bytes | None, limit: int = LIMIT) -> tuple[Shown, Shown] | None:
    """How a record of the internal topic ``topic`` is shown (key, value); None: not an internal topic's
    record, or bytes its coordinator would not read (shown as any bytes are)."""
    if topic not in (CONSUMER_OFFSETS, TRANSACTION_STATE, SHARE_GROUP_STATE) or key is None:
        return None
    try:
        key_name, key_obj, key_version, value_name, value_obj, value_version = _decode(topic, key, value)
    except (CodecError, ValueError, KeyError, IndexError):
        return None
    key_shown = Shown(KIND, pretty(plain(key_obj, _fields_version(key_obj, key_version)), limit, len(key)),
                      f"{key_name} (record type {key_version})")
    if value_obj is None:
        return key_shown, Shown("null", "null")
    return key_shown, Shown(KIND, pretty(plain(value_obj, value_version), limit, len(value or b"")),
                            f"{value_name} v{value_version}")
