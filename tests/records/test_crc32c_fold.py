"""mockbroker's own CRC-32C (``_speedups.crc32c``: carry-less folding on CPUs with AVX-512 and
VPCLMULQDQ, the crc32 instruction or a bit at a time elsewhere) agrees with the crc32c package, and the
broker uses it exactly where the CPU folds."""

from __future__ import annotations

import os
import random

import crc32c as package
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockbroker.records.crc import load_crc32c

speedups = pytest.importorskip("mockbroker.native._speedups",
                               reason="C extension not built here (no C compiler or Python headers at install)")


def test_the_check_value() -> None:
    assert speedups.crc32c(b"123456789") == 0xE3069283  # CRC-32C's published check value
    assert speedups.crc32c(b"") == 0
    assert speedups.crc32c(b"\0" * 32) == 0x8A9136AA  # RFC 3720's test vectors
    assert speedups.crc32c(b"\xff" * 32) == 0x62A8AB43
    assert speedups.crc32c(bytes(range(32))) == 0x46DD794E


WAYS = ("zmm", "crc32", "bits")  # _speedups.crc32c_by's ways: folding, the crc32 instruction alone, bits


def test_every_length_and_alignment_up_to_past_three_blocks() -> None:
    data = os.urandom(1100)
    view = memoryview(data)
    for length in range(0, 1030):
        for start in (0, 1, 5, 13, 63):
            if start + length <= len(data):
                piece = view[start:start + length]
                assert speedups.crc32c(piece) == package.crc32c(piece), (start, length)


def test_each_way_this_cpu_has_at_every_length() -> None:
    """Each way of summing on its own (the broker takes only the fastest this CPU has), from the shortest
    buffer it takes to past several of its steps, at two alignments."""
    data = os.urandom(1400)
    view = memoryview(data)
    ran = set()
    for length in range(0, 1300):
        for start in (0, 3):
            piece = view[start:start + length]
            expected = package.crc32c(piece)
            for way in WAYS:
                got = speedups.crc32c_by(piece, way)
                if got is not None:
                    ran.add(way)
                    assert got == expected, (way, start, length)
    assert "bits" in ran
    assert speedups.crc32c_by(b"x" * 1000, "sideways") is None


def test_each_way_on_long_buffers() -> None:
    rng = random.Random(9)
    for length in (65536, (1 << 20) + 5):
        data = rng.randbytes(length)
        expected = package.crc32c(data)
        for way in WAYS:
            got = speedups.crc32c_by(data, way)
            assert got is None or got == expected, (way, length)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=200, max_size=3000), st.integers(0, 2999), st.integers(0, 7))
def test_one_flipped_bit_anywhere_changes_it_as_it_changes_the_package(data: bytes, at: int, bit: int) -> None:
    damaged = bytearray(data)
    damaged[at % len(data)] ^= 1 << bit
    assert speedups.crc32c(data) == package.crc32c(data)
    assert speedups.crc32c(damaged) == package.crc32c(bytes(damaged)) != package.crc32c(data)


def test_buffers_of_every_kind() -> None:
    data = os.urandom(5000)
    expected = package.crc32c(data)
    assert speedups.crc32c(bytearray(data)) == expected
    assert speedups.crc32c(memoryview(data)) == expected
    with pytest.raises(TypeError):
        speedups.crc32c("text")


def test_the_broker_uses_it_where_the_cpu_folds() -> None:
    if os.environ.get("MOCKBROKER_PURE_PYTHON", "") not in ("", "0"):
        pytest.skip("MOCKBROKER_PURE_PYTHON is set: the broker uses the package")
    chosen = load_crc32c()
    if speedups.crc32c_folds():
        assert chosen is speedups.crc32c
    else:
        assert chosen is not speedups.crc32c


def test_threads_summing_long_buffers_at_once_agree() -> None:
    """Buffers of 64 KiB and more are summed without the GIL: four threads at once get what the package
    gets."""
    import threading

    rng = random.Random(4)
    buffers = [rng.randbytes(rng.randint(1 << 16, 1 << 20)) for _ in range(8)]
    expected = [package.crc32c(b) for b in buffers]
    wrong: list[int] = []

    def sum_all() -> None:
        for _ in range(5):
            wrong.extend(i for i, b in enumerate(buffers) if speedups.crc32c(b) != expected[i])

    threads = [threading.Thread(target=sum_all) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong
