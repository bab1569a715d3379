"""Bad input: every decoder raises a CodecError subclass naming what broke, never anything else."""

from __future__ import annotations

import struct

import pytest

from mockbroker.codec_errors import (
    CodecError,
    CorruptRecordError,
    DecompressionError,
    InvalidLengthError,
    InvalidValueError,
    InvalidVarintError,
    RecordCountError,
    TruncatedError,
    UnsupportedCompressionError,
)
from mockbroker.records import (
    GZIP,
    HEADER_SIZE,
    NONE,
    build_batch,
    build_message_set,
    compress,
    decode_batch,
    decode_message_set,
    iter_batches,
    legacy_to_v2,
    parse_batch_header,
    records_summary,
    v2_to_legacy,
    verify_batch,
)
from tests.records.helpers import ALL_CODECS, CODEC_IDS, SAMPLE_HEADERS, fix_legacy_crc, fix_v2_crc

ITEMS = [(b"key", b"value" * 3, SAMPLE_HEADERS, 100), (None, None, None, 90), (b"k", b"", [("a", b"b")], 110)]


def _batch(codec: int = NONE) -> bytes:
    return build_batch(ITEMS, base_offset=5, compression=codec)


def _raw_batch(records: bytes, count: int, attributes: int = 0) -> bytearray:
    """A v2 batch around hand-written record bytes, with a correct CRC."""
    header = struct.pack(
        ">qiibIhiqqqhii",
        0,
        49 + len(records),
        -1,
        2,
        0,
        attributes,
        max(count - 1, 0),
        0,
        0,
        -1,
        -1,
        -1,
        count,
    )
    return fix_v2_crc(bytearray(header + records))


def _record(body: bytes) -> bytes:
    assert len(body) < 64
    return bytes([len(body) * 2]) + body


SIMPLE_RECORD = _record(
    b"\x00\x00\x00\x02k\x02v\x00"
)  # attrs, ts 0, offset 0, key "k", value "v", no headers


def test_hand_written_record_decodes() -> None:
    _, (record,) = decode_batch(_raw_batch(SIMPLE_RECORD, 1))
    assert (bytes(record.key), bytes(record.value), record.headers) == (b"k", b"v", [])


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
def test_truncation_at_every_position_v2(codec: int) -> None:
    data = _batch(codec)
    for cut in range(len(data)):
        with pytest.raises(TruncatedError):
            decode_batch(data[:cut])
        with pytest.raises(TruncatedError):
            verify_batch(data[:cut])
        with pytest.raises(TruncatedError):
            list(iter_batches(data[:cut] if cut else b"\0"))
        assert list(iter_batches(data[:cut], allow_partial_tail=True)) == []
    with pytest.raises(InvalidLengthError, match="follow"):
        decode_batch(data + b"\0")


@pytest.mark.parametrize(("magic", "codec"), [(0, NONE), (0, GZIP), (1, NONE), (1, GZIP), (1, 2), (1, 3)])
def test_truncation_at_every_position_legacy(magic: int, codec: int) -> None:
    data = build_message_set([(b"k", b"v" * 20, 5), (None, b"w", 6)], magic, codec)
    boundaries = {pos for pos, _, _ in iter_batches(data)}
    for cut in range(1, len(data)):
        if cut in boundaries:  # a shorter but whole message set
            assert len(decode_message_set(data[:cut])) == 1
            continue
        with pytest.raises(CodecError):
            decode_message_set(data[:cut])
        with pytest.raises(CodecError):
            legacy_to_v2(data[:cut])
        with pytest.raises(CodecError):
            records_summary(data[:cut])


def test_truncated_inner_record_data_with_fixed_crc() -> None:
    """Records cut short inside a batch whose framing and CRC are consistent."""
    data = _batch()
    for cut in range(HEADER_SIZE + 1, len(data)):
        short = bytearray(data[:cut])
        struct.pack_into(">i", short, 8, cut - 12)
        with pytest.raises(CodecError) as info:
            decode_batch(fix_v2_crc(short))
        assert isinstance(
            info.value, TruncatedError | InvalidLengthError | RecordCountError | CorruptRecordError
        )


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
def test_any_flipped_byte_under_the_crc_is_caught(codec: int) -> None:
    data = _batch(codec)
    for pos in range(21, len(data)):
        bad = bytearray(data)
        bad[pos] ^= 0x40
        with pytest.raises(CorruptRecordError, match="CRC"):
            decode_batch(bad)
    bad = bytearray(data)
    bad[18] ^= 1
    with pytest.raises(CorruptRecordError) as info:
        verify_batch(bad)
    assert info.value.where == 17
    decode_batch(bad, check_crc=False)  # the data itself is fine


