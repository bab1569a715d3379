"""Codec round trips, the decompression cap, and bad compressed data."""

from __future__ import annotations

import gzip
import io
import os
import struct

import lz4.frame
import pytest
import zstandard

from mockbroker.codec_errors import CodecError, DecompressionError, UnsupportedCompressionError
from mockbroker.records import GZIP, LZ4, NONE, SNAPPY, ZSTD, codec_name, compress, decompress
from mockbroker.records.compression import XERIAL_MAGIC
from tests.records.helpers import ALL_CODECS, CODEC_IDS

DATA = [b"", b"x", os.urandom(1000), b"kafka " * 50_000, os.urandom(70_000) + b"\0" * 70_000]


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
@pytest.mark.parametrize("data", DATA, ids=["empty", "one", "random", "text", "mixed"])
def test_round_trip(codec: int, data: bytes) -> None:
    packed = compress(codec, data)
    assert decompress(codec, packed) == data
    assert decompress(codec, memoryview(packed)) == data
    assert decompress(codec, bytearray(packed)) == data


@pytest.mark.parametrize("data", DATA, ids=["empty", "one", "random", "text", "mixed"])
def test_snappy_reads_raw_and_xerial(data: bytes) -> None:
    raw = compress(SNAPPY, data)
    framed = compress(SNAPPY, data, xerial=True)
    assert not raw.startswith(XERIAL_MAGIC)
    assert framed.startswith(XERIAL_MAGIC + struct.pack(">ii", 1, 1))
    assert decompress(SNAPPY, raw) == data == decompress(SNAPPY, framed)


def test_gzip_output_matches_python_gzip_module_with_fixed_mtime() -> None:
    data = b"hello kafka " * 100
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9, mtime=0) as writer:
        writer.write(data)
    assert compress(GZIP, data, level=9) == out.getvalue()
    assert compress(GZIP, data) == compress(GZIP, data)  # deterministic


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD], ids=["gzip", "lz4", "zstd"])
def test_concatenated_frames(codec: int) -> None:
    assert decompress(codec, compress(codec, b"abc") + compress(codec, b"def")) == b"abcdef"


def test_lz4_blocks_are_independent() -> None:
    packed = compress(LZ4, b"abc" * 100_000)
    flg = packed[4]
    assert flg & 0x20, "block independence flag must be set for Kafka"


def test_zstd_frame_without_content_size_is_capped() -> None:
    packed = zstandard.ZstdCompressor(write_content_size=False).compress(b"\0" * 1_000_000)
    assert decompress(ZSTD, packed) == b"\0" * 1_000_000
    with pytest.raises(DecompressionError, match="cap"):
        decompress(ZSTD, packed, max_size=999_999)


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
def test_cap(codec: int) -> None:
    data = b"\0" * 300_000
    packed = compress(codec, data)
    assert decompress(codec, packed, max_size=len(data)) == data
    with pytest.raises(DecompressionError, match="cap") as info:
        decompress(codec, packed, max_size=len(data) - 1, where=61)
    assert info.value.where == 61


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD], ids=CODEC_IDS[1:])
def test_bomb_over_default_cap(codec: int) -> None:
    packed = compress(codec, b"\0" * (65 << 20))
    with pytest.raises(DecompressionError, match="cap"):
        decompress(codec, packed)


def test_xerial_bomb_checked_before_decompressing() -> None:
    packed = compress(SNAPPY, b"\0" * 100_000, xerial=True)
    with pytest.raises(DecompressionError, match="cap"):
        decompress(SNAPPY, packed, max_size=50_000)


def test_snappy_declared_length_checked_before_allocating() -> None:
    # A raw snappy block claiming 4 GiB of output in five bytes.
    with pytest.raises(DecompressionError, match="cap"):
        decompress(SNAPPY, b"\xff\xff\xff\xff\x0f\x00")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x80",
        b"\xff\xff\xff\xff\xff\xff",
        b"\x05ab",
        XERIAL_MAGIC + b"\0\0\0\1\0\0\0\1\xff\xff\xff\xff",
        XERIAL_MAGIC + b"\0\0\0\1\0\0\0\1\0\0",
        XERIAL_MAGIC + b"\0\0\0\1\0\0\0\1\0\0\0\x09\x05",
    ],
)
def test_bad_snappy(data: bytes) -> None:
    with pytest.raises(DecompressionError):
        decompress(SNAPPY, data)


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD], ids=CODEC_IDS[1:])
def test_truncated_and_garbage(codec: int) -> None:
    data = os.urandom(200) * 20
    packed = compress(codec, data)
    for cut in range(len(packed)):
        try:
            out = decompress(codec, packed[:cut])
        except DecompressionError:
            continue
        # A raw snappy prefix can never decode fully; other codecs must notice truncation.
        raise AssertionError(f"{codec_name(codec)} accepted a {cut}-byte prefix ({len(out)} bytes out)")
    for garbage in (b"garbage bytes here", b"\0" * 40):
        with pytest.raises(DecompressionError):
            decompress(codec, garbage)


def test_gzip_trailing_garbage_rejected() -> None:
    with pytest.raises(DecompressionError):
        decompress(GZIP, compress(GZIP, b"abc") + b"junk")


def test_lz4_frame_with_content_size_and_linked_blocks_reads() -> None:
    data = os.urandom(100) * 3000
    packed = lz4.frame.compress(data, block_linked=True, store_size=True, content_checksum=True)
    assert decompress(LZ4, packed) == data


@pytest.mark.parametrize("codec", [5, 6, 7, -1])
def test_unknown_codec(codec: int) -> None:
    with pytest.raises(UnsupportedCompressionError):
        decompress(codec, b"abc")
    with pytest.raises(UnsupportedCompressionError):
        compress(codec, b"abc")


def test_none_codec_cap_and_names() -> None:
    assert decompress(NONE, b"abc") == b"abc"
    with pytest.raises(DecompressionError):
        decompress(NONE, b"abc", max_size=2)
    assert [codec_name(c) for c in range(6)] == ["none", "gzip", "snappy", "lz4", "zstd", "codec-5"]
    assert issubclass(DecompressionError, CodecError)


def test_small_lz4_frames_take_the_one_call_path_with_the_same_answers() -> None:
    from mockbroker.records.compression import _lz4_one_shot_bound

    small = lz4.frame.compress(b"kafka " * 1000, store_size=True)
    assert _lz4_one_shot_bound(small, 64 << 20) > 6000  # the usual batch takes the one-call path
    assert _lz4_one_shot_bound(lz4.frame.compress(b"x", store_size=False), 64 << 20) > 0
    assert decompress(LZ4, small) == b"kafka " * 1000
    # a header declaring more than its bytes could ever expand to goes the capped, streaming way
    lying = bytearray(small)
    lying[6:14] = (1 << 40).to_bytes(8, "little")
    assert _lz4_one_shot_bound(lying, 64 << 20) == 0
    with pytest.raises(DecompressionError):
        decompress(LZ4, bytes(lying))
    # a frame whose 256x bound is past the cap goes the streaming way too, and stops at the cap
    zeros = lz4.frame.compress(b"\0" * 300_000)
    assert _lz4_one_shot_bound(zeros, 299_999) == 0
    with pytest.raises(DecompressionError, match="cap"):
        decompress(LZ4, zeros, max_size=299_999)
