"""Legacy v0/v1 message sets: round trips, compressed wrappers, relative offsets."""

from __future__ import annotations

import struct
import zlib

import pytest

from mockbroker.codec_errors import (
    CorruptRecordError,
    DecompressionError,
    InvalidValueError,
    UnsupportedCompressionError,
)
from mockbroker.records import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    LegacyMessage,
    build_message_set,
    compress,
    decode_message_set,
    legacy_codec_allowed,
)
from mockbroker.records.compression import XERIAL_MAGIC

MESSAGES = [
    (b"k0", b"v0" * 40, 1000),
    (None, b"v1" * 40, 1003),
    (b"k2", None, 999),
    (b"", b"", 1001),
]
CASES = [(0, NONE), (0, GZIP), (0, SNAPPY), (1, NONE), (1, GZIP), (1, SNAPPY), (1, LZ4)]


def _plain(message: LegacyMessage) -> tuple:
    key = None if message.key is None else bytes(message.key)
    value = None if message.value is None else bytes(message.value)
    return message.offset, message.timestamp, message.timestamp_type, key, value


@pytest.mark.parametrize(("magic", "codec"), CASES)
def test_round_trip(magic: int, codec: int) -> None:
    data = build_message_set(MESSAGES, magic, codec, base_offset=50)
    messages = decode_message_set(data)
    expected = [
        (50 + i, ts if magic else -1, 0 if magic else -1, key, value)
        for i, (key, value, ts) in enumerate(MESSAGES)
    ]
    assert [_plain(m) for m in messages] == expected
    assert all(m.magic == magic and m.attributes & 7 == 0 for m in messages)
    # The wrapper (if any) carries the last offset and, at magic 1, the largest timestamp.
    (wrapper_offset,) = struct.unpack_from(">q", data, 0)
    assert wrapper_offset == (53 if codec else 50)
    if codec and magic == 1:
        assert struct.unpack_from(">q", data, 18)[0] == 1003
        assert data[17] == codec
    if codec == SNAPPY:
        key_len = struct.unpack_from(">i", data, 26 if magic else 18)[0]
        value_at = (26 if magic else 18) + 4 + max(key_len, 0) + 4
        assert data[value_at : value_at + 8] == XERIAL_MAGIC


@pytest.mark.parametrize("codec", [NONE, GZIP, LZ4])
def test_log_append_time(codec: int) -> None:
    data = build_message_set(MESSAGES, 1, codec, log_append_time=777)
    messages = decode_message_set(data)
    assert {(m.timestamp, m.timestamp_type) for m in messages} == {(777, 1)}


def test_explicit_offsets_with_gaps_survive_compression() -> None:
    items = [(b"a", b"1", 5, 10), (b"b", b"2", 6, 13), (b"c", b"3", 7, 20)]
    for magic in (0, 1):
        for codec in (NONE, GZIP):
            messages = decode_message_set(build_message_set(items, magic, codec))
            assert [m.offset for m in messages] == [10, 13, 20]
    again = build_message_set(decode_message_set(build_message_set(items, 1)), 1)
    assert again == build_message_set(items, 1)


