"""Kafka error codes (the generated ``error_table``: ``ErrorCode`` and ``ERRORS``), with lookups."""

from __future__ import annotations

from mockbroker.protocol.error_table import ERRORS, ErrorCode

__all__ = ["ERRORS", "ErrorCode", "error_message", "error_name", "is_retriable"]


def error_name(code: int) -> str:
    entry = ERRORS.get(code)
    return entry[0] if entry else f"UNKNOWN_ERROR_{code}"


def is_retriable(code: int) -> bool:
    entry = ERRORS.get(code)
    return bool(entry and entry[1])


def error_message(code: int) -> str:
    entry = ERRORS.get(code)
    return entry[2] if entry else ""
