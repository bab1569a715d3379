"""Slow senders: ``connections.max.idle.ms`` closes idle connections and stalled partial requests.

Kafka (network.Selector with an IdleExpiryManager): every socket event refreshes a connection's
last-activity time; a connection idle longer than ``connections.max.idle.ms`` (default 600000) is
closed.  There is no separate broker timeout for a request frame that starts and never completes:
the idle limit ends it, and a client that trickles bytes more often than the limit stays connected.
The mock follows that (mockbroker.server.idle), with one sweep task per broker; a request still
being answered (a long poll) does not count as idle.  Short limits here (600 ms).
"""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer

from mockbroker.cluster import MockCluster
from mockbroker.protocol import api

from .hostile import Harness, closed_by_peer, harness, read_frame
from .wire import WireClient, fetch_body, produce_body

IDLE_MS = 600


@pytest.fixture
def h(caplog: pytest.LogCaptureFixture) -> Iterator[Harness]:
    with harness(caplog, config={"connections.max.idle.ms": IDLE_MS}, topics={"t": 1}) as got:
        yield got


def _closed_after(sock: object, started: float) -> float:
    assert closed_by_peer(sock, wait_s=5)  # type: ignore[arg-type]
    return time.monotonic() - started


def test_an_idle_connection_is_closed_after_the_limit(h: Harness) -> None:
    with h.case(rf"idle for \d+ ms, over connections.max.idle.ms={IDLE_MS} \(no request in progress\)"):
        with h.connect() as s:
            took = _closed_after(s, time.monotonic())
    assert IDLE_MS / 1000 <= took < IDLE_MS / 1000 + 1.0


def test_a_connection_goes_idle_after_its_last_answer(h: Harness) -> None:
    with h.case(r"over connections.max.idle.ms"), WireClient(h.port) as c:
        c.call(3, 12, api.request_module(3).MetadataRequest(topics=None))
        answered = time.monotonic()
        time.sleep(IDLE_MS / 2000)
        assert c.call(18, 3, api.request_module(18).ApiVersionsRequest(  # activity: the timer restarts
            client_software_name="idle", client_software_version="1")).error_code == 0
        took = _closed_after(c.sock, answered)
    assert took >= 1.5 * IDLE_MS / 1000


@pytest.mark.parametrize(("announced", "sent"), [(40, 5), (100_000, 50_000)], ids=["small", "large-frame"])
def test_a_request_that_starts_and_never_completes_is_closed_by_the_idle_limit(h: Harness, announced: int,
                                                                              sent: int) -> None:
    """Kafka has no separate partial-request timeout: the idle limit closes it, counted from the
    last byte.  The log line says how much of the frame came."""
    pattern = rf"a request frame stalled after {sent + 4} of {announced + 4} bytes"
    with h.case(pattern), h.connect() as s:
        s.sendall(struct.pack(">i", announced) + b"z" * sent)
        took = _closed_after(s, time.monotonic())
    assert IDLE_MS / 1000 <= took < IDLE_MS / 1000 + 1.0


def test_a_trickling_sender_stays_connected_and_is_answered(h: Harness) -> None:
    """A byte pair every IDLE/3 keeps the connection alive well past the limit (as in Kafka)."""
    frame = api.to_bytes(api.encode_request(18, 3, 11, api.request_module(18).ApiVersionsRequest(
        client_software_name="trickle", client_software_version="1"), "trickler"))
    started = time.monotonic()
    with h.connect() as s:
        for i in range(0, len(frame), 2):
            s.sendall(frame[i : i + 2])
            time.sleep(IDLE_MS / 3000)
        corr, body = api.decode_response(18, 3, read_frame(s))
    assert corr == 11 and body.error_code == 0
    assert time.monotonic() - started > 2 * IDLE_MS / 1000


def test_a_long_poll_longer_than_the_limit_is_not_cut(h: Harness) -> None:
    """A fetch waiting max_wait_ms = 2.5 x the limit is answered (mock choice: a request being
    answered is not idle; Kafka's fetch.max.wait is far below its 10-minute default limit)."""
    with WireClient(h.port) as c:
        start = time.monotonic()
        resp = c.call(1, 12, fetch_body("t", 0, 0, max_wait_ms=int(2.5 * IDLE_MS)))
        assert resp.responses[0].partitions[0].error_code == 0
        assert time.monotonic() - start >= 2.4 * IDLE_MS / 1000


