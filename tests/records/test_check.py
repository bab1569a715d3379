"""check_records: the produce-time pass agrees with the full decoder and names policy problems."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockbroker import records as rec
from mockbroker.codec_errors import CodecError
from mockbroker.records.batch import HEADER_SIZE

NOW = 1_760_000_000_000

record = st.tuples(
    st.none() | st.binary(max_size=300),
    st.none() | st.binary(max_size=300),
    st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=10)), max_size=3),
    st.integers(NOW - 100_000, NOW + 100_000),
)


def check(batch: bytes, lo: int | None = None, hi: int | None = None, keys: bool = False) -> list:
    header = rec.verify_batch(batch)
    view = memoryview(batch)
    return rec.check_records(view, HEADER_SIZE, len(view), header.record_count, header.base_timestamp, lo, hi, keys)


@settings(max_examples=150, deadline=None)
@given(st.lists(record, min_size=1, max_size=200))
def test_valid_batches_pass(records: list) -> None:
    assert check(rec.build_batch(records), NOW - 200_000, NOW + 200_000) == []


def test_policy_problems_are_named_per_record() -> None:
    batch = rec.build_batch([(None, b"a", [], NOW), (b"k", b"b", [], NOW + 10_000), (b"k", b"c", [], NOW)])
    assert check(batch, NOW - 5, NOW + 5) == [(1, f"timestamp {NOW + 10_000} is out of range")]
    assert check(batch, keys=True) == [(0, "compacted topic record has no key")]
    gappy = rec.build_batch([rec.Record(0, 0, b"k", b"v"), rec.Record(2, 0, b"k", b"v")], base_timestamp=NOW)
    assert check(gappy) == [(1, "record 1 has offset delta 2")]


@settings(max_examples=200, deadline=None)
@given(st.lists(record, min_size=1, max_size=20), st.data())
def test_damage_raises_codec_error_like_the_decoder(records: list, data: st.DataObject) -> None:
    good = bytearray(rec.build_batch(records))
    at = data.draw(st.integers(HEADER_SIZE, len(good) - 1))
    good[at] = data.draw(st.integers(0, 255))
    count = rec.parse_batch_header(bytes(good)).record_count
    view = memoryview(bytes(good))
    try:
        decoded = rec.record.decode_records(view, HEADER_SIZE, len(view), count)
    except CodecError:
        decoded = None
    try:
        problems = rec.check_records(view, HEADER_SIZE, len(view), count, 0, None, None)
    except CodecError:
        problems = None
    if decoded is None:
        # the decoder also validates header keys as UTF-8, which the pass does not (Kafka does not
        # either): only a batch with headers may pass the check yet fail the full decoder
        assert problems is None or any(r[2] for r in records)
    else:
        assert problems is not None
        assert [i for i, _ in problems] == [i for i, r in enumerate(decoded) if r.offset_delta != i]


@pytest.mark.parametrize("cut", [1, 5, 20])
def test_truncated_records_raise(cut: int) -> None:
    batch = rec.build_batch([(b"k" * 30, b"v" * 30, [("h", b"x")], NOW)] * 3)
    view = memoryview(batch)[:-cut]
    with pytest.raises(CodecError):
        rec.check_records(view, HEADER_SIZE, len(view), 3, NOW, None, None)
