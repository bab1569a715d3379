"""Up- and down-conversion between legacy message sets and v2 batches."""

from __future__ import annotations

import pytest

from mockbroker.codec_errors import CodecError, InvalidValueError
from mockbroker.records import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    Record,
    build_batch,
    build_control_batch,
    build_message_set,
    decode_batch,
    decode_message_set,
    iter_batches,
    legacy_to_v2,
    records_summary,
    set_log_append_time,
    v2_to_legacy,
)
from tests.records.helpers import ALL_CODECS, CODEC_IDS

ITEMS = [(b"k0", b"v0" * 30, 1000), (None, b"v1", 1004), (b"k2", None, 998)]


def _v2_records(blob: bytes) -> list[tuple]:
    out = []
    for _, magic, view in iter_batches(blob):
        assert magic == 2
        header, records = decode_batch(view)
        for r in records:
            ts = header.max_timestamp if header.timestamp_type else header.base_timestamp + r.timestamp_delta
            key = None if r.key is None else bytes(r.key)
            value = None if r.value is None else bytes(r.value)
            out.append(
                (
                    header.base_offset + r.offset_delta,
                    ts,
                    key,
                    value,
                    header.timestamp_type,
                    header.compression,
                )
            )
    return out


def _legacy(blob: bytes) -> list[tuple]:
    return [
        (
            m.offset,
            m.timestamp,
            None if m.key is None else bytes(m.key),
            None if m.value is None else bytes(m.value),
            m.magic,
            m.timestamp_type,
        )
        for m in decode_message_set(blob)
    ]


@pytest.mark.parametrize(
    ("magic", "codec"), [(0, NONE), (0, GZIP), (0, SNAPPY), (1, NONE), (1, GZIP), (1, LZ4)]
)
def test_legacy_to_v2(magic: int, codec: int) -> None:
    source = build_message_set(ITEMS, magic, codec, base_offset=40)
    converted = legacy_to_v2(source)
    records = _v2_records(converted)
    assert len(list(iter_batches(converted))) == 1
    assert records == [
        (40 + i, ts if magic else -1, key, value, 0, codec) for i, (key, value, ts) in enumerate(ITEMS)
    ]
    header, _ = decode_batch(converted)
    assert header.max_timestamp == (1004 if magic else -1)
    assert header.producer_id == -1 and not header.is_transactional
    # Explicit codec and offset assignment.
    reassigned = legacy_to_v2(source, compression=ZSTD, base_offset=1000)
    assert [(r[0], r[5]) for r in _v2_records(reassigned)] == [(1000, 4), (1001, 4), (1002, 4)]


def test_legacy_to_v2_log_append_time_and_splits() -> None:
    lat = _v2_records(legacy_to_v2(build_message_set(ITEMS, 1, GZIP, log_append_time=5555)))
    assert {(r[1], r[4]) for r in lat} == {(5555, 1)}
    # Offsets that do not increase (a v0 producer writes zeros) start new batches...
    zeros = build_message_set([(b"a", b"1", None, 0), (b"b", b"2", None, 0)], 0)
    assert len(list(iter_batches(legacy_to_v2(zeros)))) == 2
    # ...unless the caller assigns offsets, as a broker does.
    assert len(list(iter_batches(legacy_to_v2(zeros, base_offset=7)))) == 1
    # A timestamp-type change also splits.
    mixed = build_message_set(ITEMS, 1, base_offset=0) + build_message_set(
        ITEMS, 1, GZIP, 3, log_append_time=9
    )
    assert [decode_batch(v)[0].timestamp_type for _, _, v in iter_batches(legacy_to_v2(mixed))] == [0, 1]
    assert legacy_to_v2(b"") == b""
    with pytest.raises(InvalidValueError):
        legacy_to_v2(build_batch([(b"a", b"b")]))


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
@pytest.mark.parametrize("magic", [0, 1])
def test_v2_to_legacy(codec: int, magic: int) -> None:
    records = [
        Record(0, 0, b"a", b"1" * 50, [("dropped", b"header")]),
        Record(2, 7, None, b"2" * 50),
        Record(5, -3, b"c", None),
    ]
    blob = build_batch(records, base_offset=100, base_timestamp=10_000, compression=codec)
    blob += build_control_batch(True, 1, 0, 106, 10_100)
    blob += build_batch([(b"d", b"4", None, 20_000)], base_offset=107, compression=codec)
    out = v2_to_legacy(blob, magic)
    expected_codec = NONE if codec == ZSTD or (codec == LZ4 and magic == 0) else codec
    entries = list(iter_batches(out))
    assert all(m == magic for _, m, _ in entries)
    assert {view[17] & 7 for _, _, view in entries} == {expected_codec}
    stamps = [10_000, 10_007, 9_997, 20_000] if magic else [-1] * 4
    assert _legacy(out) == [
        (100, stamps[0], b"a", b"1" * 50, magic, 0 if magic else -1),
        (102, stamps[1], None, b"2" * 50, magic, 0 if magic else -1),
        (105, stamps[2], b"c", None, magic, 0 if magic else -1),
        (107, stamps[3], b"d", b"4", magic, 0 if magic else -1),
    ]


def test_v2_to_legacy_log_append_time_and_round_trip() -> None:
    blob = bytearray(
        build_batch([(b"a", b"1", None, 5), (b"b", b"2", None, 6)], base_offset=3, timestamp_type=1)
    )
    set_log_append_time(blob, 0, 4242)
    out = v2_to_legacy(blob, 1)
    assert [(o, ts, tt) for o, ts, _, _, _, tt in _legacy(out)] == [(3, 4242, 1), (4, 4242, 1)]
    back = _v2_records(legacy_to_v2(out))
    assert [(r[0], r[1], r[4]) for r in back] == [(3, 4242, 1), (4, 4242, 1)]
    assert v2_to_legacy(build_control_batch(False, 1, 0, 0, 0), 1) == b""


def test_v2_to_legacy_passes_or_reencodes_legacy_entries() -> None:
    v1 = build_message_set(ITEMS, 1, GZIP, base_offset=0)
    v0 = build_message_set(ITEMS, 0, base_offset=3)
    assert v2_to_legacy(v1 + v0, 1)[: len(v1)] == v1
    assert [m[0] for m in _legacy(v2_to_legacy(v1 + v0, 1))] == [0, 1, 2, 3, 4, 5]
    assert {m[4] for m in _legacy(v2_to_legacy(v1 + v0, 0))} == {0}
    with pytest.raises(InvalidValueError):
        v2_to_legacy(v1, 2)


def test_records_summary() -> None:
    assert records_summary(b"") == (-1, 0, -1, -1)
    blob = build_batch([(b"a", b"1"), (b"b", b"2")], base_offset=10)
    blob += build_batch([(b"c", b"3")], base_offset=12, compression=GZIP)
    assert records_summary(blob) == (2, 3, 10, 12)
    legacy = build_message_set(ITEMS, 1, SNAPPY, base_offset=5)
    assert records_summary(legacy) == (1, 3, 5, 7)
    assert records_summary(legacy + blob) == (1, 6, 5, 12)
    assert records_summary(blob[:-1], allow_partial_tail=True) == (2, 2, 10, 11)
    with pytest.raises(CodecError):
        records_summary(blob[:-1])
