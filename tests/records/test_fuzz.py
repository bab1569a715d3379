"""Property tests: random bytes and CRC-consistent mutations raise only CodecError; round trips."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockbroker.codec_errors import CodecError
from mockbroker.records import (
    Record,
    build_batch,
    build_message_set,
    compress,
    decode_batch,
    decode_message_set,
    decompress,
    iter_batches,
    legacy_to_v2,
    parse_batch_header,
    read_varint,
    read_varlong,
    records_summary,
    v2_to_legacy,
    verify_batch,
)
from tests.records.helpers import fix_legacy_crc, fix_v2_crc

CAP = 1 << 20

DECODERS: dict[str, Callable[[bytes], object]] = {
    "decode_batch": lambda b: decode_batch(b, max_size=CAP),
    "verify_batch": verify_batch,
    "parse_batch_header": parse_batch_header,
    "iter_batches": lambda b: list(iter_batches(b)),
    "iter_batches_partial": lambda b: list(iter_batches(b, allow_partial_tail=True)),
    "decode_message_set": lambda b: decode_message_set(b, CAP),
    "decode_message_set_partial": lambda b: decode_message_set(b, CAP, allow_partial_tail=True),
    "legacy_to_v2": lambda b: legacy_to_v2(b, max_size=CAP),
    "v2_to_legacy_0": lambda b: v2_to_legacy(b, 0, max_size=CAP),
    "v2_to_legacy_1": lambda b: v2_to_legacy(b, 1, max_size=CAP),
    "records_summary": records_summary,
    "read_varint": read_varint,
    "read_varlong": read_varlong,
    **{f"decompress_{c}": (lambda b, c=c: decompress(c, b, CAP)) for c in range(8)},
}

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _only_codec_errors(decoder: Callable[[bytes], object], data: bytes) -> None:
    try:
        decoder(data)
    except CodecError:
        pass


@pytest.mark.parametrize("name", list(DECODERS))
@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes(name: str, data: bytes) -> None:
    _only_codec_errors(DECODERS[name], data)


def _v2_seed(codec: int) -> bytes:
    return build_batch(
        [(b"key", b"value" * 4, [("h", b"x"), ("n", None)], 1000), (None, None, None, 990)],
        base_offset=3,
        compression=codec,
    )


V2_SEEDS = [_v2_seed(codec) for codec in range(5)]
LEGACY_SEEDS = [
    build_message_set([(b"k", b"v" * 10, 5), (None, b"w", 7)], magic, codec)
    for magic, codec in ((0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (1, 3))
]


@FUZZ
@given(
    seed=st.sampled_from(V2_SEEDS),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
    cut=st.integers(0, 20),
)
def test_mutated_v2_batches_with_valid_crc(seed: bytes, edits: list[tuple[int, int]], cut: int) -> None:
    data = bytearray(seed)
    for pos, value in edits:
        data[21 + pos % (len(data) - 21)] = value
    if cut:
        del data[-cut:]
        struct.pack_into(">i", data, 8, len(data) - 12)
    fix_v2_crc(data)
    for name in ("decode_batch", "iter_batches", "v2_to_legacy_1", "records_summary"):
        _only_codec_errors(DECODERS[name], bytes(data))


@FUZZ
@given(
    seed=st.sampled_from(LEGACY_SEEDS),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_mutated_legacy_with_valid_crc(seed: bytes, edits: list[tuple[int, int]]) -> None:
    data = bytearray(seed)
    for pos, value in edits:
        data[16 + pos % (len(data) - 16)] = value
    (size,) = struct.unpack_from(">i", data, 8)
    if 0 <= size <= len(data) - 12:
        fix_legacy_crc(data)
    for name in ("decode_message_set", "legacy_to_v2", "v2_to_legacy_0", "records_summary"):
        _only_codec_errors(DECODERS[name], bytes(data))


blobs = st.none() | st.binary(max_size=40)
headers = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=10)), max_size=3)
records = st.lists(
    st.builds(
        Record,
        offset_delta=st.integers(0, 2**31 - 1),
        timestamp_delta=st.integers(-(2**40), 2**40),
        key=blobs,
        value=blobs,
        headers=headers,
        attributes=st.integers(0, 255),
    ),
    max_size=6,
)


@settings(max_examples=80, deadline=None)
@given(records=records, codec=st.integers(0, 4), base=st.integers(0, 2**50), ts=st.integers(0, 2**41))
def test_v2_round_trip(records: list[Record], codec: int, base: int, ts: int) -> None:
    data = build_batch(records, base_offset=base, base_timestamp=ts, compression=codec)
    header, decoded = decode_batch(data)
    assert decoded == records
    assert header.base_offset == base and header.record_count == len(records)
    if records:
        assert header.max_timestamp == ts + max(r.timestamp_delta for r in records)


@settings(max_examples=60, deadline=None)
@given(
    items=st.lists(st.tuples(blobs, blobs, st.integers(-1, 2**41)), min_size=1, max_size=6),
    case=st.sampled_from([(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (1, 3)]),
    base=st.integers(0, 2**40),
)
def test_legacy_and_conversion_round_trip(items: list[tuple], case: tuple[int, int], base: int) -> None:
    magic, codec = case
    data = build_message_set(items, magic, codec, base_offset=base)
    messages = decode_message_set(data)
    as_plain = [
        (None if m.key is None else bytes(m.key), None if m.value is None else bytes(m.value))
        for m in messages
    ]
    assert as_plain == [(k, v) for k, v, _ in items]
    assert [m.offset for m in messages] == list(range(base, base + len(items)))
    assert [m.timestamp for m in messages] == ([ts for _, _, ts in items] if magic else [-1] * len(items))
    # Up-convert and back: the same message set comes out.
    assert v2_to_legacy(legacy_to_v2(data), magic) == build_message_set(messages, magic, codec)


def _records_region(seed: bytes) -> tuple[bytes, int]:
    header, _ = decode_batch(seed)
    assert header.compression == 0
    return seed[61:], header.record_count


RAW_RECORDS, RAW_COUNT = _records_region(V2_SEEDS[0])


@FUZZ
@given(
    codec=st.integers(1, 4),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
    count=st.integers(-2, 4),
)
def test_mutated_records_inside_compressed_batches(
    codec: int, edits: list[tuple[int, int]], count: int
) -> None:
    raw = bytearray(RAW_RECORDS)
    for pos, value in edits:
        raw[pos % len(raw)] = value
    payload = compress(codec, bytes(raw))
    header = struct.pack(">qiibIhiqqqhii", 0, 49 + len(payload), -1, 2, 0, codec, 1, 0, 0, -1, -1, -1, count)
    data = fix_v2_crc(bytearray(header + payload))
    _only_codec_errors(DECODERS["decode_batch"], bytes(data))
    _only_codec_errors(DECODERS["v2_to_legacy_0"], bytes(data))


@FUZZ
@given(
    codec=st.sampled_from([1, 2, 3]),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_mutated_messages_inside_compressed_wrappers(codec: int, edits: list[tuple[int, int]]) -> None:
    inner = bytearray(build_message_set([(b"k", b"v" * 10, 5), (None, b"w", 7)], 1))
    for pos, value in edits:
        inner[pos % len(inner)] = value
    value = compress(codec, bytes(inner))
    body = struct.pack(">bbqi", 1, codec, 7, -1) + struct.pack(">i", len(value)) + value
    data = fix_legacy_crc(bytearray(struct.pack(">qiI", 1, len(body) + 4, 0) + body))
    for name in ("decode_message_set", "legacy_to_v2", "v2_to_legacy_0"):
        _only_codec_errors(DECODERS[name], bytes(data))
