"""The wire of the share-group APIs (KIP-932) as Kafka 4.1+ and librdkafka 2.16 speak it.

ShareGroupHeartbeat (76), ShareGroupDescribe (77), ShareFetch (78) and ShareAcknowledge (79) v1,
DescribeShareGroupOffsets (90) v0-v1, AlterShareGroupOffsets (91) v0 and DeleteShareGroupOffsets
(92) v0 come from tools/protogen/spec-overlay.  Every (message, version) makes a round trip with
every field set, and each message is also checked against bytes written here, field by field, from
Kafka's layout (the order librdkafka writes and reads), so a field out of place fails.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from mockbroker.protocol import api
from mockbroker.protocol.errors import ERRORS, ErrorCode, error_name, is_retriable

TOPIC_A = uuid.UUID("0c8c3a3e-6f1b-4d2a-9b57-2f1f5a3b9e01").bytes
TOPIC_B = uuid.UUID("7e0d1c22-95aa-4f61-8a0e-6c2d3b4a5f02").bytes
RECORDS = b"\x00" * 8 + b"stand-in record batch bytes"
TAGS = b"\x00"  # an empty tagged-field section

# ---- hand encoders of Kafka's primitive types, independent of the generated codec ----


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def cstr(s: str | None) -> bytes:
    """COMPACT_(NULLABLE_)STRING."""
    if s is None:
        return b"\x00"
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def carr(n: int | None) -> bytes:
    """The length prefix of a COMPACT_(NULLABLE_)ARRAY."""
    return b"\x00" if n is None else uvarint(n + 1)


def cbytes(b: bytes) -> bytes:
    return uvarint(len(b) + 1) + b


# ---- codec helpers ----


def encode(mod_name: str, version: int, obj: Any) -> bytes:
    mod = api.module(mod_name)
    out = bytearray()
    holes: list[Any] = []
    api.encode_message(mod, version, obj, out, holes)
    return b"".join(api.assemble(out, holes)) if holes else bytes(out)


def decode(mod_name: str, version: int, wire: bytes) -> Any:
    obj, pos = api.decode_message(api.module(mod_name), version, memoryview(wire))
    assert pos == len(wire), f"{mod_name} v{version}: {len(wire) - pos} bytes left over"
    return obj


def round_trip(mod_name: str, version: int, obj: Any) -> bytes:
    wire = encode(mod_name, version, obj)
    decoded = decode(mod_name, version, wire)
    assert decoded == obj
    assert encode(mod_name, version, decoded) == wire
    return wire


def m(mod_name: str) -> Any:
    return api.module(mod_name)


# ---- fully set messages, one builder per (module, version) ----


def heartbeat_request(_v: int) -> Any:
    r = m("share_group_heartbeat_request")
    return r.ShareGroupHeartbeatRequest(group_id="sg", member_id="m-1", member_epoch=4, rack_id="rack-a",
                                        subscribed_topic_names=["orders", "payments"], unknown_tags=[(7, b"\x01")])


def heartbeat_response(_v: int) -> Any:
    r = m("share_group_heartbeat_response")
    tps = [r.TopicPartitions(topic_id=TOPIC_A, partitions=[0, 2]), r.TopicPartitions(topic_id=TOPIC_B, partitions=[1])]
    return r.ShareGroupHeartbeatResponse(throttle_time_ms=5, error_code=0, error_message="fine", member_id="m-1",
                                         member_epoch=5, heartbeat_interval_ms=5000,
                                         assignment=r.Assignment(topic_partitions=tps))


def describe_request(_v: int) -> Any:
    r = m("share_group_describe_request")
    return r.ShareGroupDescribeRequest(group_ids=["sg", "other"], include_authorized_operations=True)


def describe_response(_v: int) -> Any:
    r = m("share_group_describe_response")
    tp = r.TopicPartitions(topic_id=TOPIC_A, topic_name="orders", partitions=[0, 1])
    member = r.Member(member_id="m-1", rack_id="rack-a", member_epoch=3, client_id="rdkafka", client_host="/10.0.0.1",
                      subscribed_topic_names=["orders"], assignment=r.Assignment(topic_partitions=[tp]))
    group = r.DescribedGroup(error_code=69, error_message="not yet", group_id="sg", group_state="Stable",
                             group_epoch=3, assignment_epoch=2, assignor_name="simple", members=[member],
                             authorized_operations=0x0F)
    return r.ShareGroupDescribeResponse(throttle_time_ms=1, groups=[group])


def fetch_request(v: int) -> Any:
    r = m("share_fetch_request")
    batch = r.AcknowledgementBatch(first_offset=10, last_offset=12, acknowledge_types=[1, 2, 3])
    part = r.FetchPartition(partition_index=3, partition_max_bytes=1048576 if v == 0 else 0,
                            acknowledgement_batches=[batch])
    forgotten = r.ForgottenTopic(topic_id=TOPIC_B, partitions=[1, 2])
    return r.ShareFetchRequest(group_id="sg", member_id="m-1", share_session_epoch=2, max_wait_ms=500, min_bytes=1,
                               max_bytes=52428800, max_records=500 if v >= 1 else 0, batch_size=100 if v >= 1 else 0,
                               topics=[r.FetchTopic(topic_id=TOPIC_A, partitions=[part])],
                               forgotten_topics_data=[forgotten])


def fetch_response(v: int) -> Any:
    r = m("share_fetch_response")
    part = r.PartitionData(partition_index=3, error_code=6, error_message="moved", acknowledge_error_code=121,
                           acknowledge_error_message="bad state",
                           current_leader=r.LeaderIdAndEpoch(leader_id=2, leader_epoch=9), records=RECORDS,
                           acquired_records=[r.AcquiredRecords(first_offset=0, last_offset=4, delivery_count=2)])
    node = r.NodeEndpoint(node_id=2, host="broker-2", port=9093, rack="rack-b")
    return r.ShareFetchResponse(throttle_time_ms=3, error_code=0, error_message="partly",
                                acquisition_lock_timeout_ms=30000 if v >= 1 else 0,
                                responses=[r.ShareFetchableTopicResponse(topic_id=TOPIC_A, partitions=[part])],
                                node_endpoints=[node])


def acknowledge_request(_v: int) -> Any:
    r = m("share_acknowledge_request")
    batch = r.AcknowledgementBatch(first_offset=5, last_offset=9, acknowledge_types=[1, 0, 3])
    part = r.AcknowledgePartition(partition_index=1, acknowledgement_batches=[batch])
    return r.ShareAcknowledgeRequest(group_id="sg", member_id="m-1", share_session_epoch=4,
                                     topics=[r.AcknowledgeTopic(topic_id=TOPIC_A, partitions=[part])])


def acknowledge_response(_v: int) -> Any:
    r = m("share_acknowledge_response")
    part = r.PartitionData(partition_index=1, error_code=121, error_message="bad state",
                           current_leader=r.LeaderIdAndEpoch(leader_id=1, leader_epoch=4))
    return r.ShareAcknowledgeResponse(
        throttle_time_ms=2, error_code=0, error_message="partly",
        responses=[r.ShareAcknowledgeTopicResponse(topic_id=TOPIC_A, partitions=[part])],
        node_endpoints=[r.NodeEndpoint(node_id=1, host="broker-1", port=9092, rack=None)])


def offsets_describe_request(_v: int) -> Any:
    r = m("describe_share_group_offsets_request")
    topic = r.DescribeShareGroupOffsetsRequestTopic(topic_name="orders", partitions=[0, 1])
    return r.DescribeShareGroupOffsetsRequest(groups=[
        r.DescribeShareGroupOffsetsRequestGroup(group_id="sg", topics=[topic]),
        r.DescribeShareGroupOffsetsRequestGroup(group_id="all", topics=None),
    ])


def offsets_describe_response(v: int) -> Any:
    r = m("describe_share_group_offsets_response")
    part = r.DescribeShareGroupOffsetsResponsePartition(partition_index=1, start_offset=40, leader_epoch=3,
                                                        lag=7 if v >= 1 else -1, error_code=3,
                                                        error_message="unknown")
    topic = r.DescribeShareGroupOffsetsResponseTopic(topic_name="orders", topic_id=TOPIC_A, partitions=[part])
    group = r.DescribeShareGroupOffsetsResponseGroup(group_id="sg", topics=[topic], error_code=16,
                                                     error_message="elsewhere")
    return r.DescribeShareGroupOffsetsResponse(throttle_time_ms=4, groups=[group])


def offsets_alter_request(_v: int) -> Any:
    r = m("alter_share_group_offsets_request")
    part = r.AlterShareGroupOffsetsRequestPartition(partition_index=2, start_offset=100)
    return r.AlterShareGroupOffsetsRequest(group_id="sg", topics=[
        r.AlterShareGroupOffsetsRequestTopic(topic_name="orders", partitions=[part])])


def offsets_alter_response(_v: int) -> Any:
    r = m("alter_share_group_offsets_response")
    part = r.AlterShareGroupOffsetsResponsePartition(partition_index=2, error_code=68, error_message="not empty")
    topic = r.AlterShareGroupOffsetsResponseTopic(topic_name="orders", topic_id=TOPIC_A, partitions=[part])
    return r.AlterShareGroupOffsetsResponse(throttle_time_ms=6, error_code=0, error_message="partly",
                                            responses=[topic])


def offsets_delete_request(_v: int) -> Any:
    r = m("delete_share_group_offsets_request")
    return r.DeleteShareGroupOffsetsRequest(group_id="sg", topics=[
        r.DeleteShareGroupOffsetsRequestTopic(topic_name="orders"),
        r.DeleteShareGroupOffsetsRequestTopic(topic_name="payments")])


def offsets_delete_response(_v: int) -> Any:
    r = m("delete_share_group_offsets_response")
    topic = r.DeleteShareGroupOffsetsResponseTopic(topic_name="orders", topic_id=TOPIC_A, error_code=3,
                                                   error_message="no such topic")
    return r.DeleteShareGroupOffsetsResponse(throttle_time_ms=7, error_code=0, error_message="partly",
                                             responses=[topic])


BUILDERS: dict[str, Callable[[int], Any]] = {
    "share_group_heartbeat_request": heartbeat_request,
    "share_group_heartbeat_response": heartbeat_response,
    "share_group_describe_request": describe_request,
    "share_group_describe_response": describe_response,
    "share_fetch_request": fetch_request,
    "share_fetch_response": fetch_response,
    "share_acknowledge_request": acknowledge_request,
    "share_acknowledge_response": acknowledge_response,
    "describe_share_group_offsets_request": offsets_describe_request,
    "describe_share_group_offsets_response": offsets_describe_response,
    "alter_share_group_offsets_request": offsets_alter_request,
    "alter_share_group_offsets_response": offsets_alter_response,
    "delete_share_group_offsets_request": offsets_delete_request,
    "delete_share_group_offsets_response": offsets_delete_response,
}
NEW_VERSIONS: dict[int, tuple[int, int]] = {76: (1, 1), 77: (1, 1), 78: (1, 1), 79: (1, 1), 90: (0, 1), 91: (0, 0),
                                            92: (0, 0)}
CASES = [(f"{mod}", v) for key, (lo, hi) in NEW_VERSIONS.items()
         for mod in (api.APIS[key][1], api.APIS[key][2]) for v in range(lo, hi + 1)]


def test_the_codec_knows_the_new_versions() -> None:
    for key, (lo, hi) in NEW_VERSIONS.items():
        assert api.version_range(key)[1] == hi
        assert api.version_range(key)[0] == (0 if key in (76, 77, 78, 79) else lo)  # v0 of 76-79 stays
        assert all(api.is_flexible(key, v) for v in range(lo, hi + 1))
    assert api.api_name(90) == "DescribeShareGroupOffsets" and api.api_name(92) == "DeleteShareGroupOffsets"


def test_v1_comes_from_the_overlay_and_v0_from_the_snapshot() -> None:
    for name in ("share_group_heartbeat_request", "share_fetch_response", "share_acknowledge_request"):
        assert "v0 kafka-4.0-snapshot, v1 spec-overlay" in (m(name).__doc__ or "")
    assert "v0-1 spec-overlay" in (m("describe_share_group_offsets_response").__doc__ or "")


@pytest.mark.parametrize(("mod_name", "version"), CASES, ids=[f"{mod}-v{v}" for mod, v in CASES])
def test_round_trip_with_every_field_set(mod_name: str, version: int) -> None:
    round_trip(mod_name, version, BUILDERS[mod_name](version))


@pytest.mark.parametrize(("key", "version"), [(k, v) for k, (lo, hi) in NEW_VERSIONS.items()
                                              for v in range(lo, hi + 1)])
def test_request_frames_round_trip_with_their_header(key: int, version: int) -> None:
    body = BUILDERS[api.APIS[key][1]](version)
    frame = api.to_bytes(api.encode_request(key, version, 77, body, client_id="rdkafka"))
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    req = api.decode_request(frame[4:])
    assert (req.api_key, req.api_version, req.correlation_id, req.client_id) == (key, version, 77, "rdkafka")
    assert req.body == body
    corr, resp = api.decode_response(key, version, api.to_bytes(
        api.encode_response(key, version, 78, BUILDERS[api.APIS[key][2]](version)))[4:])
    assert corr == 78 and resp == BUILDERS[api.APIS[key][2]](version)


# ---- byte-level checks against Kafka's layouts ----


def test_share_fetch_v1_request_frame_is_what_librdkafka_sends() -> None:
    r = m("share_fetch_request")
    batch = r.AcknowledgementBatch(first_offset=10, last_offset=12, acknowledge_types=[1])
    body = r.ShareFetchRequest(group_id="sg", member_id="m-1", share_session_epoch=2, max_wait_ms=500, min_bytes=1,
                               max_bytes=52428800, max_records=500, batch_size=100,
                               topics=[r.FetchTopic(topic_id=TOPIC_A, partitions=[
                                   r.FetchPartition(partition_index=0, acknowledgement_batches=[batch])])],
                               forgotten_topics_data=[r.ForgottenTopic(topic_id=TOPIC_B, partitions=[1, 2])])
    header = i16(78) + i16(1) + i32(7) + i16(7) + b"rdkafka" + TAGS  # request header v2
    payload = (cstr("sg") + cstr("m-1") + i32(2) + i32(500) + i32(1) + i32(52428800) + i32(500) + i32(100)
               + carr(1) + TOPIC_A
               + carr(1) + i32(0)  # PartitionIndex; no PartitionMaxBytes in v1
               + carr(1) + i64(10) + i64(12) + carr(1) + i8(1) + TAGS  # one acknowledgement batch
               + TAGS + TAGS  # partition, topic
               + carr(1) + TOPIC_B + carr(2) + i32(1) + i32(2) + TAGS  # ForgottenTopicsData
               + TAGS)
    frame = api.to_bytes(api.encode_request(78, 1, 7, body, client_id="rdkafka"))
    assert frame == i32(len(header) + len(payload)) + header + payload
    assert api.decode_request(frame[4:]).body == body


def test_share_fetch_v0_keeps_partition_max_bytes_and_has_no_record_limits() -> None:
    r = m("share_fetch_request")
    body = r.ShareFetchRequest(group_id=None, member_id="m-1", share_session_epoch=0, max_wait_ms=500, min_bytes=1,
                               max_bytes=1024, topics=[r.FetchTopic(topic_id=TOPIC_A, partitions=[
                                   r.FetchPartition(partition_index=5, partition_max_bytes=4096)])])
    wire = (cstr(None) + cstr("m-1") + i32(0) + i32(500) + i32(1) + i32(1024)
            + carr(1) + TOPIC_A + carr(1) + i32(5) + i32(4096) + carr(0) + TAGS + TAGS + carr(0) + TAGS)
    assert encode("share_fetch_request", 0, body) == wire
    assert decode("share_fetch_request", 0, wire) == body


def test_share_fetch_v1_response_has_the_lock_timeout_after_the_error_message() -> None:
    head = i32(3) + i16(0) + cstr("partly")  # ThrottleTimeMs, ErrorCode, ErrorMessage
    rest = (carr(1) + TOPIC_A + carr(1)
            + i32(3) + i16(6) + cstr("moved") + i16(121) + cstr("bad state")
            + i32(2) + i32(9) + TAGS  # CurrentLeader
            + cbytes(RECORDS)
            + carr(1) + i64(0) + i64(4) + i16(2) + TAGS  # AcquiredRecords
            + TAGS + TAGS  # partition, topic
            + carr(1) + i32(2) + cstr("broker-2") + i32(9093) + cstr("rack-b") + TAGS  # NodeEndpoints
            + TAGS)
    body = fetch_response(1)
    wire = head + i32(30000) + rest  # AcquisitionLockTimeoutMs
    assert encode("share_fetch_response", 1, body) == wire
    assert decode("share_fetch_response", 1, wire) == body
    assert encode("share_fetch_response", 0, fetch_response(0)) == head + rest  # v0 has no lock timeout


def test_share_group_heartbeat_v1_request_and_response_bytes() -> None:
    r = m("share_group_heartbeat_request")
    joining = r.ShareGroupHeartbeatRequest(group_id="sg", member_id="m-1", member_epoch=0, rack_id=None,
                                           subscribed_topic_names=["orders"])
    wire = cstr("sg") + cstr("m-1") + i32(0) + cstr(None) + carr(1) + cstr("orders") + TAGS
    assert encode("share_group_heartbeat_request", 1, joining) == wire
    assert decode("share_group_heartbeat_request", 1, wire) == joining
    unchanged = r.ShareGroupHeartbeatRequest(group_id="sg", member_id="m-1", member_epoch=3)
    assert encode("share_group_heartbeat_request", 1, unchanged) == (
        cstr("sg") + cstr("m-1") + i32(3) + cstr(None) + carr(None) + TAGS)

    resp = heartbeat_response(1)
    wire = (i32(5) + i16(0) + cstr("fine") + cstr("m-1") + i32(5) + i32(5000)
            + i8(1)  # Assignment present
            + carr(2) + TOPIC_A + carr(2) + i32(0) + i32(2) + TAGS + TOPIC_B + carr(1) + i32(1) + TAGS
            + TAGS  # Assignment's tags
            + TAGS)
    assert encode("share_group_heartbeat_response", 1, resp) == wire
    assert decode("share_group_heartbeat_response", 1, wire) == resp
    rr = m("share_group_heartbeat_response")
    no_assignment = rr.ShareGroupHeartbeatResponse(member_epoch=5, heartbeat_interval_ms=5000)
    assert encode("share_group_heartbeat_response", 1, no_assignment) == (
        i32(0) + i16(0) + cstr(None) + cstr(None) + i32(5) + i32(5000) + i8(-1) + TAGS)


def test_share_acknowledge_v1_request_and_response_bytes() -> None:
    req = acknowledge_request(1)
    wire = (cstr("sg") + cstr("m-1") + i32(4)
            + carr(1) + TOPIC_A + carr(1) + i32(1)
            + carr(1) + i64(5) + i64(9) + carr(3) + i8(1) + i8(0) + i8(3) + TAGS
            + TAGS + TAGS + TAGS)
    assert encode("share_acknowledge_request", 1, req) == wire
    assert decode("share_acknowledge_request", 1, wire) == req
    resp = acknowledge_response(1)
    wire = (i32(2) + i16(0) + cstr("partly")
            + carr(1) + TOPIC_A + carr(1) + i32(1) + i16(121) + cstr("bad state") + i32(1) + i32(4) + TAGS
            + TAGS + TAGS
            + carr(1) + i32(1) + cstr("broker-1") + i32(9092) + cstr(None) + TAGS
            + TAGS)
    assert encode("share_acknowledge_response", 1, resp) == wire
    assert decode("share_acknowledge_response", 1, wire) == resp


def test_share_group_describe_v1_request_and_response_bytes() -> None:
    wire = carr(2) + cstr("sg") + cstr("other") + b"\x01" + TAGS
    assert encode("share_group_describe_request", 1, describe_request(1)) == wire
    resp = describe_response(1)
    wire = (i32(1) + carr(1)
            + i16(69) + cstr("not yet") + cstr("sg") + cstr("Stable") + i32(3) + i32(2) + cstr("simple")
            + carr(1) + cstr("m-1") + cstr("rack-a") + i32(3) + cstr("rdkafka") + cstr("/10.0.0.1")
            + carr(1) + cstr("orders")
            + carr(1) + TOPIC_A + cstr("orders") + carr(2) + i32(0) + i32(1) + TAGS + TAGS  # Assignment
            + TAGS  # member
            + i32(0x0F) + TAGS  # AuthorizedOperations, group
            + TAGS)
    assert encode("share_group_describe_response", 1, resp) == wire
    assert decode("share_group_describe_response", 1, wire) == resp


def test_describe_share_group_offsets_bytes_and_lag_only_from_v1() -> None:
    wire = (carr(2) + cstr("sg") + carr(1) + cstr("orders") + carr(2) + i32(0) + i32(1) + TAGS + TAGS
            + cstr("all") + carr(None) + TAGS + TAGS)
    for v in (0, 1):
        assert encode("describe_share_group_offsets_request", v, offsets_describe_request(v)) == wire
    for v in (0, 1):
        lag = i64(7) if v >= 1 else b""
        wire = (i32(4) + carr(1) + cstr("sg")
                + carr(1) + cstr("orders") + TOPIC_A
                + carr(1) + i32(1) + i64(40) + i32(3) + lag + i16(3) + cstr("unknown") + TAGS
                + TAGS  # topic
                + i16(16) + cstr("elsewhere") + TAGS  # group
                + TAGS)
        body = offsets_describe_response(v)
        assert encode("describe_share_group_offsets_response", v, body) == wire
        assert decode("describe_share_group_offsets_response", v, wire) == body


def test_alter_share_group_offsets_v0_bytes() -> None:
    wire = cstr("sg") + carr(1) + cstr("orders") + carr(1) + i32(2) + i64(100) + TAGS + TAGS + TAGS
    assert encode("alter_share_group_offsets_request", 0, offsets_alter_request(0)) == wire
    wire = (i32(6) + i16(0) + cstr("partly")
            + carr(1) + cstr("orders") + TOPIC_A + carr(1) + i32(2) + i16(68) + cstr("not empty") + TAGS + TAGS
            + TAGS)
    assert encode("alter_share_group_offsets_response", 0, offsets_alter_response(0)) == wire
    assert decode("alter_share_group_offsets_response", 0, wire) == offsets_alter_response(0)


def test_delete_share_group_offsets_v0_bytes() -> None:
    wire = cstr("sg") + carr(2) + cstr("orders") + TAGS + cstr("payments") + TAGS + TAGS
    assert encode("delete_share_group_offsets_request", 0, offsets_delete_request(0)) == wire
    wire = (i32(7) + i16(0) + cstr("partly")
            + carr(1) + cstr("orders") + TOPIC_A + i16(3) + cstr("no such topic") + TAGS
            + TAGS)
    assert encode("delete_share_group_offsets_response", 0, offsets_delete_response(0)) == wire
    assert decode("delete_share_group_offsets_response", 0, wire) == offsets_delete_response(0)


def test_unknown_tagged_fields_survive_and_sit_in_the_tag_section() -> None:
    wire = round_trip("share_group_heartbeat_request", 1, heartbeat_request(1))
    assert wire.endswith(uvarint(1) + uvarint(7) + uvarint(1) + b"\x01")


# ---- error codes after 128 ----


def test_error_codes_up_to_share_session_limit_reached_are_complete() -> None:
    assert set(range(-1, 134)) <= set(ERRORS)
    assert ErrorCode.SHARE_SESSION_LIMIT_REACHED == 133 and is_retriable(133)
    assert [error_name(c) for c in range(129, 134)] == [
        "REBOOTSTRAP_REQUIRED", "STREAMS_INVALID_TOPOLOGY", "STREAMS_INVALID_TOPOLOGY_EPOCH",
        "STREAMS_TOPOLOGY_FENCED", "SHARE_SESSION_LIMIT_REACHED"]
    assert not any(is_retriable(c) for c in range(129, 133))
    assert ERRORS[133][2] == "The limit of share sessions has been reached."