def test_a_negative_limit_turns_expiry_off() -> None:
    with MockCluster(brokers=1, config={"connections.max.idle.ms": -1}) as cluster:
        assert cluster.brokers[0].idle_sweep is None
    with MockCluster(brokers=1) as cluster:  # Kafka's default, 10 minutes
        assert cluster.state.config["connections.max.idle.ms"] == 600_000
        assert cluster.brokers[0].idle_sweep is not None


def test_confluent_kafka_reconnects_after_its_idle_connection_is_closed(h: Harness) -> None:
    """librdkafka: the producer's connection closed while idle is reopened by the next produce; the
    consumer, long-polling all along, is never idle and reads both records."""
    bootstrap = f"127.0.0.1:{h.port}"
    got: list[bytes] = []
    stop = threading.Event()

    def consume() -> None:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "calm-readers",
                             "auto.offset.reset": "earliest", "fetch.wait.max.ms": 200})
        consumer.subscribe(["t"])
        try:
            while not stop.is_set():
                msg = consumer.poll(0.2)
                if msg is not None and msg.error() is None:
                    got.append(msg.value())
        finally:
            consumer.close()

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "log.connection.close": False})
    errors: list[object] = []
    try:
        with h.case(r"over connections.max.idle.ms", max_latency_s=3.0):
            producer.produce("t", b"before", on_delivery=lambda err, _m: err and errors.append(err))
            assert producer.flush(10) == 0
            time.sleep(3 * IDLE_MS / 1000)  # the producer's connections go idle and are closed
        producer.produce("t", b"after", on_delivery=lambda err, _m: err and errors.append(err))
        assert producer.flush(10) == 0 and errors == []
        deadline = time.monotonic() + 15
        while len(got) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert got == [b"before", b"after"]
    finally:
        stop.set()
        reader.join(20)


def test_aiokafka_reconnects_after_its_idle_connection_is_closed(h: Harness) -> None:
    """aiokafka: after its connections were closed as idle, the same producer sends again and a
    consumer reads both records."""
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run() -> list[bytes]:
        bootstrap = f"127.0.0.1:{h.port}"
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            await producer.send_and_wait("t", b"before")
            await asyncio.sleep(3 * IDLE_MS / 1000)
            await producer.send_and_wait("t", b"after")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer("t", bootstrap_servers=bootstrap, auto_offset_reset="earliest")
        await consumer.start()
        try:
            got: list[bytes] = []
            while len(got) < 2:
                got.append((await asyncio.wait_for(consumer.getone(), 15)).value)
            return got
        finally:
            await consumer.stop()

    with h.case(r"over connections.max.idle.ms", max_latency_s=3.0):
        assert asyncio.run(run()) == [b"before", b"after"]


def test_a_reader_that_stops_reading_is_closed_once_idle(h: Harness) -> None:
    """Responses queued for a client that never reads them: no bytes move, so the connection is
    idle (Kafka: no socket events either) and is closed; the queued answers are dropped."""
    import socket

    from mockbroker import records as rec

    with WireClient(h.port) as w:
        w.call(0, 9, produce_body(9, "t", 0, rec.build_batch([(b"k", b"v" * 400_000)])))
    frame = api.to_bytes(api.encode_request(1, 12, 1, fetch_body("t", 0, 0)))
    with h.case(r"over connections.max.idle.ms=600 \(no request in progress\)"):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", h.port))
        with s:
            s.sendall(frame * 20)  # ~8 MB of answers, never read
            time.sleep(IDLE_MS / 1000 + 1.2)
            s.settimeout(5)
            received = 0
            try:
                while chunk := s.recv(1 << 20):
                    received += len(chunk)
            except ConnectionResetError:
                pass
    assert received < 20 * 400_000  # closed before it could all be read


def test_the_sweep_wakes_a_few_times_per_limit_and_rarely_for_long_limits() -> None:
    """A quarter of the limit, at most a second up to two-minute limits, 1/120 of longer ones (the
    default 600000 ms: every 5 s, so an idle broker is not woken each second), never under 50 ms."""
    from mockbroker.server.idle import sweep_interval

    assert sweep_interval(100) == 0.05
    assert sweep_interval(IDLE_MS) == IDLE_MS / 4000
    assert sweep_interval(10_000) == 1.0
    assert sweep_interval(120_000) == 1.0
    assert sweep_interval(600_000) == 5.0
    for limit_ms in (1, 600, 4_000, 90_000, 600_000, 3_600_000):  # how late a close can come
        late_s = sweep_interval(limit_ms)
        assert late_s <= max(0.05, limit_ms / 4000)  # never more than a quarter of the limit
        assert late_s <= max(1.0, limit_ms / 100_000)  # nor more than a second or 1 % of it
