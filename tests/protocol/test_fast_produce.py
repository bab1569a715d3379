"""The C Produce codec (native/codecs/_fastproduce.c) against the generated codec it stands in for.

Where C answers, it must answer exactly as the generated code: the same objects decoded from the
same bytes (and the same end position), the same bytes encoded from the same answer.  Where it
declines (None) the generated code runs, so declining is always safe; but the usual request and the
usual answer must not be declined, or the fast path would silently be a slow one.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockbroker.codec_errors import CodecError
from mockbroker.protocol import api, fast_produce
from mockbroker.protocol.generated import produce_request as REQ
from mockbroker.protocol.generated import produce_response as RESP
from mockbroker.protocol.runtime import EncodeError

from .strategies import message

pytestmark = pytest.mark.skipif(
    fast_produce.decode_request is None,
    reason="the C extension mockbroker.native._fastproduce is not built here (or MOCKBROKER_PURE_PYTHON is set)",
)
VERSIONS = range(0, 14)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)


def _wire(mod, version: int, obj) -> bytes:
    out = bytearray()
    api.encode_message(mod, version, obj, out, [])
    return bytes(out)


def _python_decode(wire: bytes, version: int):
    return REQ.READERS[version](memoryview(wire), 0)


def _has_tags(req: REQ.ProduceRequest) -> bool:
    return bool(req.unknown_tags) or any(
        t.unknown_tags or any(p.unknown_tags for p in t.partition_data) for t in req.topic_data
    )


@pytest.mark.parametrize("version", VERSIONS)
@SETTINGS
@given(data=st.data())
def test_requests_decode_as_the_generated_reader_does(version: int, data: st.DataObject) -> None:
    req = data.draw(message(REQ.ProduceRequest, version, version >= 9))
    wire = _wire(REQ, version, req)
    expected, end = _python_decode(wire, version)
    got = fast_produce.decode_request(memoryview(wire), 0, version)
    if _has_tags(req):  # tagged fields are the generated reader's job
        assert got is None
        return
    assert got is not None, "the C codec declined a well-formed request without tagged fields"
    obj, pos = got
    assert pos == end == len(wire)
    assert type(obj) is REQ.ProduceRequest and obj == expected == req
    for topic in obj.topic_data:
        assert type(topic) is REQ.TopicProduceData
        for part in topic.partition_data:
            assert type(part) is REQ.PartitionProduceData
            assert part.records is None or isinstance(part.records, memoryview)
    assert repr(obj).startswith("ProduceRequest(")


@st.composite
def _damaged(draw: st.DrawFn, version: int) -> bytes:
    req = draw(message(REQ.ProduceRequest, version, version >= 9))
    wire = bytearray(_wire(REQ, version, req))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "cut", "insert"]))
        at = draw(st.integers(0, max(len(wire) - 1, 0)))
        if kind == "flip" and wire:
            wire[at] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, draw(st.integers(0, 255))]))
        elif kind == "cut":
            del wire[at:]
        else:
            wire[at:at] = draw(st.binary(min_size=1, max_size=4))
    return bytes(wire)


@pytest.mark.parametrize("version", [0, 3, 8, 9, 12, 13])
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=st.data())
def test_damaged_requests_are_declined_or_decoded_as_the_generated_reader_does(version: int,
                                                                               data: st.DataObject) -> None:
    wire = data.draw(_damaged(version))
    try:
        expected = _python_decode(wire, version)
    except CodecError:
        expected = None
    got = fast_produce.decode_request(memoryview(wire), 0, version)
    if got is not None:
        assert expected is not None, "C decoded bytes the generated reader refuses"
        assert got[1] == expected[1] and got[0] == expected[0]


def test_decoding_starts_where_it_is_told_and_leaves_trailing_bytes() -> None:
    req = REQ.ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        REQ.TopicProduceData(name="tópico", partition_data=[REQ.PartitionProduceData(index=3, records=b"abc")])])
    wire = b"\x00" * 5 + _wire(REQ, 9, req) + b"\x00\x00\x00"
    obj, pos = fast_produce.decode_request(memoryview(wire), 5, 9)
    assert obj == req and pos == len(wire) - 3
    assert fast_produce.decode_request(memoryview(wire), len(wire) + 1, 9) is None
    assert fast_produce.decode_request(wire, 5, 9) is None  # only memoryviews (what the broker passes)


def _usual_partition(version: int) -> st.SearchStrategy[RESP.PartitionProduceResponse]:
    i32, i64 = st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1)
    message_ = st.none() | st.text(max_size=40) if version >= 8 else st.none()
    return st.builds(RESP.PartitionProduceResponse, index=i32, error_code=st.integers(-(2**15), 2**15 - 1),
                     base_offset=i64, log_append_time_ms=i64 if version >= 2 else st.just(-1),
                     log_start_offset=i64 if version >= 5 else st.just(-1), error_message=message_)


def _usual_response(version: int) -> st.SearchStrategy[RESP.ProduceResponse]:
    name = st.just("") if version >= 13 else st.text(max_size=20)
    topic_id = st.binary(min_size=16, max_size=16) if version >= 13 else st.just(bytes(16))
    topic = st.builds(RESP.TopicProduceResponse, name=name, topic_id=topic_id,
                      partition_responses=st.lists(_usual_partition(version), max_size=4))
    return st.builds(RESP.ProduceResponse, responses=st.lists(topic, max_size=3),
                     throttle_time_ms=st.integers(0, 2**31 - 1) if version >= 1 else st.just(0))


def _python_encode(obj, version: int) -> bytes | None:
    try:
        return _wire(RESP, version, obj)
    except EncodeError:
        return None


@pytest.mark.parametrize("version", VERSIONS)
@SETTINGS
@given(data=st.data())
def test_usual_answers_encode_as_the_generated_writer_does(version: int, data: st.DataObject) -> None:
    obj = data.draw(_usual_response(version))
    out = bytearray(b"head")
    assert fast_produce.encode_response(obj, version, out) is True, "the C codec declined a usual answer"
    assert bytes(out) == b"head" + _python_encode(obj, version)


@pytest.mark.parametrize("version", VERSIONS)
@SETTINGS
@given(data=st.data())
def test_any_answer_is_declined_or_encoded_as_the_generated_writer_does(version: int, data: st.DataObject) -> None:
    obj = data.draw(message(RESP.ProduceResponse, version, version >= 9))
    out = bytearray(b"head")
    if fast_produce.encode_response(obj, version, out) is None:
        assert out == b"head"
    else:
        assert bytes(out) == b"head" + _python_encode(obj, version)


@pytest.mark.parametrize(("field", "value"), [
    ("index", 2**31), ("error_code", -(2**15) - 1), ("base_offset", 2**63), ("log_start_offset", "0"),
    ("error_message", "\udc80"), ("error_message", "x" * 40000), ("record_errors", None),
    ("current_leader", RESP.LeaderIdAndEpoch(leader_id=2, leader_epoch=7)),
])
def test_answers_outside_the_usual_are_left_to_the_generated_writer(field: str, value: object) -> None:
    part = RESP.PartitionProduceResponse(index=0, error_code=0, base_offset=5, log_append_time_ms=-1,
                                         log_start_offset=0)
    setattr(part, field, value)
    obj = RESP.ProduceResponse(responses=[RESP.TopicProduceResponse(name="t", partition_responses=[part])])
    for version in (8, 10):
        out = bytearray()
        got = fast_produce.encode_response(obj, version, out)
        expected = _python_encode(obj, version)  # what the broker sends, or None for its EncodeError
        if expected is None or (field == "current_leader" and version >= 10):
            assert got is None and out == b"", (field, version)
        elif got is not None:
            assert bytes(out) == expected


def test_a_request_through_the_api_uses_the_c_codec_and_answers_the_same_bytes() -> None:
    req = REQ.ProduceRequest(acks=1, timeout_ms=1000, topic_data=[
        REQ.TopicProduceData(name="t", partition_data=[REQ.PartitionProduceData(index=0, records=b"r" * 70)])])
    frame = memoryview(api.to_bytes(api.encode_request(0, 9, 42, req))[4:])
    assert api.decode_request(frame).body == req
    answer = RESP.ProduceResponse(responses=[RESP.TopicProduceResponse(name="t", partition_responses=[
        RESP.PartitionProduceResponse(index=0, base_offset=9, log_start_offset=0)])], throttle_time_ms=3)
    framed = api.to_bytes(api.encode_response(0, 9, 42, answer))
    assert api.decode_response(0, 9, framed[4:]) == (42, answer)
