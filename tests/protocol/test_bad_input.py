"""Malformed request frames raise one typed family (CodecError) naming what and where."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockbroker.codec_errors import (
    CodecError,
    InvalidLengthError,
    InvalidValueError,
    InvalidVarintError,
    TruncatedError,
)
from mockbroker.protocol import api
from mockbroker.protocol.api import UnknownApiError, UnsupportedVersionError

PRODUCE = api.request_module(0)


def produce_frame(version: int, records: bytes = b"x" * 40, topic: str = "orders") -> bytes:
    body = PRODUCE.ProduceRequest(
        transactional_id="tx" if version >= 3 else None,
        acks=-1,
        timeout_ms=1500,
        topic_data=[
            PRODUCE.TopicProduceData(
                name=topic,
                topic_id=b"\x01" * 16,
                partition_data=[PRODUCE.PartitionProduceData(index=2, records=records)],
            )
        ],
    )
    return api.to_bytes(api.encode_request(0, version, 11, body, "client-1"))[4:]


def metadata_response_frame(version: int) -> bytes:
    m = api.response_module(3)
    body = m.MetadataResponse(
        brokers=[m.MetadataResponseBroker(node_id=1, host="127.0.0.1", port=9092, rack=None)],
        cluster_id="c1",
        controller_id=1,
        topics=[
            m.MetadataResponseTopic(
                name="orders",
                topic_id=b"\x02" * 16,
                partitions=[m.MetadataResponsePartition(partition_index=0, leader_id=1, replica_nodes=[1])],
            )
        ],
    )
    return api.to_bytes(api.encode_response(3, version, 5, body))[4:]


@pytest.mark.parametrize("version", [0, 3, 8, 9, 12, 13])
def test_every_truncation_of_a_produce_frame_raises_codec_error(version: int) -> None:
    frame = produce_frame(version)
    assert api.decode_request(frame).body.topic_data[0].partition_data[0].index == 2
    for cut in range(len(frame)):
        with pytest.raises(CodecError):
            api.decode_request(frame[:cut])


@pytest.mark.parametrize("version", [0, 8, 9, 12, 13])
def test_every_truncation_of_a_metadata_response_raises_codec_error(version: int) -> None:
    frame = metadata_response_frame(version)
    api.decode_response(3, version, frame)
    for cut in range(len(frame)):
        with pytest.raises(CodecError):
            api.decode_response(3, version, frame[:cut])


def test_trailing_bytes_are_rejected() -> None:
    with pytest.raises(InvalidLengthError, match="left over"):
        api.decode_request(produce_frame(9) + b"\x00")


def test_unknown_api_key_and_unsupported_version() -> None:
    frame = bytearray(produce_frame(9))
    struct.pack_into(">h", frame, 0, 999)
    with pytest.raises(UnknownApiError):
        api.decode_request(bytes(frame))
    struct.pack_into(">hh", frame, 0, 0, 14)
    with pytest.raises(UnsupportedVersionError):
        api.decode_request(bytes(frame))


def test_negative_string_length_names_the_field() -> None:
    frame = bytearray(produce_frame(3, topic="t"))
    # header: 8 bytes + int16 len + "client-1"; body: int16 len + "tx", acks, timeout, array count
    topic_len_at = 8 + 2 + 8 + 2 + 2 + 2 + 4 + 4
    assert frame[topic_len_at : topic_len_at + 2] == b"\x00\x01"
    struct.pack_into(">h", frame, topic_len_at, -2)
    with pytest.raises(InvalidLengthError) as err:
        api.decode_request(bytes(frame))
    assert "topic_data" in str(err.value) and "name" in str(err.value)
    struct.pack_into(">h", frame, topic_len_at, -1)  # null where the topic name is not nullable
    with pytest.raises(InvalidLengthError, match="not nullable"):
        api.decode_request(bytes(frame))


def test_huge_array_count_is_rejected_before_allocating() -> None:
    frame = bytearray(produce_frame(3))
    count_at = 8 + 2 + 8 + 2 + 2 + 2 + 4
    struct.pack_into(">i", frame, count_at, 2**31 - 1)
    with pytest.raises(InvalidLengthError, match="array count"):
        api.decode_request(bytes(frame))


def test_records_length_past_the_end_is_truncation() -> None:
    frame = bytearray(produce_frame(3, records=b"abc"))
    struct.pack_into(">i", frame, len(frame) - 3 - 4, 1000)
    with pytest.raises(TruncatedError, match="records"):
        api.decode_request(bytes(frame))


def test_over_long_varint_and_bad_utf8() -> None:
    frame = bytearray(produce_frame(9, topic="t"))
    # flexible header: 8 + 2 + 8 + tag byte; body: compact string "tx" = 0x03 't' 'x'
    tx_at = 8 + 2 + 8 + 1
    assert frame[tx_at : tx_at + 3] == b"\x03tx"
    bad = bytes(frame[:tx_at]) + b"\xff\xff\xff\xff\xff\x01" + bytes(frame[tx_at + 1 :])
    with pytest.raises(InvalidVarintError):
        api.decode_request(bad)
    frame[tx_at + 1] = 0xC3  # a lead byte followed by 'x' is not UTF-8
    with pytest.raises(InvalidValueError, match="transactional_id"):
        api.decode_request(bytes(frame))


def test_tagged_field_size_mismatch_is_rejected() -> None:
    m = api.request_module(1)  # Fetch v15 carries a tagged ReplicaState struct (tag 1)
    body = m.FetchRequest(replica_state=m.ReplicaState(replica_id=3, replica_epoch=4), max_wait_ms=5)
    frame = bytearray(api.to_bytes(api.encode_request(1, 15, 1, body))[4:])
    assert api.decode_request(bytes(frame)).body.replica_state.replica_epoch == 4
    # the body's tagged section is at the end: count=1, tag=1, size=N, ...
    tail = frame.rindex(b"\x01\x01")
    frame[tail + 2] += 1
    with pytest.raises(CodecError):
        api.decode_request(bytes(frame))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_random_frames_raise_only_codec_errors(data: bytes) -> None:
    try:
        api.decode_request(data)
    except CodecError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([0, 1, 3, 8, 11, 18, 19, 22]), st.integers(0, 20), st.binary(max_size=120))
def test_random_bodies_behind_a_valid_header_raise_only_codec_errors(key: int, v: int, tail: bytes) -> None:
    lo, hi = api.version_range(key)
    version = lo + v % (hi - lo + 1)
    head = struct.pack(">hhih", key, version, 1, 1) + b"c"
    if api.is_flexible(key, version):
        head += b"\x00"
    try:
        api.decode_request(head + tail)
    except CodecError:
        pass
