"""Hostile record data in Produce: bad CRCs, bad varints, record counts that lie, compressed garbage,
unknown codecs and decompression bombs, each answered with Kafka's error code for the partition
(the connection stays open), logged, and with a well-behaved client on another connection working.

What Kafka does (UnifiedLog.analyzeAndValidateRecords, LogValidator, DefaultRecordBatch, ReplicaManager):
- a CRC that does not match -> CorruptRecordException -> CORRUPT_MESSAGE;
- records that do not parse (a varint too long, a length past the end, fewer or more records than
  the batch's count, a negative count) -> InvalidRecordException -> INVALID_RECORD;
- a codec id Kafka does not define (5-7) -> IllegalArgumentException from CompressionType.forId,
  and compressed bytes the codec cannot read -> KafkaException "Failed to decompress record stream":
  neither is an ApiException, so ReplicaManager answers UNKNOWN_SERVER_ERROR;
- Kafka has no cap on decompressed size: a bomb of zeros fails as INVALID_RECORD at its first
  record.  The mock inflates at most about its cap (records.compression.DEFAULT_MAX_SIZE, 64 MiB)
  and answers INVALID_RECORD.  The test measures two ways.  The peak of Python allocations
  (tracemalloc: every bytes object the decompressors hand back) must stay below the cap plus 8 MiB:
  this is exact and does not depend on the allocator.  The process's peak RSS must grow by less
  than the cap plus 24 MiB: the coarse, end-to-end figure, which also counts the codec libraries'
  own buffers and glibc arena pages (measured 63-67 MiB here for gzip, lz4 and zstd, once 73 MiB in
  a CI run; ~10 MiB for snappy, whose declared length is checked before anything is allocated).
  Before the chunked output, gzip/lz4 grew a bytearray and peaked at 87-95 MiB RSS.
"""

from __future__ import annotations

import gc
import os
import struct
import tracemalloc
from collections.abc import Iterator

import pytest

from mockbroker import records as rec
from mockbroker.errors import ErrorCode
from mockbroker.protocol.errors import error_name
from mockbroker.records.compression import DEFAULT_MAX_SIZE
from tests.records.helpers import fix_v2_crc

from .hostile import Harness, harness
from .wire import WireClient, produce_body

ATTRIBUTES_AT, COUNT_AT, HEADER = 21, 57, 61
CODECS = {"gzip": rec.GZIP, "snappy": rec.SNAPPY, "lz4": rec.LZ4, "zstd": rec.ZSTD}
SLACK = 8 * 1024 * 1024  # decompressor steps (1 MiB, records/compression.py), the frame, the harness
RSS_SLACK = 24 * 1024 * 1024  # plus codec buffers and allocator pages, which vary with the heap's history


@pytest.fixture
def h(caplog: pytest.LogCaptureFixture) -> Iterator[Harness]:
    with harness(caplog, config={"message.max.bytes": 8 * 1024 * 1024}, topics={"t": 1}) as got:
        yield got


def _batch(n: int = 2, codec: int = rec.NONE) -> bytearray:
    return bytearray(rec.build_batch([(b"k%d" % i, b"v%d" % i) for i in range(n)], compression=codec))


def _raw_batch(payload: bytes, count: int, codec: int = rec.NONE) -> bytearray:
    """A v2 batch header (count records, offsets 0..count-1) around ``payload``, CRC fixed."""
    header = bytearray(_batch(1)[:HEADER])
    struct.pack_into(">i", header, 8, HEADER - 12 + len(payload))
    struct.pack_into(">h", header, ATTRIBUTES_AT, codec)
    struct.pack_into(">i", header, 23, max(count - 1, 0))
    struct.pack_into(">i", header, COUNT_AT, count)
    return fix_v2_crc(header + payload)


def _with_count(batch: bytearray, count: int) -> bytearray:
    struct.pack_into(">i", batch, COUNT_AT, count)
    return fix_v2_crc(batch)


def _flip_last_byte(batch: bytearray) -> bytearray:
    batch[-1] ^= 0xFF
    return batch


def _produce(h: Harness, data: bytes, version: int = 9) -> tuple[int, str | None]:
    with WireClient(h.port) as c:
        part = c.call(0, version, produce_body(version, "t", 0, bytes(data))).responses[0].partition_responses[0]
        ok = c.call(0, version, produce_body(version, "t", 0, bytes(_batch(1))))  # the same connection serves on
        assert ok.responses[0].partition_responses[0].error_code == 0
    return part.error_code, part.error_message


