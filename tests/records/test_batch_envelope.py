"""The C envelope check of a Produce v3+ batch (``_speedups.batch_envelope``) agrees with the Python path.

``batch_envelope`` returns the header when every check made before the records passes, else None
(the Python path then runs and names the problem).  Both directions matter: a header where Python
would refuse would let a bad batch in; a None where Python would accept would only cost speed, but
would mean the fast path silently stopped working.  And end to end: validate_produce answers the
same (batches, or the same error code and message) with the C check on and off.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockbroker import batches as batches_module
from mockbroker import records as rec
from mockbroker.batches import BatchRejected, Policy, validate_produce
from mockbroker.codec_errors import CodecError
from mockbroker.records.batch import BatchHeader, crc32c_function
from tests.records.helpers import python_envelope

speedups = pytest.importorskip("mockbroker.native._speedups",
                               reason="C extension not built here (no C compiler or Python headers at install)")

NOW = 1_760_000_000_000


@st.composite
def batches(draw: st.DrawFn) -> bytes:
    count = draw(st.integers(1, 5))
    producer = draw(st.sampled_from([(-1, -1, -1), (7, 0, 0), (7, 1, -1), (-1, -1, 5)]))
    batch = bytearray(rec.build_batch(
        [(None, draw(st.binary(max_size=30)), [], NOW + i) for i in range(count)],
        compression=draw(st.sampled_from([rec.NONE, rec.GZIP, rec.LZ4, rec.ZSTD])),
        producer_id=producer[0], producer_epoch=producer[1], base_sequence=producer[2],
        transactional=draw(st.booleans()) and producer[0] >= 0, control=draw(st.integers(0, 9)) == 0))
    for _ in range(draw(st.integers(0, 3))):  # damage, mostly in the header where the envelope looks
        at = draw(st.integers(0, min(len(batch) - 1, 70)) | st.integers(0, len(batch) - 1))
        batch[at] = draw(st.integers(0, 255))
    if draw(st.booleans()):  # a CRC that matches whatever the damage left, so the checks after it run
        batch[17:21] = crc32c_function()(bytes(batch[21:])).to_bytes(4, "big")
    cut = draw(st.integers(-3, 3))
    return bytes(batch[:cut] if cut < 0 else batch + b"\0" * cut)


@settings(max_examples=400, deadline=None)
@given(batches(), st.sampled_from([3, 6, 7, 9, 13]), st.integers(60, 400), st.booleans())
def test_the_envelope_agrees_with_python_both_ways(batch: bytes, version: int, max_bytes: int, crc: bool) -> None:
    fields = speedups.batch_envelope(batch, version, max_bytes, crc32c_function() if crc else None)
    expected = python_envelope(batch, version, max_bytes, check_crc=crc)
    if expected is None:
        assert fields is None
    else:
        assert fields is not None and BatchHeader(*fields) == expected


BOUNDS = [None, (NOW, NOW + 2), (NOW + 1, NOW + 1), (-(1 << 70), 1 << 70), (NOW + 3, NOW)]


@st.composite
def uncompressed_batches(draw: st.DrawFn) -> bytes:
    """Batches whose envelope passes (the CRC made to match), records with or without keys, some damaged."""
    count = draw(st.integers(1, 5))
    batch = bytearray(rec.build_batch(
        [(draw(st.none() | st.binary(max_size=4)), draw(st.binary(max_size=30)), [], NOW + i) for i in range(count)]))
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):  # damage in the records only
        batch[draw(st.integers(rec.HEADER_SIZE, len(batch) - 1))] = draw(st.integers(0, 255))
    batch[17:21] = crc32c_function()(bytes(batch[21:])).to_bytes(4, "big")
    return bytes(batch)


@settings(max_examples=500, deadline=None)
@given(uncompressed_batches() | batches(), st.sampled_from([3, 9]), st.sampled_from(BOUNDS), st.booleans())
def test_given_bounds_it_also_checks_the_records_of_an_uncompressed_batch(batch: bytes, version: int,
                                                                          bounds: Any, need_keys: bool) -> None:
    lo, hi = bounds or (None, None)
    fields = speedups.batch_envelope(batch, version, 1 << 20, crc32c_function(), (lo, hi, need_keys))
    expected = python_envelope(batch, version, 1 << 20)
    if expected is not None and expected.compression == rec.NONE:
        try:
            problems = rec.check_records(memoryview(batch), rec.HEADER_SIZE, len(batch), expected.record_count,
                                         expected.base_timestamp, lo, hi, need_keys)
        except CodecError:
            problems = [(0, "unreadable")]
        if problems:
            expected = None
    if expected is None:
        assert fields is None
    else:
        assert fields is not None and BatchHeader(*fields) == expected


def _outcome(batch: bytes, version: int, policy: Policy) -> Any:
    try:
        return [(bytes(b), h) for b, h in validate_produce(memoryview(batch), version, policy)]
    except BatchRejected as exc:
        return exc.code, exc.message, [(e.batch_index, e.message) for e in exc.record_errors]


@settings(max_examples=300, deadline=None)
@given(batches(), st.sampled_from([3, 7, 9]), st.integers(60, 400), st.booleans(), st.booleans(),
       st.sampled_from([(10_000, 10_000), (0, 2), (1 << 70, 0)]), st.booleans())
def test_validate_produce_answers_the_same_with_and_without_it(batch: bytes, version: int, max_bytes: int,
                                                               compacted: bool, strict: bool, window: Any,
                                                               log_append_time: bool) -> None:
    policy = Policy(max_message_bytes=max_bytes, compression="producer", log_append_time=log_append_time,
                    before_max_ms=window[0], after_max_ms=window[1], now_ms=NOW, compacted=compacted,
                    check_records=strict)  # strict: mock.produce.validation=strict; else envelope
    with_c = _outcome(batch, version, policy)
    saved = batches_module.batch_envelope
    batches_module.batch_envelope = None
    try:
        without = _outcome(batch, version, policy)
    finally:
        batches_module.batch_envelope = saved
    assert with_c == without


def test_a_clean_batch_takes_the_fast_path() -> None:
    batch = rec.build_batch([(None, b"v", [], NOW)], compression=rec.LZ4, producer_id=3, producer_epoch=0,
                            base_sequence=0)
    fields = speedups.batch_envelope(batch, 9, 1 << 20, crc32c_function())
    assert fields is not None and BatchHeader(*fields) == rec.verify_batch(batch)
    assert speedups.batch_envelope(batch, 9, len(batch) - 1, crc32c_function()) is None  # max.message.bytes


def test_settings_the_c_check_cannot_take_fall_back_to_python() -> None:
    batch = memoryview(rec.build_batch([(None, b"v", [], NOW)]))
    policy = Policy(max_message_bytes=1 << 70, compression="producer", log_append_time=False,
                    before_max_ms=1 << 50, after_max_ms=1 << 50, now_ms=NOW)  # past 64 bits: OverflowError in C
    assert [h.record_count for _b, h in validate_produce(batch, 9, policy)] == [1]


def test_crcs_of_every_length_around_the_hardware_limits_agree() -> None:
    """The envelope folds batches of 256 bytes and more where the CPU can (crc32c_fold.h), sums shorter
    ones (up to 4 KiB elsewhere) with the CPU's crc32 instruction and hands longer ones to the crc32c
    package: each agrees with the package at every length mod 8 on either side of each limit, and a
    flipped bit anywhere is caught."""
    import crc32c as package

    crc = crc32c_function()
    base = len(rec.build_batch([(None, b"", [], NOW)]))
    for target in [*range(60, 80), *range(250, 275), *range(4090, 4130), 9000]:  # bytes the CRC covers
        value = b"x" * max(0, target + 21 - base - 2)
        batch = bytearray(rec.build_batch([(None, value, [], NOW)]))
        assert package.crc32c(bytes(batch[21:])) == int.from_bytes(batch[17:21], "big")
        assert speedups.batch_envelope(bytes(batch), 9, 1 << 20, crc) is not None, len(batch)
        for at in (21, len(batch) // 2, len(batch) - 1):
            batch[at] ^= 0x10
            assert speedups.batch_envelope(bytes(batch), 9, 1 << 20, crc) is None, (len(batch), at)
            batch[at] ^= 0x10
