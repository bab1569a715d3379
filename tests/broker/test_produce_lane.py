"""The produce lane (mockbroker/native/lanes/_producelane.c) against the Python path it stands in for.

Two clusters get the same generated Produce frames over real sockets, one with the lane and one
without: every answer must be byte for byte the same, and so must what each cluster stored (batches,
offsets, sizes, memory count) and journaled.  The requests mix what the lane takes (usual batches,
every codec, several topics and partitions, big and small batches in one frame) with everything it must
hand to the handler (bad CRCs and records, old timestamps, retried and out-of-sequence idempotent
batches, transactional producers,
acks 0 and 2, unknown topics and partitions, partitions led elsewhere, topics with LogAppendTime,
a compression.type or retention.bytes, a full memory cap) and config changes between requests.
"""

from __future__ import annotations

import random
import socket
import struct
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.handlers import produce_lane
from mockbroker.protocol import api
from mockbroker.server import dispatch, warm_up
from mockbroker.state.clock import ManualClock
from tests.broker.wire import read_frame
from tests.records.helpers import fix_v2_crc

pytestmark = pytest.mark.skipif(not produce_lane.available(),
                                reason="the C extension is not built (or MOCKBROKER_PURE_PYTHON is set)")

TOPICS = {
    "plain": {},
    "compacted": {"cleanup.policy": "compact"},
    "window": {"message.timestamp.before.max.ms": 60_000, "message.timestamp.after.max.ms": 60_000},
    "appendtime": {"message.timestamp.type": "LogAppendTime"},
    "gzipped": {"compression.type": "gzip"},
    "retained": {"retention.bytes": 1 << 30},
    "small": {"max.message.bytes": 2000},
}
NOW = 1_760_000_000_000
CODECS = [rec.NONE, rec.NONE, rec.GZIP, rec.SNAPPY, rec.LZ4, rec.ZSTD]


class Counting:
    """The C lane, counting the requests it took: ``dispatched`` through produce_lane.serve (dispatch
    offered them), ``borrowed`` by the C borrow() straight from a connection's staging buffer."""

    def __init__(self, lane: Any) -> None:
        self.lane, self.dispatched, self._staged_before = lane, 0, lane.staging_taken()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.lane, name)

    def produce(self, *args: Any) -> Any:
        result = self.lane.produce(*args)
        if type(result) is tuple:
            self.dispatched += 1
        return result

    @property
    def borrowed(self) -> int:
        return self.lane.staging_taken() - self._staged_before

    @property
    def taken(self) -> int:
        return self.dispatched + self.borrowed


@pytest.fixture(autouse=True)
def _staging_back_on() -> Iterator[None]:
    yield
    if produce_lane._lane is not None:
        produce_lane._lane.enable_staging(True)


def _port(cluster: MockCluster) -> int:
    return int(cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)[1])


def _batch(rng: random.Random, now: int, version: int, seqs: dict[Any, int], where: tuple[str, int]) -> bytes:
    """A batch for partition ``where``; ``seqs``: the next sequence of each idempotent producer there
    (usually continued; sometimes repeated, restarted or skipped ahead)."""
    n = rng.randint(1, 6)
    big = rng.random() < 0.1
    ts = now - (3_600_000 if rng.random() < 0.1 else 0)
    records = [(None if rng.random() < 0.15 else f"k{i}".encode(), b"v" * (6000 if big else rng.randint(0, 200)),
                [("h", b"x")] if rng.random() < 0.2 else [], ts + i) for i in range(n)]
    kind = rng.random()
    idempotent = kind < 0.3
    pid, sequence = -1, -1
    if idempotent:
        pid = rng.randint(1, 3)
        expected = seqs.get((pid, *where), 0)
        sequence = rng.choice([expected] * 6 + [max(expected - n, 0), 0, expected + 3])
        seqs[(pid, *where)] = max(expected, sequence + n)
    data = bytearray(rec.build_batch(
        records, compression=rng.choice(CODECS if version >= 7 else CODECS[:-1]), base_timestamp=ts,
        producer_id=pid, producer_epoch=0 if idempotent else -1, base_sequence=sequence))
    if 0.3 <= kind < 0.34:
        data[-1] ^= 0x55  # a bad CRC
    elif 0.34 <= kind < 0.37 and data[22] & 0x07 == 0:
        data[61] = 0x7F  # a record length past its batch, under a matching CRC
        fix_v2_crc(data)
    return bytes(data)