RECORD = b"\x00\x00\x00\x02k\x02v\x00"  # attributes, timestamp delta, offset delta, key "k", value "v", no headers
CASES = {
    "bad-crc": (lambda: _flip_last_byte(_batch()), ErrorCode.CORRUPT_MESSAGE, r"Record is corrupt|CRC|crc"),
    "record-length-varint-too-long": (lambda: _raw_batch(b"\xff" * 10 + RECORD, 1), ErrorCode.INVALID_RECORD,
                                      r"varint"),
    "key-length-varint-too-long": (lambda: _raw_batch(bytes([2 * 16]) + b"\x00\x00\x00" + b"\xff" * 12, 1),
                                   ErrorCode.INVALID_RECORD, r"varint|record 0"),
    "count-says-more": (lambda: _with_count(_batch(2), 3), ErrorCode.INVALID_RECORD, r"record"),
    "count-says-fewer": (lambda: _with_count(_batch(3), 2), ErrorCode.INVALID_RECORD, r"record"),
    "count-negative": (lambda: _with_count(_batch(2), -1), ErrorCode.INVALID_RECORD, r"record count -1"),
    "gzip-count-says-more": (lambda: _with_count(_batch(2, rec.GZIP), 3), ErrorCode.INVALID_RECORD, r"record"),
    "zstd-count-says-fewer": (lambda: _with_count(_batch(3, rec.ZSTD), 2), ErrorCode.INVALID_RECORD, r"record"),
    "codec-id-6": (lambda: _raw_batch(RECORD, 1, codec=6), ErrorCode.UNKNOWN_SERVER_ERROR, r"compression codec 6"),
    **{f"{name}-garbage": ((lambda c=codec: _raw_batch(bytes(range(7, 250)) * 3, 1, codec=c)),
                           ErrorCode.UNKNOWN_SERVER_ERROR, rf"Failed to decompress record stream: {name}")
       for name, codec in CODECS.items()},
    "gzip-truncated": (lambda: _raw_batch(rec.compress(rec.GZIP, b"x" * 5000)[:-12], 1, codec=rec.GZIP),
                       ErrorCode.UNKNOWN_SERVER_ERROR, r"gzip data is truncated"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_record_data_gets_kafkas_error_code(h: Harness, case: str) -> None:
    build, code, detail = CASES[case]
    data = build()
    with h.case(rf"produce to t-0 from .* rejected with {error_name(code)}: .*({detail})"):
        got, message = _produce(h, data)
        assert got == code, (error_name(got), message)
    assert h.cluster.state.partition("t", 0).next_offset == 1  # only the good batch after it was stored


def _vm(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(field)


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc to reset the peak RSS")
@pytest.mark.parametrize("codec", CODECS)
def test_a_decompression_bomb_is_refused_within_the_cap(h: Harness, codec: str) -> None:
    """Zeros worth the cap plus 16 MiB, compressed (100 KB..3 MB on the wire): INVALID_RECORD, and
    the broker (this process: the cluster runs on a background thread) never holds much more than
    the cap."""
    zeros = bytes(DEFAULT_MAX_SIZE + 16 * 1024 * 1024)
    bomb = _raw_batch(rec.compress(CODECS[codec], zeros), 1, codec=CODECS[codec])
    del zeros
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak (VmHWM) starts again from the current RSS
    before = _vm("VmRSS")
    tracemalloc.start()
    try:
        with h.case(rf"rejected with INVALID_RECORD: decompression bomb refused: {codec} data decompresses to "
                    rf"more than the cap of {DEFAULT_MAX_SIZE} bytes", max_latency_s=4.0):
            assert _produce(h, bomb)[0] == ErrorCode.INVALID_RECORD
        traced_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    growth = _vm("VmHWM") - before
    # The bomb inflates to cap + 16 MiB: stopping at the cap keeps both figures below it.
    assert traced_peak < DEFAULT_MAX_SIZE + SLACK, f"Python allocations peaked at {traced_peak >> 20} MiB"
    assert growth < DEFAULT_MAX_SIZE + RSS_SLACK, f"peak RSS grew by {growth >> 20} MiB"
    assert h.cluster.state.partition("t", 0).next_offset == 1
