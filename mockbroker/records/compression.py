"""Compression codecs used inside Kafka record batches and legacy message sets.

Codec ids are the values of the low three attribute bits: NONE=0, GZIP=1, SNAPPY=2, LZ4=3, ZSTD=4.
:func:`compress` and :func:`decompress` are pure functions over bytes-like objects.

Every decompression is bounded: ``max_size`` caps the decompressed size (default
:data:`DEFAULT_MAX_SIZE`, 64 MiB) and is enforced *while* decompressing, so a small "bomb" never
allocates more than about the cap.  All failures raise :class:`~mockbroker.codec_errors.CodecError`
subclasses (never zlib/lz4/zstd/cramjam exceptions):

* unknown codec id -> :class:`UnsupportedCompressionError`
* corrupt, truncated or oversized data -> :class:`DecompressionError` (oversized:
  its subclass :class:`~mockbroker.codec_errors.DecompressionCapError`)

Formats:

* gzip: a gzip member (RFC 1952); concatenated members are accepted on input, as Java's
  ``GZIPInputStream`` does.  Output has mtime 0, OS 255 and XFL set from the level, the same
  container Python's :mod:`gzip` module writes, so output is deterministic.
* snappy: input may be raw snappy or the xerial framing Java clients write
  (``\\x82SNAPPY\\x00``, int32 version, int32 compat, then ``[int32 length][raw block]``...).
  Output is raw snappy unless ``xerial=True``.
* lz4: the LZ4 frame format with independent blocks (Kafka cannot read linked blocks).
  Magic-0 message sets used a broken frame header checksum (KAFKA-3160); that quirk is not
  handled here (see :mod:`mockbroker.records.legacy`, which rejects LZ4 at magic 0).
* zstd: one or more zstd frames; the cap holds even when a frame lacks a content size.
"""

from __future__ import annotations

import importlib
import struct
import zlib
from typing import Any

from mockbroker.codec_errors import DecompressionCapError, DecompressionError, UnsupportedCompressionError

__all__ = [
    "CODEC_NAMES",
    "DEFAULT_MAX_SIZE",
    "GZIP",
    "LZ4",
    "NONE",
    "SNAPPY",
    "ZSTD",
    "codec_name",
    "compress",
    "decompress",
]