def _request(rng: random.Random, version: int, now: int, led_here: dict[str, list[int]],
             seqs: dict[Any, int]) -> bytes:
    """A Produce frame; ``led_here``: the partitions broker 0 leads, picked most of the time."""
    m = api.request_module(0)
    names = [*TOPICS, "missing"]
    topics = []
    for _ in range(rng.choice([1, 1, 1, 1, 2, 3])):
        name = "plain" if rng.random() < 0.5 else rng.choice(names)
        parts = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            index = rng.choice(led_here.get(name, [0])) if rng.random() < 0.8 else rng.choice([0, 1, 2, 3, 4])
            parts.append(m.PartitionProduceData(index=index, records=_batch(rng, now, version, seqs, (name, index))))
        topics.append(m.TopicProduceData(name=name, partition_data=parts))
    acks = rng.choice([1, 1, 1, -1, -1, 0, 2])
    txn = "txn" if rng.random() < 0.04 else None
    body = m.ProduceRequest(transactional_id=txn, acks=acks, timeout_ms=5000, topic_data=topics)
    client_id = rng.choice(["lane-test", None, "ünïcode"])
    return api.to_bytes(api.encode_request(0, version, rng.randint(0, 1 << 30), body, client_id))


def _stored(cluster: MockCluster) -> dict[str, Any]:
    return _stored_state(cluster.state)


def _stored_state(state: Any) -> dict[str, Any]:
    """Every partition's batches and offsets, and the memory count."""
    logs = {}
    for name, topic in state.topics.items():
        for log in topic.partitions:
            logs[f"{name}-{log.index}"] = (
                log.next_offset, log.log_start_offset, log.size_bytes, log.last_stable_offset,
                [(b.base_offset, b.last_offset, b.max_timestamp, b.size, b"".join(bytes(x) for x in b.buffers),
                  b.producer_id, b.is_transactional, b.is_control) for b in log.batches])
    return {"logs": logs, "counted": state.memory_cap.total}


def _journal(cluster: MockCluster) -> list[dict[str, Any]]:
    out = []
    for entry in cluster.journal.entries(api="Produce"):
        d = entry.to_dict()
        for volatile in ("seq", "time_ms", "latency_ms", "connection"):
            d.pop(volatile)
        out.append(d)
    return out


@pytest.fixture
def pair(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[MockCluster, MockCluster, Counting]]:
    counting = Counting(produce_lane._lane)
    monkeypatch.setattr(produce_lane, "_lane", counting)
    with ExitStack() as stack:
        # one fixed time for both: LogAppendTime answers and stamps come from it
        clusters = [stack.enter_context(MockCluster(brokers=2, clock=ManualClock(NOW))) for _ in range(2)]
        for c in clusters:
            for name, config in TOPICS.items():
                c.create_topic(name, 4, config=config)
        yield clusters[0], clusters[1], counting


