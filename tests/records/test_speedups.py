"""The optional C record check agrees with the Python pass on every batch, clean or damaged.

The C function only ever says "clean"; when it says no, check_records runs the Python pass to name
the problem.  So the property that matters: C says clean exactly when the Python pass finds nothing.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockbroker import records as rec
from mockbroker.codec_errors import CodecError
from mockbroker.records import check as check_module
from mockbroker.records.batch import HEADER_SIZE

speedups = pytest.importorskip("mockbroker.native._speedups",
                               reason="C extension not built here (no C compiler or Python headers at install)")

NOW = 1_760_000_000_000

record = st.tuples(
    st.none() | st.binary(max_size=200),
    st.none() | st.binary(max_size=200),
    st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=10)), max_size=3),
    st.integers(NOW - 100_000, NOW + 100_000),
)
bound = st.none() | st.integers(NOW - 300_000, NOW + 300_000) | st.sampled_from([-(1 << 63), (1 << 63) - 1, -1])


def python_clean(view: memoryview, count: int, base_ts: int, lo: int | None, hi: int | None, keys: bool) -> bool:
    saved = check_module._records_ok
    check_module._records_ok = None
    try:
        return rec.check_records(view, HEADER_SIZE, len(view), count, base_ts, lo, hi, keys) == []
    except CodecError:
        return False
    finally:
        check_module._records_ok = saved


def c_clean(view: memoryview, count: int, base_ts: int, lo: int | None, hi: int | None, keys: bool) -> bool:
    check_ts = lo is not None and hi is not None
    return speedups.records_ok(view, HEADER_SIZE, len(view), count, base_ts, check_module._int64(lo),
                               check_module._int64(hi), check_ts, keys)


@settings(max_examples=300, deadline=None)
@given(st.lists(record, min_size=1, max_size=40), bound, bound, st.booleans(), st.data())
def test_c_and_python_agree_on_damaged_batches(records: list, lo: int | None, hi: int | None, keys: bool,
                                               data: st.DataObject) -> None:
    batch = bytearray(rec.build_batch(records))
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(HEADER_SIZE, len(batch) - 1))
        batch[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, 4))
    if cut:
        del batch[-cut:]
    header = rec.parse_batch_header(bytes(batch))
    count = header.record_count + data.draw(st.sampled_from([0, 0, 0, -1, 1]))
    view = memoryview(bytes(batch))
    assert c_clean(view, count, header.base_timestamp, lo, hi, keys) == \
        python_clean(view, count, header.base_timestamp, lo, hi, keys)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120), st.integers(0, 20), st.integers(-(1 << 63), (1 << 63) - 1))
def test_c_and_python_agree_on_arbitrary_bytes(body: bytes, count: int, base_ts: int) -> None:
    view = memoryview(bytes(HEADER_SIZE) + body)
    assert c_clean(view, count, base_ts, None, None, False) == python_clean(view, count, base_ts, None, None, False)


def test_overlong_and_overflowing_varints_are_not_clean() -> None:
    good = rec.build_batch([(None, b"v", [], NOW)])
    view = memoryview(good)
    assert c_clean(view, 1, rec.parse_batch_header(good).base_timestamp, None, None, False)
    # length field as a 6-byte varint: longer than an int32 varint may be
    bad = bytes(good[:HEADER_SIZE]) + b"\x80\x80\x80\x80\x80\x00" + bytes(good[HEADER_SIZE + 1:])
    assert not c_clean(memoryview(bad), 1, 0, None, None, False)
    assert not python_clean(memoryview(bad), 1, 0, None, None, False)


def test_check_records_names_problems_with_the_extension_on() -> None:
    batch = rec.build_batch([(None, b"a", [], NOW), (b"k", b"b", [], NOW + 10_000)])
    header = rec.verify_batch(batch)
    problems = rec.check_records(memoryview(batch), HEADER_SIZE, len(batch), 2, header.base_timestamp,
                                 NOW - 5, NOW + 5, True)
    assert problems == [(0, "compacted topic record has no key"), (1, f"timestamp {NOW + 10_000} is out of range")]


@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 8191, 8192, 8193, 1 << 20])
def test_varints_of_one_to_four_bytes_read_alike(size: int) -> None:
    """Value sizes whose zigzag varints take one, two, three or four bytes (C reads the first two inline)."""
    batch = rec.build_batch([(b"k" * min(size, 300), b"v" * size, [("h", b"x" * size)], NOW)] * 2)
    view = memoryview(batch)
    base = rec.parse_batch_header(batch).base_timestamp
    assert c_clean(view, 2, base, None, None, True) and python_clean(view, 2, base, None, None, True)


def test_overlong_two_byte_varints_read_alike() -> None:
    """0x80 0x00 is an overlong zero; both passes read it as Kafka's ByteUtils does (as 0)."""
    good = rec.build_batch([(None, b"", [], NOW)])
    # the record's headers count, its last byte (a one-byte zero), written as two bytes
    bad = bytes(good[:HEADER_SIZE]) + bytes([good[HEADER_SIZE] + 2]) + bytes(good[HEADER_SIZE + 1:-1]) + b"\x80\x00"
    base = rec.parse_batch_header(good).base_timestamp
    assert c_clean(memoryview(bad), 1, base, None, None, False)
    assert python_clean(memoryview(bad), 1, base, None, None, False)


@pytest.mark.parametrize("keys", [False, True])
def test_the_usual_fields_read_alike_past_sixty_four_records(keys: bool) -> None:
    """C matches a one-byte offset delta, a null key and no headers as bytes before its general reads:
    70 records (offset deltas of one and two bytes), null keys refused where keys are needed."""
    batch = rec.build_batch([(None, b"v" * 100, [], NOW + i) for i in range(70)])
    view = memoryview(batch)
    base = rec.parse_batch_header(batch).base_timestamp
    assert c_clean(view, 70, base, NOW - 5, NOW + 100, keys) == python_clean(view, 70, base, NOW - 5, NOW + 100,
                                                                             keys) == (not keys)


@pytest.mark.parametrize(("at", "overlong"), [(3, b"\x80\x00"), (4, b"\x81\x00")])
def test_overlong_offset_deltas_and_null_keys_read_alike(at: int, overlong: bytes) -> None:
    """A record's offset delta (0) or null key (-1) written as an overlong two-byte varint: not the usual
    bytes, so C takes its general read, which accepts it as Kafka's ByteUtils does."""
    good = rec.build_batch([(None, b"", [], NOW)])
    record = good[HEADER_SIZE:]  # length 6, attributes, timestamp delta, offset delta, key, value, headers
    assert record == bytes([12, 0, 0, 0, 1, 0, 0])
    bad = good[:HEADER_SIZE] + bytes([14]) + record[1:at] + overlong + record[at + 1:]
    base = rec.parse_batch_header(good).base_timestamp
    assert c_clean(memoryview(bad), 1, base, None, None, False)
    assert python_clean(memoryview(bad), 1, base, None, None, False)
    extra = bad[:HEADER_SIZE] + bytes([16]) + bad[HEADER_SIZE + 1:] + b"\x00"  # a byte past no headers
    assert not c_clean(memoryview(extra), 1, base, None, None, False)
    assert not python_clean(memoryview(extra), 1, base, None, None, False)
