"""Fixtures for the records tests."""

from __future__ import annotations

import types

import cramjam
import pytest


@pytest.fixture
def kafka_snappy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give kafka-python a snappy module (it wants python-snappy; we back it with cramjam)."""
    import kafka.codec

    shim = types.SimpleNamespace(
        compress=lambda data: bytes(cramjam.snappy.compress_raw(bytes(data))),
        decompress=lambda data: bytes(cramjam.snappy.decompress_raw(bytes(data))),
    )
    monkeypatch.setattr(kafka.codec, "snappy", shim)