def _count_admitted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many idempotent batches PartitionProducers.admits let through (only the lane asks it)."""
    from mockbroker.state.producer_state import PartitionProducers

    admitted = [0]
    real = PartitionProducers.admits

    def admits(self: Any, *args: Any) -> Any:
        last = real(self, *args)
        admitted[0] += last is not None
        return last

    monkeypatch.setattr(PartitionProducers, "admits", admits)
    return admitted


def _set_lane(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    """The lane on or off: offered by dispatch, and by connections reading into their staging buffer."""
    monkeypatch.setattr(dispatch, "_LANE", on)
    produce_lane._lane.enable_staging(on)


def test_lane_answers_and_stores_what_the_handler_does(pair: tuple[MockCluster, MockCluster, Counting],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    lane, handler, counting = pair
    admitted = _count_admitted(monkeypatch)
    rng = random.Random(20261125)
    now = NOW
    led_here = {name: [log.index for log in topic.partitions if log.leader == 0]
                for name, topic in lane.state.topics.items()}
    seqs: dict[Any, int] = {}
    with socket.create_connection(("127.0.0.1", _port(lane))) as a, \
            socket.create_connection(("127.0.0.1", _port(handler))) as b:
        for i in range(400):
            if i == 150:  # config changes between requests: the lane reads its settings again
                for c in (lane, handler):
                    c.call(c.state.topics["plain"].config.set, "max.message.bytes", 3000)
                    c.call(c.state.config.set, "mock.produce.validation", "envelope")
            if i == 250:
                for c in (lane, handler):
                    c.call(c.state.config.set, "mock.produce.validation", "strict")
                    # room for a few more requests only: then the cap (in Python) refuses
                    c.call(c.state.config.set, "mock.log.max.total.bytes", c.state.memory_cap.total + 60_000)
            version = rng.randint(3, 12)
            frame = _request(rng, version, now, led_here, seqs)
            _set_lane(monkeypatch, True)
            a.sendall(frame)
            got_lane = read_frame(a) if _expects_answer(frame, version) else None
            _set_lane(monkeypatch, False)
            b.sendall(frame)
            got_handler = read_frame(b) if _expects_answer(frame, version) else None
            assert _same(got_lane, got_handler, version), f"request {i} (v{version}) answered differently"
        _set_lane(monkeypatch, True)
    assert lane.call(_stored, lane) == handler.call(_stored, handler)
    assert _journal(lane) == _journal(handler)
    # the lane took a good share of the requests (the rest went to the handler, as they must),
    # idempotent batches among them (only the lane asks PartitionProducers.admits); one request at a
    # time, each was next in line and answered from the staging buffer (the C borrow())
    assert 40 <= counting.taken <= 330, counting.taken
    assert admitted[0] >= 10, admitted
    assert counting.borrowed > 0, counting.borrowed


def test_pipelined_frames_keep_their_order(pair: tuple[MockCluster, MockCluster, Counting],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Many requests sent at once (Produce the lane takes and refuses, Metadata among them): the same
    answers in the same order, and the same state, with the lane as without it.  Frames the lane
    answers from the staging buffer come first; behind one it refuses, the rest wait their turn and
    go through dispatch (the lane is then offered them there)."""
    lane, handler, counting = pair
    rng = random.Random(7)
    led_here = {name: [log.index for log in topic.partitions if log.leader == 0]
                for name, topic in lane.state.topics.items()}
    seqs: dict[Any, int] = {}
    metadata = api.to_bytes(api.encode_request(3, 1, 99, api.request_module(3).MetadataRequest(topics=None), "m"))
    with socket.create_connection(("127.0.0.1", _port(lane))) as a, \
            socket.create_connection(("127.0.0.1", _port(handler))) as b:
        for round_ in range(12):
            frames, answered = [], []
            for _ in range(rng.randint(2, 12)):
                version = rng.randint(3, 12)
                frame = _request(rng, version, NOW, led_here, seqs) if rng.random() < 0.9 else metadata
                frames.append(frame)
                answered.append(frame is metadata or _expects_answer(frame, version))
            stream = b"".join(frames)
            got = []
            for on, sock in ((True, a), (False, b)):
                _set_lane(monkeypatch, on)
                sock.sendall(stream)
                got.append([read_frame(sock) for flag in answered if flag])
            expected = [f for f, flag in zip(frames, answered, strict=True) if flag]
            assert len(got[0]) == len(got[1]) == len(expected)
            for i, (one, other, frame) in enumerate(zip(*got, expected, strict=True)):
                version, is_metadata = struct.unpack_from(">h", frame, 6)[0], frame is metadata
                same = _same_metadata(one, other) if is_metadata else _same(one, other, version)
                assert same, f"round {round_}, answer {i}"
        _set_lane(monkeypatch, True)
    assert lane.call(_stored, lane) == handler.call(_stored, handler)
    assert _journal(lane) == _journal(handler)
    assert counting.borrowed > 0 and counting.dispatched > 0, (counting.borrowed, counting.dispatched)


