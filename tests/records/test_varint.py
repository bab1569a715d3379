"""Zigzag varint encoding and its error cases."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockbroker.codec_errors import InvalidVarintError, TruncatedError
from mockbroker.records import read_varint, read_varlong, varint_bytes


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01"), (300, b"\xd8\x04")],
)
def test_known_encodings(value: int, encoded: bytes) -> None:
    assert varint_bytes(value) == encoded
    assert read_varint(encoded) == (value, len(encoded))


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1))
def test_round_trip(small: int, big: int) -> None:
    encoded = varint_bytes(small)
    assert len(encoded) <= 5
    assert read_varint(b"\xaa" + encoded, 1) == (small, len(encoded) + 1)
    encoded = varint_bytes(big)
    assert len(encoded) <= 10
    assert read_varlong(encoded) == (big, len(encoded))


def test_too_long_and_overflow() -> None:
    with pytest.raises(InvalidVarintError, match="longer than 5"):
        read_varint(b"\x80\x80\x80\x80\x80\x00")
    with pytest.raises(InvalidVarintError, match="overflows 32"):
        read_varint(b"\xff\xff\xff\xff\x7f")
    with pytest.raises(InvalidVarintError, match="longer than 10"):
        read_varlong(b"\x80" * 10 + b"\x00")
    with pytest.raises(InvalidVarintError, match="overflows 64"):
        read_varlong(b"\xff" * 9 + b"\x7f")
    assert read_varint(varint_bytes(-(2**31)))[0] == -(2**31)


def test_truncated() -> None:
    with pytest.raises(TruncatedError):
        read_varint(b"\x80\x80")
    with pytest.raises(TruncatedError):
        read_varlong(b"")