def _entry(
    offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    body = struct.pack(">bb", magic, attributes) + (struct.pack(">q", timestamp) if magic else b"")
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def test_hand_built_v1_wrapper_relative_offsets() -> None:
    # Inner relative offsets 0, 1, 2 under a wrapper at offset 100: absolute 98, 99, 100.
    inner = b"".join(_entry(i, 1, 0, 10 + i, None, b"m%d" % i) for i in range(3))
    data = _entry(100, 1, GZIP, 12, None, compress(GZIP, inner))
    assert [m.offset for m in decode_message_set(data)] == [98, 99, 100]
    # Non-zero-based relative offsets: only the distance to the last one matters.
    inner = b"".join(_entry(rel, 1, 0, 10, None, b"x") for rel in (4, 6, 9))
    data = _entry(50, 1, SNAPPY, 10, None, compress(SNAPPY, inner))
    assert [m.offset for m in decode_message_set(data)] == [45, 47, 50]


def test_hand_built_v0_wrapper_absolute_offsets() -> None:
    inner = b"".join(_entry(off, 0, 0, 0, b"k", b"v") for off in (7, 8, 9))
    data = _entry(9, 0, GZIP, 0, None, compress(GZIP, inner))
    assert [m.offset for m in decode_message_set(data)] == [7, 8, 9]


def test_nested_compression_rejected() -> None:
    innermost = _entry(0, 1, 0, 0, None, b"x")
    middle = _entry(0, 1, GZIP, 0, None, compress(GZIP, innermost))
    data = _entry(0, 1, GZIP, 0, None, compress(GZIP, middle))
    with pytest.raises(CorruptRecordError, match="another compressed"):
        decode_message_set(data)


def test_wrapper_errors() -> None:
    with pytest.raises(CorruptRecordError, match="null value"):
        decode_message_set(_entry(0, 1, GZIP, 0, None, None))
    with pytest.raises(CorruptRecordError, match="no messages"):
        decode_message_set(_entry(0, 1, GZIP, 0, None, compress(GZIP, b"")))
    mixed = _entry(0, 0, 0, 0, None, b"x")
    with pytest.raises(InvalidValueError, match="inner message magic"):
        decode_message_set(_entry(0, 1, GZIP, 0, None, compress(GZIP, mixed)))
    # LZ4 at magic 0 (Kafka's broken KAFKA-3160 framing) and zstd/unknown codecs are refused.
    for magic, codec in ((0, LZ4), (1, ZSTD), (1, 5), (0, 7)):
        with pytest.raises(UnsupportedCompressionError):
            decode_message_set(_entry(0, magic, codec, 0, None, b"whatever"))
        with pytest.raises(UnsupportedCompressionError):
            build_message_set([(None, b"x")], magic, codec)
    with pytest.raises(DecompressionError):
        decode_message_set(_entry(0, 1, GZIP, 0, None, b"not gzip"))
    with pytest.raises(DecompressionError, match="cap"):
        decode_message_set(_entry(0, 1, GZIP, 0, None, compress(GZIP, inner_bomb := b"\0" * 10_000)), 9_999)
    assert len(inner_bomb) == 10_000


def test_magic_checks_and_helpers() -> None:
    with pytest.raises(InvalidValueError):
        build_message_set([], 2)
    assert build_message_set([], 1, GZIP) == b""
    assert decode_message_set(b"") == []
    with pytest.raises(InvalidValueError, match="magic is 2"):
        decode_message_set(_entry(0, 1, 0, 0, None, b"x")[:16] + b"\x02" + b"\0" * 30)
    assert [legacy_codec_allowed(c, 0) for c in range(5)] == [True, True, True, False, False]
    assert [legacy_codec_allowed(c, 1) for c in range(5)] == [True, True, True, True, False]


def test_partial_tail() -> None:
    data = build_message_set(MESSAGES, 1)
    for cut in range(1, 30):
        assert len(decode_message_set(data[:-cut], allow_partial_tail=True)) == len(MESSAGES) - 1


def test_legacy_message_input() -> None:
    source = decode_message_set(build_message_set(MESSAGES, 1, base_offset=3))
    assert build_message_set(source, 1) == build_message_set(MESSAGES, 1, base_offset=3)


def test_negative_base_keeps_relative_offsets() -> None:
    inner = b"".join(_entry(i, 1, 0, 10, None, b"x") for i in range(3))
    data = _entry(0, 1, GZIP, 10, None, compress(GZIP, inner))
    assert [m.offset for m in decode_message_set(data)] == [0, 1, 2]
    data = _entry(1, 1, GZIP, 10, None, compress(GZIP, inner))
    assert [m.offset for m in decode_message_set(data)] == [0, 1, 2]
    data = _entry(2, 1, GZIP, 10, None, compress(GZIP, inner))
    assert [m.offset for m in decode_message_set(data)] == [0, 1, 2]
    data = _entry(3, 1, GZIP, 10, None, compress(GZIP, inner))
    assert [m.offset for m in decode_message_set(data)] == [1, 2, 3]