class _ImportedOnFirstUse:
    """A codec library imported when first used: cramjam, lz4 and zstandard together cost several
    milliseconds of broker start, and many brokers never see a compressed batch."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: Any = None

    def __getattr__(self, attr: str) -> Any:  # only for names not yet copied onto the instance
        if self._module is None:
            self._module = importlib.import_module(self._name)
        value = getattr(self._module, attr)
        setattr(self, attr, value)  # the next lookup is a plain attribute read
        return value


cramjam: Any = _ImportedOnFirstUse("cramjam")
lz4_frame: Any = _ImportedOnFirstUse("lz4.frame")
zstandard: Any = _ImportedOnFirstUse("zstandard")

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

CODEC_NAMES: dict[int, str] = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

#: Default cap on the decompressed size of one batch / wrapper message (64 MiB).
DEFAULT_MAX_SIZE = 64 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE = 32 * 1024

_INT32 = struct.Struct(">i")
_GZIP_TRAILER = struct.Struct("<II")

# Decompressors produce at most about this much per step, bounding memory held past the cap.
_STEP_OUTPUT = 1024 * 1024
# A zstd block of n compressed bytes yields at most about 32 KiB per byte (an RLE block: a
# 3-byte header and one byte expand to 128 KiB), so feeding input in slices bounds each step's
# output to about _STEP_OUTPUT (and never far past the cap), whatever the frame claims.
_ZSTD_MAX_RATIO = 32 * 1024
_LZ4_MAX_RATIO = 256  # see _lz4_one_shot_bound
_LZ4_SLACK = 64 * 1024
_ZSTD_MIN_FEED = 128
_ZSTD_MAX_WINDOW = 1 << 27

Buffer = bytes | bytearray | memoryview


def codec_name(codec: int) -> str:
    """The lower-case name Kafka uses for a codec id (``"codec-7"`` for unknown ids)."""
    return CODEC_NAMES.get(codec, f"codec-{codec}")


def _unsupported(codec: int, where: int) -> UnsupportedCompressionError:
    return UnsupportedCompressionError(f"unknown compression codec {codec}", where)


# ---------------------------------------------------------------------------------------------
# compress


def compress(codec: int, data: Buffer, *, level: int | None = None, xerial: bool = False) -> bytes:
    """Compress ``data`` with the codec id ``codec``.

    ``level`` is the codec's compression level (gzip default 6, zstd default 3; ignored by
    snappy and by lz4 unless given).  ``xerial=True`` writes snappy in the xerial framing.
    """
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return _gzip_compress(data, 6 if level is None else level)
    if codec == SNAPPY:
        if not xerial:
            return bytes(cramjam.snappy.compress_raw(bytes(data)))
        return _xerial_compress(data)
    if codec == LZ4:
        kwargs = {} if level is None else {"compression_level": level}
        return lz4_frame.compress(bytes(data), block_linked=False, **kwargs)  # type: ignore[no-any-return]  # lz4: untyped
    if codec == ZSTD:
        return zstandard.ZstdCompressor(level=3 if level is None else level).compress(bytes(data))  # type: ignore[no-any-return]  # untyped
    raise _unsupported(codec, -1)


def _gzip_compress(data: Buffer, level: int) -> bytes:
    xfl = 2 if level == 9 else 4 if level == 1 else 0
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00" + bytes((xfl, 255))
    deflater = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, zlib.DEF_MEM_LEVEL, 0)
    body = deflater.compress(data) + deflater.flush()
    trailer = _GZIP_TRAILER.pack(zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return header + body + trailer


def _xerial_compress(data: Buffer) -> bytes:
    view = memoryview(data)
    out = bytearray(XERIAL_HEADER)
    for start in range(0, len(view), XERIAL_BLOCK_SIZE):
        block = cramjam.snappy.compress_raw(bytes(view[start : start + XERIAL_BLOCK_SIZE]))
        out += _INT32.pack(len(block))
        out += block
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# decompress


def decompress(codec: int, data: Buffer, max_size: int = DEFAULT_MAX_SIZE, where: int = -1) -> bytes:
    """Decompress ``data`` (codec id ``codec``), refusing output larger than ``max_size`` bytes.

    ``where`` is the byte offset of ``data`` in the enclosing buffer, used in error messages.
    """
    if codec == NONE:
        if len(data) > max_size:
            raise DecompressionCapError(f"uncompressed data of {len(data)} bytes over cap {max_size}", where)
        return bytes(data)
    if codec == GZIP:
        return _gzip_decompress(data, max_size, where)
    if codec == SNAPPY:
        return _snappy_decompress(data, max_size, where)
    if codec == LZ4:
        return _lz4_decompress(data, max_size, where)
    if codec == ZSTD:
        return _zstd_decompress(data, max_size, where)
    raise _unsupported(codec, where)


def _over_cap(name: str, max_size: int, where: int) -> DecompressionError:
    return DecompressionCapError(f"{name} data decompresses to more than the cap of {max_size} bytes", where)


class _Output:
    """Decompressed output kept as the decompressor's own chunks, joined once at the end: a bomb
    stops at the cap having held about the cap (a growing bytearray would also hold the copies
    its reallocations leave behind), and a good batch costs the same one copy as before."""

    __slots__ = ("chunks", "max_size", "name", "size", "where")

    def __init__(self, max_size: int, name: str, where: int) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.max_size, self.name, self.where = max_size, name, where

    def step(self) -> int:
        """How much the next step may produce: up to one byte past the cap (to detect it), bounded."""
        return min(self.max_size + 1 - self.size, _STEP_OUTPUT)

    def add(self, chunk: bytes) -> None:
        if chunk:
            self.size += len(chunk)
            if self.size > self.max_size:
                self.chunks.clear()
                raise _over_cap(self.name, self.max_size, self.where)
            self.chunks.append(chunk)

    def join(self) -> bytes:
        return self.chunks[0] if len(self.chunks) == 1 else b"".join(self.chunks)


def _gzip_decompress(data: Buffer, max_size: int, where: int) -> bytes:
    out = _Output(max_size, "gzip", where)
    pending: Buffer = data
    try:
        while True:  # one gzip member per pass
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            while True:
                # The step is always >= 1 (a max_length of 0 would mean "unlimited").
                step = out.step()
                chunk = inflater.decompress(pending, step)
                out.add(chunk)
                pending = inflater.unconsumed_tail
                if inflater.eof:
                    break
                if len(chunk) < step and not pending:
                    raise DecompressionError("gzip data is truncated", where)
            pending = inflater.unused_data
            if not pending:
                return out.join()
    except zlib.error as exc:
        raise DecompressionError(f"gzip data is corrupt ({exc})", where) from None


def _snappy_declared_length(view: memoryview, start: int, end: int, where: int) -> int:
    """Read the uint32 varint a raw snappy block starts with (its uncompressed length)."""
    value = 0
    for i in range(5):
        if start + i >= end:
            raise DecompressionError("snappy block is truncated in its length varint", where)
        byte = view[start + i]
        value |= (byte & 0x7F) << (7 * i)
        if byte < 0x80:
            if value > 0xFFFFFFFF:
                break
            return value
    raise DecompressionError("snappy block has an invalid length varint", where)


def _snappy_decompress(data: Buffer, max_size: int, where: int) -> bytes:
    view = memoryview(data)
    n = len(view)
    blocks: list[tuple[int, int, int]] = []  # (start, end, uncompressed length)
    if n >= 16 and view[:8] == XERIAL_MAGIC:
        pos = 16
        while pos < n:
            if pos + 4 > n:
                raise DecompressionError("xerial snappy block length is truncated", where)
            (size,) = _INT32.unpack_from(view, pos)
            pos += 4
            if size < 0 or pos + size > n:
                raise DecompressionError(f"xerial snappy block length {size} is invalid", where)
            blocks.append((pos, pos + size, _snappy_declared_length(view, pos, pos + size, where)))
            pos += size
    else:
        blocks.append((0, n, _snappy_declared_length(view, 0, n, where)))
    total = sum(block[2] for block in blocks)
    if total > max_size:
        raise _over_cap("snappy", max_size, where)
    out = bytearray(total)
    out_view = memoryview(out)
    at = 0
    try:
        for start, end, length in blocks:
            written = cramjam.snappy.decompress_raw_into(view[start:end], out_view[at : at + length])
            if written != length:
                raise DecompressionError("snappy block is shorter than its declared length", where)
            at += length
    except cramjam.DecompressionError as exc:
        raise DecompressionError(f"snappy data is corrupt ({exc})", where) from None
    finally:
        out_view.release()
    return bytes(out)


def _lz4_one_shot_bound(data: Buffer, max_size: int) -> int:
    """How much ``data`` can decompress to when that is safely inside ``max_size``, else 0.

    An LZ4 block expands at most about 255 times (one length byte per 255 bytes of match), so a frame
    of n bytes yields under 256 * n + 64 KiB.  python-lz4's one-call decompress allocates the content
    size a frame header declares (FLG bit 3), so that must be inside the bound too."""
    n = len(data)
    bound = n * _LZ4_MAX_RATIO + _LZ4_SLACK
    if bound > max_size or n < 7:
        return 0
    if data[4] & 0x08:  # the frame declares its content size: 8 bytes, little-endian, after FLG and BD
        if n < 14 or int.from_bytes(data[6:14], "little") > bound:
            return 0
    return bound


def _lz4_decompress(data: Buffer, max_size: int, where: int) -> bytes:
    if _lz4_one_shot_bound(data, max_size):  # a usual batch: one C call (~0.8 us, the loop below ~2.4)
        try:
            whole, used = lz4_frame.decompress(data, return_bytes_read=True)
        except RuntimeError:
            whole, used = None, 0  # the loop below names the problem as it always has
        if whole is not None and used == len(data) and len(whole) <= max_size:
            return whole  # type: ignore[no-any-return]
    out = _Output(max_size, "lz4", where)
    pending: Buffer = data
    try:
        while True:  # one frame per pass
            decoder = lz4_frame.LZ4FrameDecompressor()
            while True:
                out.add(decoder.decompress(pending, max_length=out.step()))
                pending = b""  # the decoder keeps what it has not consumed yet
                if decoder.eof:
                    break
                if decoder.needs_input:
                    raise DecompressionError("lz4 frame is truncated", where)
            pending = decoder.unused_data
            if not pending:
                return out.join()
    except RuntimeError as exc:
        raise DecompressionError(f"lz4 data is corrupt ({exc})", where) from None


def _zstd_decompress(data: Buffer, max_size: int, where: int) -> bytes:
    view = memoryview(data)
    n = len(view)
    window = 1 << 20
    while window < max_size and window < _ZSTD_MAX_WINDOW:
        window <<= 1
    dctx = zstandard.ZstdDecompressor(max_window_size=window)
    out = _Output(max_size, "zstd", where)
    pos = 0
    try:
        if n == 0:
            raise DecompressionError("zstd data is empty", where)
        while pos < n:
            decoder = dctx.decompressobj()
            while not decoder.eof:
                if pos >= n:
                    raise DecompressionError("zstd frame is truncated", where)
                feed = max(_ZSTD_MIN_FEED, out.step() // _ZSTD_MAX_RATIO)
                chunk = view[pos : pos + feed]
                pos += len(chunk)
                out.add(decoder.decompress(chunk))
            # The decoder stops at the frame end; bytes it was fed past it start the next frame.
            pos -= len(decoder.unused_data)
    except zstandard.ZstdError as exc:
        raise DecompressionError(f"zstd data is corrupt ({exc})", where) from None
    return out.join()