def test_flipped_legacy_crc() -> None:
    data = bytearray(build_message_set([(b"k", b"v", 5)], 1))
    data[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_message_set(data)
    inner = bytearray(build_message_set([(b"k", b"v", 5)], 1))
    inner[-1] ^= 1
    # A wrapper whose own CRC is right, holding an inner message whose CRC is wrong.
    value = compress(GZIP, bytes(inner))
    body = struct.pack(">bbq", 1, GZIP, 5) + struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    wrapper = fix_legacy_crc(bytearray(struct.pack(">qiI", 0, len(body) + 4, 0) + body))
    with pytest.raises(CorruptRecordError, match="CRC") as info:
        decode_message_set(wrapper)
    assert "compressed message set" in str(info.value)


@pytest.mark.parametrize("codec", ALL_CODECS, ids=CODEC_IDS)
@pytest.mark.parametrize("delta", [-3, -1, 1, 1000, 2**31 - 1 - 3])
def test_wrong_record_count(codec: int, delta: int) -> None:
    bad = bytearray(_batch(codec))
    struct.pack_into(">i", bad, 57, 3 + delta)
    with pytest.raises(RecordCountError):
        decode_batch(fix_v2_crc(bad))


def test_negative_record_count() -> None:
    bad = bytearray(_batch())
    struct.pack_into(">i", bad, 57, -1)
    with pytest.raises(InvalidLengthError, match="negative"):
        verify_batch(fix_v2_crc(bad))


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec(codec: int) -> None:
    bad = bytearray(_batch(GZIP))
    bad[22] = (bad[22] & ~7) | codec
    with pytest.raises(UnsupportedCompressionError) as info:
        decode_batch(fix_v2_crc(bad))
    assert info.value.where == 21
    with pytest.raises(UnsupportedCompressionError):
        build_batch([], compression=codec)


def test_bad_magic() -> None:
    for magic in (0, 1, 3, 255):
        bad = bytearray(_batch())
        bad[16] = magic
        with pytest.raises(InvalidValueError, match="magic"):
            decode_batch(bad)
        with pytest.raises(InvalidValueError, match="magic"):
            parse_batch_header(bad)
    with pytest.raises(InvalidValueError, match="magic"):
        decode_message_set(_batch())


def test_bad_batch_length() -> None:
    for length in (-1, 0, 48, -(2**31)):
        bad = bytearray(_batch())
        struct.pack_into(">i", bad, 8, length)
        with pytest.raises(InvalidLengthError):
            decode_batch(bad)
        with pytest.raises(InvalidLengthError):
            list(iter_batches(bad))
    bad = bytearray(_batch())
    struct.pack_into(">i", bad, 8, 2**31 - 1)
    with pytest.raises(TruncatedError):
        decode_batch(bad)


@pytest.mark.parametrize(
    "records",
    [
        b"\xff\xff\xff\xff\xff\x01" + b"\0" * 10,  # record length varint too long
        _record(b"\x00" + b"\x80" * 10 + b"\x00\x00\x00\x00\x00"),  # timestampDelta varlong too long
        _record(b"\x00\x00\x80\x80\x80\x80\x80\x01\x00\x00\x00"),  # offsetDelta varint too long
        _record(b"\x00\x00\x00\xff\xff\xff\xff\xff\x01\x00\x00"),  # key length varint too long
        _record(b"\x00\x00\x00\x01\x01\xff\xff\xff\xff\x1f"),  # header count overflows int32
    ],
)
def test_bad_varint(records: bytes) -> None:
    with pytest.raises(InvalidVarintError):
        decode_batch(_raw_batch(records, 1))


@pytest.mark.parametrize(
    ("records", "error", "match"),
    [
        (_record(b"\x00\x00\x00\x03\x01\x00"), InvalidLengthError, "key length -2"),
        (_record(b"\x00\x00\x00\x01\x03\x00"), InvalidLengthError, "value length -2"),
        (_record(b"\x00\x00\x00\x20k\x01\x00"), InvalidLengthError, "key length 16"),
        (_record(b"\x00\x00\x00\x01\x01\x01"), InvalidLengthError, "header count -1"),
        (_record(b"\x00\x00\x00\x01\x01\x02\x01\x00"), InvalidLengthError, "header key length -1"),
        (_record(b"\x00\x00\x00\x01\x01\x02\x02\xff\x01"), InvalidValueError, "UTF-8"),
        (_record(b"\x00\x00\x00\x01\x01\x02\x02h\x03"), InvalidLengthError, "header value length -2"),
        (_record(b"\x00\x00\x00\x01\x01\x00\x00"), CorruptRecordError, "declared length"),
        (_record(b"\x00\x00\x00\x02k\x02v") + b"\x00", CorruptRecordError, "declared length"),
        (_record(b"\x00\x00\x00\x02k\x02v"), TruncatedError, "record 0 is truncated"),
        (b"\x04\x00\x00\x00\x01\x01\x00\x00", InvalidLengthError, "length 2"),
        (b"\x01" + b"\0" * 10, InvalidLengthError, "length -1"),
        (SIMPLE_RECORD + b"\x00", RecordCountError, "1 bytes follow"),
        (SIMPLE_RECORD + SIMPLE_RECORD, RecordCountError, "follow"),
    ],
)
def test_bad_record_fields(records: bytes, error: type[CodecError], match: str) -> None:
    with pytest.raises(error, match=match) as info:
        decode_batch(_raw_batch(records, 1))
    assert info.value.where >= HEADER_SIZE


def test_too_few_records_for_count() -> None:
    record = _record(b"\x00\x00\x00\x02k\x28" + b"v" * 20 + b"\x00")
    with pytest.raises(RecordCountError, match="holds 2"):
        decode_batch(_raw_batch(record * 2, 3))
    with pytest.raises(RecordCountError, match="at most"):
        decode_batch(_raw_batch(SIMPLE_RECORD * 2, 3))


def test_compressed_record_errors_name_the_decompressed_data() -> None:
    payload = compress(GZIP, _record(b"\x00\x00\x00\x03\x01\x00"))
    with pytest.raises(InvalidLengthError) as info:
        decode_batch(_raw_batch(payload, 1, attributes=GZIP))
    assert info.value.path == "decompressed records"


def test_corrupt_compressed_payload() -> None:
    with pytest.raises(DecompressionError) as info:
        decode_batch(_raw_batch(b"definitely not gzip", 1, attributes=GZIP))
    assert info.value.where == HEADER_SIZE


@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=CODEC_IDS[1:])
def test_decompression_bomb(codec: int) -> None:
    data = build_batch([(None, b"\0" * 200_000)], compression=codec)
    assert len(data) < 20_000
    with pytest.raises(DecompressionError, match="cap"):
        decode_batch(data, max_size=100_000)
    with pytest.raises(DecompressionError, match="cap"):
        v2_to_legacy(data, 1, max_size=100_000)
    if codec != 4:
        legacy = build_message_set([(None, b"\0" * 200_000)], 1, codec)
        with pytest.raises(DecompressionError, match="cap"):
            decode_message_set(legacy, 100_000)


@pytest.mark.parametrize(
    ("mutate", "error"),
    [
        (lambda b: struct.pack_into(">i", b, 8, 5), InvalidLengthError),  # message_size below minimum
        (lambda b: struct.pack_into(">i", b, 26, -2), InvalidLengthError),  # key length -2
        (lambda b: struct.pack_into(">i", b, 26, 1000), InvalidLengthError),  # key length overruns
        (lambda b: struct.pack_into(">i", b, 31, 1000), InvalidLengthError),  # value length overruns
        (lambda b: struct.pack_into(">i", b, 31, 0), CorruptRecordError),  # bytes left after the value
    ],
)
def test_bad_legacy_fields(mutate, error: type[CodecError]) -> None:
    data = bytearray(build_message_set([(b"k", b"value", 5)], 1))
    mutate(data)
    if data[8:12] != b"\x00\x00\x00\x05":
        fix_legacy_crc(data)
    with pytest.raises(error):
        decode_message_set(data)
