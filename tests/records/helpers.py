"""Shared helpers for the records tests (and the fuzz targets): CRC fix-ups, sample data, and the
Python reference of the C envelope check."""

from __future__ import annotations

import struct
import zlib

from crc32c import crc32c

from mockbroker import records as rec
from mockbroker.codec_errors import CodecError
from mockbroker.records import GZIP, LZ4, NONE, SNAPPY, ZSTD
from mockbroker.records.batch import BatchHeader

ALL_CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
CODEC_IDS = ["none", "gzip", "snappy", "lz4", "zstd"]


def fix_v2_crc(buf: bytearray, pos: int = 0) -> bytearray:
    """Recompute the CRC-32C of the v2 batch at ``pos`` in place (after a deliberate edit)."""
    (length,) = struct.unpack_from(">i", buf, pos + 8)
    end = min(len(buf), pos + 12 + length)
    struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + 21 : end])))
    return buf


def fix_legacy_crc(buf: bytearray, pos: int = 0) -> bytearray:
    """Recompute the CRC-32 of the legacy entry at ``pos`` in place."""
    (size,) = struct.unpack_from(">i", buf, pos + 8)
    struct.pack_into(">I", buf, pos + 12, zlib.crc32(bytes(buf[pos + 16 : pos + 12 + size])))
    return buf


def compressible(i: int) -> bytes:
    """A value that compresses well (kafka-python sends uncompressed when it would not)."""
    return (f"value-{i}-" * 20).encode()


SAMPLE_HEADERS = [("trace", b"abc"), ("empty", b""), ("null", None), ("ünï", b"\x00\xff")]


def python_envelope(batch: bytes, version: int, max_bytes: int, check_crc: bool = True) -> BatchHeader | None:
    """The checks mockbroker.batches makes on a Produce v3+ batch before its records, in Python: what
    ``_speedups.batch_envelope`` must answer (its header, or None; no CRC check when it gets None)."""
    if len(batch) > max_bytes:
        return None
    try:
        header = rec.verify_batch(batch, check_crc=check_crc)
    except CodecError:
        return None
    if (header.compression == 4 and version < 7) or header.is_control or header.record_count <= 0:
        return None
    if header.last_offset_delta + 1 != header.record_count or (header.producer_id >= 0 and header.base_sequence < 0):
        return None
    return header
