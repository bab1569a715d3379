"""Kafka error codes (from the generated ``error_table``) as an IntEnum, with lookups."""

from __future__ import annotations

from enum import IntEnum

from mockbroker.protocol.error_table import ERRORS

ErrorCode = IntEnum("ErrorCode", {name: code for code, (name, _r, _m) in ERRORS.items()})  # type: ignore[misc]


def error_name(code: int) -> str:
    entry = ERRORS.get(code)
    return entry[0] if entry else f"UNKNOWN_ERROR_{code}"


def is_retriable(code: int) -> bool:
    entry = ERRORS.get(code)
    return bool(entry and entry[1])


def error_message(code: int) -> str:
    entry = ERRORS.get(code)
    return entry[2] if entry else ""
