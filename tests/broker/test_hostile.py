"""Hostile bytes on the socket: bad frame lengths, unparseable requests, unknown API keys, versions.

Each case says what Kafka does (SocketServer / Selector / RequestContext) and asserts exactly that,
that the broker logged a line naming the problem, and that a well-behaved client on another
connection (tests.broker.hostile.Bystander) kept working throughout.  Kafka closes the connection
for a frame size it refuses (negative or over ``socket.request.max.bytes``: InvalidReceiveException),
for a header naming an unknown API key or a version it has not enabled, and for a body it cannot
parse (InvalidRequestException from RequestContext.parseRequest); the one exception is ApiVersions
at a version newer than the broker's, answered as v0 with UNSUPPORTED_VERSION and the supported
list.  Partial coverage of the same ground elsewhere: tests/broker/test_connections.py (a few
junk frames), tests/broker/test_framing.py (framing unit test), tests/protocol/test_bad_input.py
(the codec alone).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator

import pytest

from mockbroker.errors import ErrorCode
from mockbroker.handlers import load_all
from mockbroker.handlers.registry import HANDLERS, TELEMETRY_APIS
from mockbroker.protocol import api

from .hostile import Harness, closed_by_peer, framed, harness, raw_header, read_frame

load_all()  # the tests below walk every registered handler

MAX_REQUEST = 1_000_000  # socket.request.max.bytes here (Kafka's default is 104857600)


@pytest.fixture
def h(caplog: pytest.LogCaptureFixture) -> Iterator[Harness]:
    with harness(caplog, config={"socket.request.max.bytes": MAX_REQUEST}, topics={"calm-kp": 1}) as got:
        yield got


def _metadata_frame(correlation_id: int = 1) -> bytes:
    return api.to_bytes(api.encode_request(3, 12, correlation_id, api.request_module(3).MetadataRequest(
        topics=None, allow_auto_topic_creation=False), "hostile"))


@pytest.mark.parametrize("size", [-1, -2**31, MAX_REQUEST + 1, 2**31 - 1], ids=["-1", "int-min", "limit+1", "int-max"])
def test_a_frame_size_kafka_refuses_closes_the_connection(h: Harness, size: int) -> None:
    """Kafka: NetworkReceive throws InvalidReceiveException -> the Selector closes the connection."""
    with h.case(rf"frame size {size} is outside 0\.\.{MAX_REQUEST}"), h.connect() as s:
        s.sendall(struct.pack(">i", size) + b"x" * 32)
        assert closed_by_peer(s)


def test_a_frame_at_the_limit_is_read(h: Harness) -> None:
    """The limit is inclusive in Kafka (only size > socket.request.max.bytes is refused): a frame of
    exactly the limit is read whole; its body parses and the zeros after it are ignored."""
    body = _metadata_frame(3)[4:]
    with h.case(rf"Metadata v12 from .* has {MAX_REQUEST - len(body)} bytes after its body"), h.connect() as s:
        s.sendall(framed(body + b"\x00" * (MAX_REQUEST - len(body))))
        corr, answer = api.decode_response(3, 12, read_frame(s))
        assert corr == 3 and answer.brokers


def test_a_truncated_frame_then_disconnect_is_logged(h: Harness) -> None:
    """A client that announces 200 bytes, sends 20 and goes away: Kafka just drops the channel.
    The mock logs how much of the request came."""
    with h.case(r"disconnected with a partial request frame \(24 of 204 bytes"), h.connect() as s:
        s.sendall(struct.pack(">i", 200) + b"y" * 20)
        time.sleep(0.1)


@pytest.mark.parametrize("cut", [2, 7, 9, 12])
def test_a_truncated_body_inside_a_whole_frame_closes(h: Harness, cut: int) -> None:
    """A frame whose body ends early: a short header is unreadable, a short body unparseable
    (Kafka: InvalidRequestException, the connection closes)."""
    payload = _metadata_frame()[4:]
    with h.case(r"unreadable request header|malformed Metadata v12"), h.connect() as s:
        s.sendall(framed(payload[:cut] if cut < 10 else payload[: len(payload) - cut]))
        assert closed_by_peer(s)


def test_garbage_inside_a_frame_after_a_valid_body_is_ignored(h: Harness) -> None:
    """Kafka parses the body and never looks at what follows it in the frame: answered normally.
    The mock logs the trailing bytes at DEBUG."""
    with h.case(r"Metadata v12 from .* has 9 bytes after its body"), h.connect() as s:
        s.sendall(framed(_metadata_frame(5)[4:] + b"garbage!!"))
        corr, body = api.decode_response(3, 12, read_frame(s))
        assert corr == 5 and body.brokers


@pytest.mark.parametrize(("junk", "problem"), [
    (b"\xff\xff\xff\xfe", r"frame size -2 is outside"),
    (b"\x7f\x00\x00\x00\x00", r"frame size 2130706432 is outside"),
    (framed(b"\x00\x63\x00\x00\x00\x00\x00\x01\xff\xff"), r"unknown or unsupported api key 99"),
    (framed(b"\x00"), r"unreadable request header"),
], ids=["negative-size", "huge-size", "unknown-key", "one-byte-frame"])
def test_garbage_after_a_valid_frame_answers_the_frame_then_closes(h: Harness, junk: bytes, problem: str) -> None:
    """Bytes after a whole request are the next frame: the valid one is answered first (Kafka reads
    and answers frames in order), then the junk closes the connection."""
    with h.case(problem), h.connect() as s:
        s.sendall(_metadata_frame(9) + junk)
        corr, body = api.decode_response(3, 12, read_frame(s))
        assert corr == 9 and body.brokers
        assert closed_by_peer(s)


@pytest.mark.parametrize("key", [-1, 4, 52, 73, 1000, 32767])
def test_unknown_or_not_enabled_api_keys_close_the_connection(h: Harness, key: int) -> None:
    """Kafka: an id ApiKeys does not know fails RequestHeader.parse; a known key the broker does not
    enable (LeaderAndIsr 4, Vote 52, ...) fails isApiEnabled; both close the connection."""
    assert key not in HANDLERS
    with h.case(rf"unknown or unsupported api key {key}\b"), h.connect() as s:
        s.sendall(framed(raw_header(key, 0) + b"\x00" * 8))
        assert closed_by_peer(s)


def _out_of_range_versions() -> list[tuple[int, int]]:
    cases = []
    for key, handler in sorted(HANDLERS.items()):
        cases.append((key, handler.max_version + 1))
        if handler.min_version > 0:
            cases.append((key, handler.min_version - 1))
    return cases


def test_every_api_at_an_unsupported_version(h: Harness) -> None:
    """One version above each registered API's max (and one below its min where that is above 0):
    Kafka closes the connection ("Received request api key X with version Y which is not enabled"),
    except ApiVersions, which gets a v0 UNSUPPORTED_VERSION answer listing what the broker speaks (the
    telemetry APIs only with a telemetry receiver, as its usual answer)."""
    cases = _out_of_range_versions()
    assert len(cases) >= len(HANDLERS)
    for key, version in cases:
        name = api.api_name(key)
        with h.case(rf"{name} v{version} (is not supported|.*newer than we speak)"), h.connect() as s:
            s.sendall(framed(raw_header(key, version, correlation_id=key) + b"\x00"))
            if key != 18:
                assert closed_by_peer(s), (name, version)
                continue
            corr, body = api.decode_response(18, 0, read_frame(s))
            assert corr == key and body.error_code == ErrorCode.UNSUPPORTED_VERSION
            assert {(k.api_key, k.max_version) for k in body.api_keys} == {  # no telemetry receiver here
                (k, handler.max_version) for k, handler in HANDLERS.items() if k not in TELEMETRY_APIS}


@pytest.mark.parametrize(("version", "body", "detail"), [
    # an array count that lies (refused before anything is allocated for it)
    (4, struct.pack(">i", 2**31 - 1) + b"\x00\x01a", r"array count 2147483647 is larger than the remaining data"),
    (4, struct.pack(">ih", 1, -2) + b"\x01", r"invalid name length -2"),  # a negative string length
    (4, struct.pack(">ih", 1, 50) + b"short\x01", r"string of 50 bytes runs past the end"),
    # flexible header: its tagged-field count is a varint too long
    (12, b"\xff" * 6, r"varint longer than 5 bytes in RequestHeader v2"),
    # flexible body: the compact array length is a varint too long
    (12, b"\x00" + b"\x82\x80\x80\x80\x80\x01", r"varint longer than 5 bytes in MetadataRequest v12.topics"),
    (12, b"\x00\x02" + b"\x00" * 16 + b"\x05ab", r"string of 4 bytes runs past the end"),
], ids=["array-count-lies", "negative-string-length", "string-past-end", "bad-header-varint", "bad-body-varint",
        "compact-string-past-end"])
def test_unparseable_request_bodies_close_the_connection(h: Harness, version: int, body: bytes, detail: str) -> None:
    """Kafka: RequestContext.parseRequest fails -> InvalidRequestException -> the connection closes."""
    with h.case(rf"malformed Metadata v{version} request: .*{detail}"), h.connect() as s:
        s.sendall(framed(raw_header(3, version) + body))
        assert closed_by_peer(s)


def test_kafka_python_works_through_a_barrage_of_junk(h: Harness) -> None:
    """kafka-python (producer + consumer) sends and reads 300 records while 60 connections send junk."""
    from kafka import KafkaConsumer, KafkaProducer

    junk = [struct.pack(">i", -1), struct.pack(">i", 2**31 - 1), framed(raw_header(999, 0)),
            framed(raw_header(0, 99)), framed(raw_header(3, 4) + struct.pack(">i", 2**31 - 1)), framed(b"\x00")]
    bootstrap = f"127.0.0.1:{h.port}"
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    consumer = KafkaConsumer("calm-kp", bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=15000, group_id=None)
    try:
        for i in range(300):
            producer.send("calm-kp", b"%d" % i)
            if i % 5 == 0:
                with h.connect() as s:
                    s.sendall(junk[(i // 5) % len(junk)])
                    assert closed_by_peer(s)
        producer.flush(15)
        got = []
        for msg in consumer:
            got.append(msg.value)
            if len(got) == 300:
                break
        assert got == [b"%d" % i for i in range(300)]
    finally:
        producer.close(5)
        consumer.close()
    h.expect_log(r"unknown or unsupported api key 999")
    h.bystander.assert_progress(0, rounds=10)
