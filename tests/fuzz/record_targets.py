"""The record-format fuzz targets: ``batches`` and ``decompress`` (input layouts: see targets.py).

Split from targets.py, which registers them in ``TARGETS``; :class:`Finding` lives here so both
modules raise the same exception.
"""

from __future__ import annotations

import struct
import zlib

from mockbroker import records
from mockbroker.codec_errors import CodecError
from mockbroker.records import batch as batch_mod
from mockbroker.records import check as check_mod
from mockbroker.records.compression import compress, decompress
from tests.records.helpers import python_envelope

CAPS = (0, 1, 64, 4096, 65536, 1 << 20, 16 << 20, records.DEFAULT_MAX_SIZE)
RECORDS_CAP = 1 << 20  # the decompression cap the record-format targets use
_SIZE = struct.Struct(">i")
SEP = b"\xf0\x0d\xf0\x0d"  # separates the frames of a dispatch input, the batches of a lane input


class Finding(AssertionError):
    """A property of the code under test does not hold for this input."""


# -- record formats ------------------------------------------------------------------------------

def _fix_v2(buf: bytearray) -> None:
    """Set batchLength to the buffer's size and the CRC to the data's, so mutations reach the records."""
    if len(buf) >= records.HEADER_SIZE:
        struct.pack_into(">i", buf, 8, len(buf) - records.LOG_OVERHEAD)
        struct.pack_into(">I", buf, 17, batch_mod.crc32c(memoryview(buf)[21:]))


def _fix_legacy(buf: bytearray) -> None:
    """Fix the CRC of every top-level message whose size fits in the buffer."""
    pos = 0
    while len(buf) - pos >= 17:
        size = _SIZE.unpack_from(buf, pos + 8)[0]
        end = pos + 12 + size
        if size < 5 or end > len(buf):
            return
        struct.pack_into(">I", buf, pos + 12, zlib.crc32(memoryview(buf)[pos + 16 : end]))
        pos = end


def _check_pair(view: memoryview, pos: int, end: int, count: int, base_ts: int, lo: int | None, hi: int | None,
                need_keys: bool) -> None:
    """The C checker (where built) and the Python pass must agree on whether records are clean."""
    python_ok = True
    saved = check_mod._records_ok
    check_mod._records_ok = None
    try:
        python_ok = check_mod.check_records(view, pos, end, count, base_ts, lo, hi, need_keys) == []
    except CodecError:
        python_ok = False
    finally:
        check_mod._records_ok = saved
    if saved is None:
        return
    check_ts = lo is not None and hi is not None
    c_ok = saved(view, pos, end, count, base_ts, check_mod._int64(lo), check_mod._int64(hi), check_ts, need_keys)
    if c_ok != python_ok:
        raise Finding(f"C records_ok says {c_ok}, the Python checker {python_ok}")
    # check_records itself (C first, Python to name problems) must also only raise CodecError
    try:
        check_mod.check_records(view, pos, end, count, base_ts, lo, hi, need_keys)
    except CodecError:
        pass


def _envelope_pair(buf: bytes) -> None:
    """The C envelope check of a Produce batch (where built) answers as its Python reference."""
    if check_mod.batch_envelope is None:
        return
    for version, max_bytes in ((3, 1 << 20), (9, len(buf)), (9, len(buf) - 1)):
        fields = check_mod.batch_envelope(buf, version, max_bytes, batch_mod.crc32c_function())
        expected = python_envelope(buf, version, max_bytes)
        header = None if fields is None else batch_mod.BatchHeader(*fields)
        if header != expected:
            raise Finding(f"C batch_envelope says {fields}, the Python checks {expected} (v{version}, max {max_bytes})")


def _v2(buf: bytes) -> None:
    view = memoryview(buf)
    _envelope_pair(buf)
    try:
        list(records.iter_batches(view, allow_partial_tail=True))
        records.records_summary(view, allow_partial_tail=True)
    except CodecError:
        pass
    try:
        header, recs = records.decode_batch(view, max_size=RECORDS_CAP)
    except CodecError:
        return
    if header.record_count != len(recs):
        raise Finding(f"batch declares {header.record_count} records, decoded {len(recs)}")
    if header.attributes & 7 == records.NONE:
        _check_pair(view, records.HEADER_SIZE, len(view), header.record_count, header.base_timestamp,
                    None, None, bool(header.attributes & 0x20))
    for magic in (0, 1):
        try:
            records.v2_to_legacy(view, magic, max_size=RECORDS_CAP)
        except CodecError:
            pass


def _legacy(buf: bytes, partial: bool) -> None:
    try:
        messages = records.decode_message_set(buf, RECORDS_CAP, allow_partial_tail=partial)
    except CodecError:
        return
    if not partial:
        try:
            records.legacy_to_v2(buf, max_size=RECORDS_CAP)
        except CodecError:
            pass
    for message in messages:
        if message.magic not in (0, 1):
            raise Finding(f"decoded a message with magic {message.magic}")


def _bare_records(buf: bytes) -> None:
    if len(buf) < 12:
        return
    count = buf[0] % 16
    flags = buf[1]
    base_ts = struct.unpack_from(">q", buf, 2)[0] if flags & 4 else 1_700_000_000_000
    lo, hi = (base_ts - 1000, base_ts + 1000) if flags & 1 else (None, None)
    _check_pair(memoryview(buf), 10, len(buf), count, base_ts, lo, hi, bool(flags & 2))


def fuzz_batches(data: bytes) -> None:
    """v2 batches (decode, verify, iterate, down-convert, the C/Python record checkers), v0/v1 message
    sets (decode, up-convert) and bare records: only CodecError, and the checkers agree."""
    if not data:
        return
    mode, body = data[0], bytearray(data[1:])
    kind = mode & 3
    if kind == 1:
        if mode & 4:
            _fix_legacy(body)
        _legacy(bytes(body), bool(mode & 8))
    elif kind == 2:
        _bare_records(bytes(body))
    else:
        if mode & 4:
            _fix_v2(body)
        _v2(bytes(body))


# -- decompression -------------------------------------------------------------------------------

def fuzz_decompress(data: bytes) -> None:
    """decompress() of every codec under a cap: output never above the cap, only CodecError; and
    compress then decompress gives the input back."""
    if len(data) < 2:
        return
    codec, cap = data[0] % 6, CAPS[data[1] % len(CAPS)]
    payload = data[2:]
    try:
        out = decompress(codec, payload, cap)
    except CodecError:
        out = None
    if out is not None and len(out) > cap:
        raise Finding(f"{len(out)} bytes out of codec {codec} above the cap {cap}")
    if codec <= records.ZSTD:
        packed = compress(codec, payload, xerial=bool(data[1] & 0x80))
        if decompress(codec, packed, max(len(payload), 1)) != payload:
            raise Finding(f"codec {codec} does not round-trip {len(payload)} bytes")