def _same(one: bytes | None, other: bytes | None, version: int) -> bool:
    """Byte for byte the same, but for the ports of node endpoints (each cluster has its own)."""
    if one == other:
        return True
    if one is None or other is None:
        return False
    answers = [api.decode_response(0, version, a[4:]) for a in (one, other)]
    for _corr, body in answers:
        for endpoint in body.node_endpoints:
            endpoint.port = 0
    return answers[0] == answers[1]


def _same_metadata(one: bytes, other: bytes) -> bool:
    """Two Metadata v1 answers alike but for the brokers' ports."""
    answers = [api.decode_response(3, 1, a[4:])[1] for a in (one, other)]
    for body in answers:
        for broker in body.brokers:
            broker.port = 0
    return answers[0] == answers[1]


def _expects_answer(frame: bytes, version: int) -> bool:
    """False for acks=0 (no answer comes)."""
    pos = 12 + 2 + max(struct.unpack_from(">h", frame, 12)[0], 0)  # size, key, version, correlation, client id
    if version >= 9:
        pos += 1  # header tags
        n = frame[pos]  # compact transactional id: 0 null, else length + 1 (short here)
        pos += 1 + max(n - 1, 0)
    else:
        n = struct.unpack_from(">h", frame, pos)[0]
        pos += 2 + max(n, 0)
    return struct.unpack_from(">h", frame, pos)[0] != 0


@pytest.mark.parametrize("idempotent", [False, True])
def test_real_clients_go_through_the_lane(monkeypatch: pytest.MonkeyPatch, idempotent: bool) -> None:
    """confluent-kafka's usual produce (lz4, 3 partitions), idempotent or not, is taken by the lane and
    read back whole."""
    counting = Counting(produce_lane._lane)
    monkeypatch.setattr(produce_lane, "_lane", counting)
    with MockCluster(brokers=1) as c:
        c.create_topic("t", 3)
        p = Producer({"bootstrap.servers": c.bootstrap_servers, "linger.ms": 5, "compression.type": "lz4",
                      "acks": "all", "enable.idempotence": idempotent})
        for i in range(3000):
            p.produce("t", key=str(i).encode(), value=b"v%d" % i, partition=i % 3)
        assert p.flush(30) == 0
        journaled = c.journal.entries(api="Produce")
        assert journaled and all(e.outcome == "answered" and not e.errors for e in journaled)
        consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "g", "enable.auto.commit": False})
        consumer.assign([TopicPartition("t", i, 0) for i in range(3)])
        seen = set()
        deadline = time.time() + 30
        while len(seen) < 3000 and time.time() < deadline:
            for msg in consumer.consume(500, 1.0):
                assert msg.error() is None
                seen.add(int(msg.value()[1:]))
        consumer.close()
        stored = [b.producer_id for log in c.state.topics["t"].partitions for b in log.batches]
    assert seen == set(range(3000))
    assert counting.taken == len(journaled)
    assert all((pid >= 0) == idempotent for pid in stored)


def _bare_broker() -> Any:
    """A BrokerServer (not listening) over a fresh two-broker cluster state with the test's topics."""
    from mockbroker.server.broker import BrokerServer
    from mockbroker.state.cluster import ClusterState

    state = ClusterState({}, ManualClock(NOW))
    for node in range(2):
        state.add_broker(node, "127.0.0.1", 19092 + node)
    for name, config in TOPICS.items():
        state.create_topic(name, 4, 1, config)
    return BrokerServer(state, 0, "127.0.0.1", 19092)


def _damaged(rng: random.Random, frame: bytes) -> bytes:
    """``frame`` (without its size prefix) with a few bytes after the api key and version changed,
    cut short, grown or with a length field made to lie."""
    out = bytearray(frame)
    kind = rng.randrange(4)
    if kind == 0:
        for _ in range(rng.randint(1, 3)):
            out[rng.randrange(4, len(out))] = rng.randrange(256)
    elif kind == 1:
        del out[rng.randrange(4, len(out)):]
    elif kind == 2:
        at = rng.randrange(4, len(out) + 1)
        out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    else:
        at = rng.randrange(4, max(len(out) - 4, 5))
        out[at:at + 4] = rng.choice([b"\xff" * 4, b"\x7f\xff\xff\xff", b"\x00" * 4, b"\x00\x00\x01\x00"])
    return bytes(out)


