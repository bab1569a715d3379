"""Shared helpers for the records tests: CRC fix-ups and sample data."""

from __future__ import annotations

import struct
import zlib

from crc32c import crc32c

from mockbroker.records import GZIP, LZ4, NONE, SNAPPY, ZSTD

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
