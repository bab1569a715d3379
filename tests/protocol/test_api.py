"""Frame-level behaviour of the codec: headers, ApiVersions' v0 response header, zero-copy records,
request header tagged fields, error table."""

from __future__ import annotations

import struct

from mockbroker.protocol import api
from mockbroker.protocol.errors import ErrorCode, error_message, error_name, is_retriable
from mockbroker.protocol.generated import APIS


def test_api_versions_response_always_uses_header_v0() -> None:
    m = api.response_module(18)
    body = m.ApiVersionsResponse(api_keys=[m.ApiVersion(api_key=0, min_version=0, max_version=13)])
    frame = api.to_bytes(api.encode_response(18, 3, 42, body))
    size, corr = struct.unpack_from(">ii", frame)
    assert size == len(frame) - 4 and corr == 42
    # v3 is flexible, but the header has no tagged-field byte: the body starts right after
    assert frame[8:10] == b"\x00\x00"  # error_code
    corr2, decoded = api.decode_response(18, 3, frame[4:])
    assert corr2 == 42 and decoded == body


def test_flexible_responses_use_header_v1() -> None:
    m = api.response_module(3)
    frame = api.to_bytes(api.encode_response(3, 12, 9, m.MetadataResponse()))
    assert frame[8] == 0  # empty tagged fields of response header v1
    assert api.response_header_version(3, 8) == 0 and api.response_header_version(3, 9) == 1


def test_large_records_are_not_copied_into_the_frame() -> None:
    m = api.response_module(1)
    stored = [bytes(1000), bytearray(b"x" * 2000)]
    part = m.PartitionData(partition_index=0, high_watermark=3, records=stored)
    body = m.FetchResponse(responses=[m.FetchableTopicResponse(topic="t", partitions=[part])])
    parts = api.encode_response(1, 12, 1, body)
    assert any(p is stored[0] for p in parts) and any(p is stored[1] for p in parts)
    frame = api.to_bytes(parts)
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    _, decoded = api.decode_response(1, 12, frame[4:])
    records = decoded.responses[0].partitions[0].records
    assert isinstance(records, memoryview) and bytes(records) == bytes(1000) + b"x" * 2000


def test_request_header_client_id_and_tagged_fields() -> None:
    m = api.request_module(3)
    frame = bytearray(api.to_bytes(api.encode_request(3, 12, 5, m.MetadataRequest(topics=None), None))[4:])
    assert frame[8:10] == b"\xff\xff"  # null client id, never compact
    req = api.decode_request(bytes(frame))
    assert req.client_id is None and req.body.topics is None
    # a header carrying one unknown tagged field (tag 7, 2 bytes) is accepted and kept
    with_tag = bytes(frame[:10]) + b"\x01\x07\x02hi" + bytes(frame[11:])
    req = api.decode_request(with_tag)
    assert req.header_tags == [(7, b"hi")] and req.body.topics is None


def test_api_table_has_the_old_versions_kafka_4_dropped() -> None:
    assert APIS[0][3] == (0, 13) and APIS[1][3] == (0, 18) and APIS[2][3] == (0, 11)
    assert all(key in APIS for key in (68, 69, 71, 72))  # consumer-group heartbeat, telemetry
    assert 4 not in APIS  # LeaderAndIsr is a zkBroker-only API


def test_error_table() -> None:
    assert ErrorCode.CORRUPT_MESSAGE == 2 and error_name(2) == "CORRUPT_MESSAGE"
    assert is_retriable(2) and not is_retriable(10)
    assert "CRC" in error_message(2)
    assert ErrorCode.UNSUPPORTED_VERSION == 35
    assert error_name(9999) == "UNKNOWN_ERROR_9999"