class _Written:
    """A transport that keeps what is written to it."""

    def __init__(self) -> None:
        self.out = bytearray()

    def write(self, data: Any) -> None:
        self.out += data


def _outcome(broker: Any, frame: bytes, borrow: str = "") -> Any:
    """What dispatch answers (or the connection closing); ``borrow``: first handed to the C borrow(),
    "staging": from the connection's staging buffer, which is scribbled over afterwards (a view the
    lane kept would show); "whole": as a large frame read into its own buffer is."""
    from mockbroker.server.connection import CloseConnection, Connection

    staging = bytearray(1 << 17)
    conn = Connection(0, lambda c, f: None, 1 << 20, memoryview(staging))
    conn.peer = "127.0.0.1:1"
    if borrow == "whole":
        conn.transport = written = _Written()  # type: ignore[assignment]
        own = memoryview(bytearray(frame))
        done = produce_lane.borrow_function()(broker, conn, 0, own)
        conn.transport = None
        if done == 1:
            return bytes(written.out)
        assert done in (0, -1) and not written.out, done
        if done == -1:
            conn.lane_declined = own
    if borrow == "staging" and len(frame) + 4 <= len(staging):
        staging[:len(frame) + 4] = struct.pack(">i", len(frame)) + frame
        conn.transport = written = _Written()  # type: ignore[assignment]
        done = produce_lane.borrow_function()(broker, conn, len(frame) + 4)
        staging[:] = bytes(len(staging))
        conn.transport = None
        if done == len(frame) + 4:
            return bytes(written.out)
        assert done in (0, ~0) and not written.out, done
        if done == ~0:
            conn.lane_declined = memoryview(frame)
    try:
        result = dispatch.dispatch(broker, conn, conn.lane_declined or memoryview(frame))
    except CloseConnection as exc:
        return ("closed", str(exc))
    assert result is None or isinstance(result, list), result
    return None if result is None else b"".join(bytes(b) for b in result)


def test_lane_and_handler_agree_on_damaged_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    """Damaged frames (bytes changed, cut, grown, lengths that lie) get the same answer, or the same
    closed connection, with the lane as without it, and leave the same state behind: the lane's C
    reader gives up on anything the handler would refuse or name."""
    monkeypatch.setattr(warm_up, "pending", False)  # dispatch is called outside an event loop here
    counting = Counting(produce_lane._lane)
    monkeypatch.setattr(produce_lane, "_lane", counting)
    rng = random.Random(5)
    lane, handler = _bare_broker(), _bare_broker()
    led_here = {name: [log.index for log in topic.partitions if log.leader == 0]
                for name, topic in lane.cluster.topics.items()}
    frames = []
    for _ in range(60):
        version = rng.randint(3, 12)
        frames.append(api.to_bytes(api.encode_request(
            0, version, 1, _clean_request(rng, version), "lane-test"))[4:])
        frames.append(_request(rng, version, NOW, led_here, {})[4:])
    for i in range(3000):
        frame = _damaged(rng, rng.choice(frames)) if i % 10 else rng.choice(frames)
        _set_lane(monkeypatch, True)
        got_lane = _outcome(lane, frame, borrow=("staging", "", "whole", "")[i % 4])
        _set_lane(monkeypatch, False)
        got_handler = _outcome(handler, frame)
        assert got_lane == got_handler, f"frame {i}: {frame.hex()}"
    _set_lane(monkeypatch, True)
    assert _stored_state(lane.cluster) == _stored_state(handler.cluster)
    assert counting.taken >= 200, counting.taken
    assert counting.borrowed >= 100, counting.borrowed


def _clean_request(rng: random.Random, version: int) -> Any:
    """A request the lane takes: the plain topic, partitions led here, good uncompressed batches."""
    m = api.request_module(0)
    parts = [m.PartitionProduceData(index=rng.choice([0, 2]), records=rec.build_batch(
        [(b"k", b"v" * rng.randint(0, 50), [], NOW)] * rng.randint(1, 4), base_timestamp=NOW))
        for _ in range(rng.randint(1, 2))]
    return m.ProduceRequest(acks=1, timeout_ms=1000, topic_data=[m.TopicProduceData(name="plain",
                                                                                   partition_data=parts)])
