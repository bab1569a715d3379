"""v2 record batches: round trips, header fields, control batches, in-place rewrites, iteration."""

from __future__ import annotations

import pytest
from crc32c import crc32c

from mockbroker.codec_errors import CodecError, InvalidValueError, TruncatedError
from mockbroker.records import (
    HEADER_SIZE,
    NONE,
    ZSTD,
    BatchHeader,
    Record,
    build_batch,
    build_control_batch,
    build_message_set,
    decode_batch,
    iter_batches,
    parse_batch_header,
    parse_control_record,
    parse_control_value,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    verify_batch,
)
from tests.records.helpers import ALL_CODECS, CODEC_IDS, SAMPLE_HEADERS

VARIANTS = {
    "keys": [(b"k%d" % i, b"v%d" % i * 30, None, 1_700_000_000_000 + i) for i in range(5)],
    "no-keys": [(None, b"v%d" % i * 30, None, 1_700_000_000_000 + 3 * i) for i in range(5)],
    "null-values": [(b"k", None, None, 1_700_000_000_000), (None, None, None, 1_700_000_000_500)],
    "headers": [(b"k", b"v", SAMPLE_HEADERS, 5), (b"k2", b"", [("h", b"x" * 200)], 4)],
    "big": [(b"key", bytes(range(256)) * 40, [("a", b"b")], 10_000 - i) for i in range(50)],
    "empty-strings": [(b"", b"", [], 0)],
}


def _expected(items: list[tuple]) -> list[tuple]:
    return [(i, ts, k, v, list(h or [])) for i, (k, v, h, ts) in enumerate(items)]


def _actual(header: BatchHeader, records: list[Record]) -> list[tuple]:
    return [
        (
            r.offset_delta,
            header.base_timestamp + r.timestamp_delta,
            None if r.key is None else bytes(r.key),
            None if r.value is None else bytes(r.value),
            r.headers,
        )
        for r in records
    ]


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("flags", ["plain", "transactional", "control"])
def test_round_trip(codec: int, variant: str, flags: str) -> None:
    items = VARIANTS[variant]
    data = build_batch(
        items,
        base_offset=1234,
        compression=codec,
        producer_id=77 if flags != "plain" else -1,
        producer_epoch=3 if flags != "plain" else -1,
        base_sequence=9 if flags != "plain" else -1,
        transactional=flags != "plain",
        control=flags == "control",
        partition_leader_epoch=5,
    )
    header, records = decode_batch(data)
    assert verify_batch(data) == header == parse_batch_header(data)
    assert header.magic == 2
    assert header.size == len(data)
    assert header.compression == codec
    assert header.record_count == len(items)
    assert header.base_offset == 1234
    assert header.last_offset_delta == len(items) - 1
    assert header.last_offset == 1234 + len(items) - 1
    assert header.next_offset == 1234 + len(items)
    assert header.partition_leader_epoch == 5
    assert header.base_timestamp == items[0][3]
    assert header.max_timestamp == max(item[3] for item in items)
    assert header.is_transactional == (flags != "plain")
    assert header.is_control == (flags == "control")
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (
        (77, 3, 9) if flags != "plain" else (-1, -1, -1)
    )
    assert header.timestamp_type == 0
    assert not header.has_delete_horizon
    assert _actual(header, records) == _expected(items)
    assert all(r.attributes == 0 for r in records)


def test_uncompressed_keys_are_views_of_the_input() -> None:
    data = bytearray(build_batch([(b"key", b"value")], base_timestamp=0))
    _, (record,) = decode_batch(data)
    assert isinstance(record.key, memoryview) and isinstance(record.value, memoryview)
    assert record.key.obj is data
    data[-4] = ord("X")  # the value lives in the caller's buffer, not a copy
    assert bytes(record.value) == b"vaXue"


def test_record_objects_and_custom_deltas() -> None:
    records = [
        Record(0, 0, b"a", b"1"),
        Record(3, -5, None, b"2", [("x", None)]),
        Record(7, 100, b"c", None, attributes=0),
    ]
    data = build_batch(records, base_offset=10, base_timestamp=1000, compression=ZSTD)
    header, decoded = decode_batch(data)
    assert decoded == records
    assert header.last_offset_delta == 7 and header.next_offset == 18
    assert header.max_timestamp == 1100
    assert header.record_count == 3


def test_default_base_timestamp_and_tuple_forms() -> None:
    header, records = decode_batch(build_batch([(b"k", b"v"), (b"k", b"v", [("h", b"")])]))
    assert header.base_timestamp > 1_600_000_000_000
    assert [r.timestamp_delta for r in records] == [0, 0]
    header, _ = decode_batch(build_batch([(b"k", b"v", None, 42)]))
    assert header.base_timestamp == 42


