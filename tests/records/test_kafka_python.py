"""Cross-checks against kafka-python's own record builders and readers (kafka.record).

kafka-python is used here only as an independent second implementation: its bytes must decode
with ours and ours with it, for every codec, and where the inputs fully determine the bytes,
re-encoding what we decoded must reproduce its bytes exactly.
"""

from __future__ import annotations

import gzip
import types

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from mockbroker.records import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    build_batch,
    build_control_batch,
    build_message_set,
    decode_batch,
    decode_message_set,
)
from tests.records.helpers import ALL_CODECS, CODEC_IDS, SAMPLE_HEADERS, compressible

pytestmark = pytest.mark.usefixtures("kafka_snappy")

ITEMS = [
    (b"key-0", compressible(0), [], 1_700_000_000_000),
    (None, compressible(1), [("h", b"v")], 1_700_000_000_009),
    (b"key-2", None, SAMPLE_HEADERS, 1_699_999_999_990),
    (b"", compressible(3), [], 1_700_000_000_001),
]


def _theirs_v2(codec: int, transactional: bool = False) -> bytes:
    builder = DefaultRecordBatchBuilder(
        2, codec, transactional, 55 if transactional else -1, 1 if transactional else -1,
        10 if transactional else -1, 1 << 20,
    )  # fmt: skip
    for offset, (key, value, headers, timestamp) in enumerate(ITEMS):
        assert builder.append(offset, timestamp, key, value, headers) is not None
    return bytes(builder.build())


def _read_theirs(data: bytes) -> list[tuple]:
    out = []
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        if hasattr(batch, "validate_crc"):
            assert batch.validate_crc()
        for record in batch:
            headers = list(record.headers) if record.headers else []
            out.append((record.offset, record.timestamp, record.key, record.value, headers))
    return out


def _plain(data: bytes | memoryview | None) -> bytes | None:
    return None if data is None else bytes(data)


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
@pytest.mark.parametrize("transactional", [False, True])
def test_their_v2_decodes_with_ours(codec: int, transactional: bool) -> None:
    data = _theirs_v2(codec, transactional)
    header, records = decode_batch(data)
    assert header.compression == codec
    assert header.is_transactional == transactional
    assert header.record_count == len(ITEMS)
    ours = [
        (header.base_offset + r.offset_delta, header.base_timestamp + r.timestamp_delta, _plain(r.key),
         _plain(r.value), r.headers)
        for r in records
    ]  # fmt: skip
    assert ours == _read_theirs(data)
    assert ours == [(i, ts, k, v, h) for i, (k, v, h, ts) in enumerate(ITEMS)]


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
def test_our_v2_decodes_with_theirs(codec: int) -> None:
    data = build_batch(ITEMS, base_offset=300, compression=codec) + build_batch(
        [(b"x", b"y", None, 5)], base_offset=304, compression=codec, timestamp_type=1
    )
    expected = [(300 + i, ts, k, v, h) for i, (k, v, h, ts) in enumerate(ITEMS)] + [(304, 5, b"x", b"y", [])]
    assert _read_theirs(data) == expected


def test_our_control_batch_reads_as_their_control_record() -> None:
    for commit in (True, False):
        batch = MemoryRecords(build_control_batch(commit, 9, 2, 40, 1234, coordinator_epoch=3)).next_batch()
        assert batch.is_control_batch and batch.is_transactional
        (record,) = list(batch)
        assert (record.commit, record.abort, record.version) == (commit, not commit, 0)


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
def test_byte_identical_v2_reencode(codec: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Python's gzip module stamps the current time into the gzip header; pin it to 0.
    monkeypatch.setattr(gzip, "time", types.SimpleNamespace(time=lambda: 0))
    for transactional in (False, True):
        data = _theirs_v2(codec, transactional)
        header, records = decode_batch(data)
        again = build_batch(
            records,
            base_offset=header.base_offset,
            compression=header.compression,
            base_timestamp=header.base_timestamp,
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence,
            transactional=header.is_transactional,
            partition_leader_epoch=header.partition_leader_epoch,
            compression_level=9 if codec == GZIP else None,
            xerial=codec == SNAPPY,  # kafka-python, like Java, frames snappy the xerial way
        )
        assert again == data


LEGACY_ITEMS = [(b"k0", compressible(0), 1000), (None, compressible(1), 1007), (b"k2", None, 995)]
LEGACY_CASES = [(0, NONE), (0, GZIP), (0, SNAPPY), (1, NONE), (1, GZIP), (1, SNAPPY), (1, LZ4)]


def _theirs_legacy(magic: int, codec: int, base_offset: int = 0) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for i, (key, value, timestamp) in enumerate(LEGACY_ITEMS):
        assert builder.append(base_offset + i, timestamp, key, value) is not None
    return bytes(builder.build())


@pytest.mark.parametrize(("magic", "codec"), LEGACY_CASES)
def test_their_legacy_decodes_with_ours(magic: int, codec: int) -> None:
    data = _theirs_legacy(magic, codec, base_offset=0 if codec else 20)
    ours = [(m.offset, m.timestamp, _plain(m.key), _plain(m.value), []) for m in decode_message_set(data)]
    theirs = _read_theirs(data)
    # kafka-python reports None where we report -1 for magic-0 timestamps.
    assert ours == [(o, -1 if ts is None else ts, k, v, h) for o, ts, k, v, h in theirs]
    # A producer's magic-1 wrapper has offset 0: the base would be negative, so (as in Kafka)
    # the relative offsets 0..2 are reported as written.
    assert [m[0] for m in ours] == ([0, 1, 2] if codec else [20, 21, 22])


@pytest.mark.parametrize(("magic", "codec"), LEGACY_CASES)
def test_our_legacy_decodes_with_theirs(magic: int, codec: int) -> None:
    data = build_message_set(LEGACY_ITEMS, magic, codec, base_offset=70)
    theirs = _read_theirs(data)
    expected = [(70 + i, ts if magic else None, k, v, []) for i, (k, v, ts) in enumerate(LEGACY_ITEMS)]
    assert theirs == expected
    lat = _read_theirs(build_message_set(LEGACY_ITEMS, 1, codec, base_offset=70, log_append_time=4321))
    assert [(o, ts) for o, ts, *_ in lat] == [(70, 4321), (71, 4321), (72, 4321)]


@pytest.mark.parametrize("magic", [0, 1])
def test_byte_identical_legacy_reencode(magic: int) -> None:
    data = _theirs_legacy(magic, NONE, base_offset=5)
    assert build_message_set(decode_message_set(data), magic) == data


def test_zstd_constant_is_kafkas() -> None:
    assert DefaultRecordBatchBuilder.CODEC_ZSTD == ZSTD
    assert DefaultRecordBatchBuilder.CODEC_LZ4 == LZ4