def test_log_append_time_flag_and_empty_batch() -> None:
    header, records = decode_batch(build_batch([], base_timestamp=5, timestamp_type=1))
    assert records == [] and header.record_count == 0
    assert header.timestamp_type == 1
    assert header.last_offset_delta == -1 and header.max_timestamp == -1


def test_control_batch() -> None:
    data = build_control_batch(
        True, producer_id=42, producer_epoch=7, base_offset=99, timestamp=123, coordinator_epoch=4
    )
    header, (record,) = decode_batch(data)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_offset) == (42, 7, 99)
    assert header.base_timestamp == header.max_timestamp == 123
    assert parse_control_record(record) == (0, 1)
    assert parse_control_value(record) == (0, 4)
    _, (abort,) = decode_batch(build_control_batch(False, 1, 0, 0, 0))
    assert parse_control_record(abort) == (0, 0)
    for bad_key in (None, b"\x00", b"\xff\xff\x00\x00"):
        with pytest.raises(InvalidValueError):
            parse_control_record(Record(0, 0, bad_key, None))
    with pytest.raises(InvalidValueError):
        parse_control_value(Record(0, 0, b"\0\0\0\1", None))


def test_rewrites_outside_the_crc() -> None:
    first = build_batch([(b"a", b"1"), (b"b", b"2")], base_timestamp=10)
    second = build_batch([(b"c", b"3")], base_timestamp=20, compression=1)
    buf = bytearray(first + second)
    set_base_offset(buf, 0, 500)
    set_base_offset(memoryview(buf), len(first), 502)
    set_partition_leader_epoch(buf, len(first), 9)
    assert decode_batch(buf[: len(first)])[0].base_offset == 500
    header = decode_batch(buf[len(first) :])[0]
    assert (header.base_offset, header.partition_leader_epoch) == (502, 9)
    with pytest.raises(TruncatedError):
        set_base_offset(buf, len(buf) - 4, 1)
    legacy = bytearray(build_message_set([(b"k", b"v")], 1))
    with pytest.raises(InvalidValueError):
        set_partition_leader_epoch(legacy, 0, 1)


def test_set_log_append_time_recomputes_crc() -> None:
    first = build_batch([(b"a", b"1")], base_timestamp=10)
    buf = bytearray(first + build_batch([(b"c", b"3"), (b"d", b"4")], base_timestamp=20, compression=4))
    set_log_append_time(buf, len(first), 99_999)
    header, records = decode_batch(buf[len(first) :])
    assert header.timestamp_type == 1 and header.max_timestamp == 99_999
    assert header.compression == 4 and len(records) == 2
    assert header.crc == crc32c(bytes(buf[len(first) + 21 :]))
    assert decode_batch(buf[: len(first)])[0].timestamp_type == 0
    with pytest.raises(CodecError):
        set_log_append_time(buf[:-1], len(first), 1)


def test_iter_batches_mixed_and_partial_tail() -> None:
    v2 = build_batch([(b"a", b"1")], base_offset=0, base_timestamp=0)
    v1 = build_message_set([(b"b", b"2", 5)], 1, base_offset=1)
    v0 = build_message_set([(b"c", b"3"), (b"d", b"4")], 0, compression=1, base_offset=2)
    blob = v2 + v1 + v0 + v2
    entries = list(iter_batches(blob))
    assert [(pos, magic, len(view)) for pos, magic, view in entries] == [
        (0, 2, len(v2)),
        (len(v2), 1, len(v1)),
        (len(v2) + len(v1), 0, len(v0)),
        (len(v2) + len(v1) + len(v0), 2, len(v2)),
    ]
    assert bytes(entries[2][2]) == v0
    for cut in range(1, len(v2)):
        partial = blob[: len(blob) - cut]
        assert len(list(iter_batches(partial, allow_partial_tail=True))) == 3
        with pytest.raises(TruncatedError):
            list(iter_batches(partial))
    assert list(iter_batches(b"")) == []


def test_iter_batches_bad_framing() -> None:
    v2 = bytearray(build_batch([(b"a", b"1")], base_timestamp=0))
    bad_magic = bytearray(v2)
    bad_magic[16] = 3
    with pytest.raises(InvalidValueError):
        list(iter_batches(bad_magic, allow_partial_tail=True))
    negative = bytearray(v2)
    negative[8:12] = b"\xff\xff\xff\xf0"
    with pytest.raises(CodecError):
        list(iter_batches(negative, allow_partial_tail=True))


def test_header_size_constant() -> None:
    data = build_batch([], base_timestamp=0, compression=NONE)
    assert len(data) == HEADER_SIZE
