"""The loads `make bench` runs against every broker; each returns plain numbers for one repetition.

Client loads use confluent-kafka (librdkafka) or aiokafka as a user would.  Loads that measure the
broker alone (raw fetch throughput, Metadata for 10k partitions, start time, idle connections) speak
the wire protocol over a plain socket with mockbroker's codec, so no client parsing hides the
broker's own time.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition

from bench.peers import Peer, wait_port
from mockbroker.protocol import api

MiB = 1024 * 1024


# -- raw wire helpers ------------------------------------------------------------------------------
def raw_request(sock: socket.socket, api_key: int, version: int, body: Any, buf: bytearray | None = None) -> int:
    """Send one request and read its whole answer; return the answer's size in bytes."""
    sock.sendall(api.to_bytes(api.encode_request(api_key, version, 1, body)))
    head = _recv_exact(sock, 4)
    size = struct.unpack(">i", head)[0]
    if buf is None or len(buf) < size:
        buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:size])
        if not n:
            raise ConnectionError("broker closed the connection mid-answer")
        got += n
    return size


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        out += chunk
    return out


def connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def metadata_all() -> Any:
    m = api.request_module(3)
    return m.MetadataRequest(topics=None, allow_auto_topic_creation=False)


# -- confluent-kafka produce then consume -----------------------------------------------------------
# Records per batch of the topics consume loads read.  How a producer batches depends on how fast the
# broker acknowledges (librdkafka sends ~8,000-record batches to the slow-to-ack C mock and ~1,500 to
# mockbroker under the same load), and fewer, larger batches are quicker to consume: so every broker's
# consumers read the same layout, written beforehand, not what the timed produce happened to make.
CONSUME_BATCH = 5000


def produce_consume(peer: Peer, topic: str, records: int, size: int, partitions: int,
                    compression: str = "none") -> tuple[float, float]:
    """Produce ``records`` x ``size`` B round-robin (acks=1, linger 5 ms); then read back with assign()
    the same records written in CONSUME_BATCH-record batches.  Both topics are made first, before the
    "setup" mark: the peers make topics in different ways (an admin request, a helper's call), which is
    not the work the phases measure."""
    peer.create_topic(topic, partitions)
    peer.create_topic(f"{topic}-read", partitions)
    peer.phase_done("setup")
    produce_s = _produce(peer, topic, records, size, partitions,
                         {"acks": 1, "linger.ms": 5, "compression.type": compression})
    peer.phase_done("produce")
    fill_identical(peer, f"{topic}-read", records, size, partitions, compression)
    peer.phase_done("fill")
    consume_s = _consume(peer, f"{topic}-read", records, partitions)
    peer.phase_done("consume")
    return produce_s, consume_s


def consume_again(peer: Peer, topic: str, records: int, partitions: int) -> float:
    """Seconds to read what :func:`produce_consume` for ``topic`` filled, once more (a fresh consumer)."""
    return _consume(peer, f"{topic}-read", records, partitions)


def fill_identical(peer: Peer, topic: str, records: int, size: int, partitions: int,
                   compression: str = "none") -> None:
    """``records`` in batches of CONSUME_BATCH per partition (a long linger fills each batch), untimed;
    the topic is made here unless it was made before."""
    if topic not in peer.created:
        peer.create_topic(topic, partitions)
    _produce(peer, topic, records, size, partitions,
             {"acks": 1, "linger.ms": 10_000, "batch.num.messages": CONSUME_BATCH, "batch.size": 64 * MiB,
              "queue.buffering.max.messages": max(records, 100_000) * 2, "compression.type": compression})


def _produce(peer: Peer, topic: str, records: int, size: int | bytes, partitions: int, conf: dict[str, Any]) -> float:
    """Seconds to produce ``records`` values (``size`` bytes of x, or the bytes given) round-robin and flush."""
    value = size if isinstance(size, bytes) else b"x" * size
    producer = Producer({"bootstrap.servers": peer.bootstrap, **conf})
    producer.list_topics(topic, timeout=10)
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.005)
    if producer.flush(120) != 0:
        raise RuntimeError(f"{peer.name}: produce did not finish")
    return time.perf_counter() - start


def _consume(peer: Peer, topic: str, records: int, partitions: int) -> float:
    # queued.min.messages above the load: librdkafka otherwise pauses fetching for fetch.queue.backoff.ms
    # (1 s) whenever the app falls behind, which measures the Python loop, not the broker
    consumer = Consumer({"bootstrap.servers": peer.bootstrap, "group.id": "bench", "enable.auto.commit": False,
                         "queued.min.messages": max(records, 100_000) * 2})
    start = time.perf_counter()
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = _drain(consumer, records)
    consume_s = time.perf_counter() - start
    consumer.close()
    if got != records:
        raise RuntimeError(f"{peer.name}: consumed {got} of {records}")
    return consume_s


def _drain(consumer: Consumer, records: int, timeout_s: float = 120) -> int:
    got = 0
    deadline = time.monotonic() + timeout_s
    while got < records and time.monotonic() < deadline:
        for m in consumer.consume(min(10_000, records - got), 0.5):
            if m.error() is None:
                got += 1
    return got


# -- aiokafka --------------------------------------------------------------------------------------
def aiokafka_produce_consume(peer: Peer, topic: str, records: int, size: int, partitions: int) -> tuple[float, float]:
    """As :func:`produce_consume`, with aiokafka (its consumer reads the same identical-layout topic)."""
    peer.create_topic(topic, partitions)
    peer.create_topic(f"{topic}-read", partitions)
    peer.phase_done("setup")
    fill_identical(peer, f"{topic}-read", records, size, partitions)
    peer.phase_done("fill")
    return asyncio.run(_aiokafka(peer, topic, records, size, partitions))


async def _aiokafka(peer: Peer, topic: str, records: int, size: int, partitions: int) -> tuple[float, float]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka import TopicPartition as AioTP

    value = b"x" * size
    producer = AIOKafkaProducer(bootstrap_servers=peer.bootstrap, acks=1, linger_ms=5)
    await producer.start()
    try:
        start = time.perf_counter()
        futures = [await producer.send(topic, value, partition=i % partitions) for i in range(records)]
        await producer.flush()
        await asyncio.gather(*futures)
        produce_s = time.perf_counter() - start
    finally:
        await producer.stop()
    peer.phase_done("produce")
    consumer = AIOKafkaConsumer(bootstrap_servers=peer.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        start = time.perf_counter()
        tps = [AioTP(f"{topic}-read", p) for p in range(partitions)]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, 0)
        got = 0
        deadline = time.monotonic() + 120
        while got < records and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500, max_records=10_000)
            got += sum(len(msgs) for msgs in batches.values())
        consume_s = time.perf_counter() - start
    finally:
        await consumer.stop()
    peer.phase_done("consume")
    if got != records:
        raise RuntimeError(f"{peer.name}: aiokafka consumed {got} of {records}")
    return produce_s, consume_s


# -- 1 MiB messages --------------------------------------------------------------------------------
def large_messages(peer: Peer, topic: str, count: int = 256, partitions: int = 64) -> tuple[float, float, float]:
    """MB/s producing and consuming ``count`` 1 MiB messages (4 per partition: the mock keeps 5 MiB), and
    GB/s of raw Fetch answers for all partitions from offset 0 (the broker's serving speed alone)."""
    peer.create_topic(topic, partitions)
    peer.phase_done("setup")
    value = bytes(range(256)) * (MiB // 256)
    producer = Producer({"bootstrap.servers": peer.bootstrap, "acks": 1, "linger.ms": 5,
                         "message.max.bytes": 4 * MiB, "queue.buffering.max.kbytes": 1024 * 1024})
    producer.list_topics(topic, timeout=10)
    start = time.perf_counter()
    for i in range(count):
        producer.produce(topic, value, partition=i % partitions)
        producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError(f"{peer.name}: produce did not finish")
    produce_mbs = count / (time.perf_counter() - start)
    consumer = Consumer({"bootstrap.servers": peer.bootstrap, "group.id": "bench", "enable.auto.commit": False,
                         "fetch.message.max.bytes": 4 * MiB})
    start = time.perf_counter()
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = _drain(consumer, count)
    consume_mbs = count / (time.perf_counter() - start)
    consumer.close()
    if got != count:
        raise RuntimeError(f"{peer.name}: consumed {got} of {count} large messages")
    return produce_mbs, consume_mbs, raw_fetch_gbs(peer, topic, partitions)


def raw_fetch_gbs(peer: Peer, topic: str, partitions: int, rounds: int = 8) -> float:
    m = api.request_module(1)
    # min_bytes 1 with a wait: Tansu 0.6 answers nothing at all to max_wait_ms=0
    body = m.FetchRequest(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=1 << 30, isolation_level=0,
                          session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                          topics=[m.FetchTopic(topic=topic, partitions=[
                              m.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=16 * MiB,
                                               current_leader_epoch=-1, log_start_offset=-1)
                              for p in range(partitions)])])
    with connect(peer.bootstrap) as sock:
        buf = bytearray(512 * MiB)
        raw_request(sock, 1, 11, body, buf)  # warm up
        total = 0
        start = time.perf_counter()
        for _ in range(rounds):
            total += raw_request(sock, 1, 11, body, buf)
        elapsed = time.perf_counter() - start
    if total < rounds * MiB:
        raise RuntimeError(f"{peer.name}: raw fetch answers carried only {total} bytes")
    return total / elapsed / 1e9


# -- latency ----------------------------------------------------------------------------------------
def produce_latency(peer: Peer, topic: str, rate: int = 1000, seconds: float = 2.0) -> tuple[float, float]:
    """p50 and p99 ms from produce() to delivery report, acks=all, one record per 1/rate s."""
    peer.create_topic(topic, 4)
    peer.phase_done("setup")
    latencies: list[float] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            latencies.append(msg.latency() * 1000)

    producer = Producer({"bootstrap.servers": peer.bootstrap, "acks": "all", "linger.ms": 0})
    producer.list_topics(topic, timeout=10)
    total = int(rate * seconds)
    start = time.perf_counter()
    for i in range(total):
        due = start + i / rate
        while (now := time.perf_counter()) < due:
            producer.poll(min(due - now, 0.0005))
        producer.produce(topic, b"x" * 100, partition=i % 4, on_delivery=delivered)
        producer.poll(0)
    producer.flush(30)
    if len(latencies) != total:
        raise RuntimeError(f"{peer.name}: {len(latencies)} of {total} deliveries")
    latencies.sort()
    return latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)]


def follow_latency(peer: Peer, topic: str, rate: int = 1000, seconds: float = 2.0) -> tuple[float, float]:
    """p50 and p99 ms from produce() to a consumer following the topic receiving the record: one
    confluent-kafka consumer assigned at the end of 4 partitions (long polls of fetch.wait.max.ms,
    500 ms) while a producer sends one record per 1/rate s (acks=1, linger 0), as in a test that
    produces and waits for its consumer.  The record carries its send time."""
    peer.create_topic(topic, 4)
    peer.phase_done("setup")
    consumer = Consumer({"bootstrap.servers": peer.bootstrap, "group.id": "follow", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, OFFSET_END) for p in range(4)])
    latencies: list[float] = []
    total = int(rate * seconds)

    def follow() -> None:
        deadline = time.monotonic() + seconds + 30
        while len(latencies) < total and time.monotonic() < deadline:
            m = consumer.poll(0.05)
            if m is not None and m.error() is None:
                latencies.append((time.perf_counter() - _SENT.unpack_from(m.value())[0]) * 1000)

    consumer.poll(0.5)  # connected, and long-polling at the end of every partition
    time.sleep(0.5)
    reader = threading.Thread(target=follow)
    reader.start()
    producer = Producer({"bootstrap.servers": peer.bootstrap, "acks": 1, "linger.ms": 0})
    producer.list_topics(topic, timeout=10)
    padding = b"x" * (100 - _SENT.size)
    start = time.perf_counter()
    for i in range(total):
        due = start + i / rate
        while (now := time.perf_counter()) < due:
            producer.poll(min(due - now, 0.0005))
        producer.produce(topic, _SENT.pack(time.perf_counter()) + padding, partition=i % 4)
        producer.poll(0)
    producer.flush(30)
    reader.join()
    consumer.close()
    if len(latencies) != total:
        raise RuntimeError(f"{peer.name}: the consumer received {len(latencies)} of {total} records")
    latencies.sort()
    return latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)]


_SENT = struct.Struct(">d")  # follow_latency's send time at the start of each record


# -- start, join, metadata, memory -------------------------------------------------------------------
def start_to_metadata(start: Callable[[], Peer]) -> float:
    """ms from launching the broker process to its first Metadata answer."""
    began = time.perf_counter()
    peer = start()
    try:
        wait_port(int(peer.bootstrap.rsplit(":", 1)[1]))
        with connect(peer.bootstrap) as sock:
            raw_request(sock, 3, 1, metadata_all())
        return (time.perf_counter() - began) * 1000
    finally:
        peer.stop()


def group_join(peer: Peer, topic: str, members: int) -> float:
    """s from subscribe() to every member holding part of a full assignment (classic protocol)."""
    peer.create_topic(topic, 4)
    conf = {"bootstrap.servers": peer.bootstrap, "group.id": f"join-{topic}", "session.timeout.ms": 10000}
    consumers = [Consumer(conf) for _ in range(members)]
    try:
        start = time.perf_counter()
        for c in consumers:
            c.subscribe([topic])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for c in consumers:
                c.poll(0.01)
            owned = [len(c.assignment()) for c in consumers]
            if all(owned) and sum(owned) == 4:
                return time.perf_counter() - start
        raise RuntimeError(f"{peer.name}: no full assignment within 60 s ({owned})")
    finally:
        for c in consumers:
            c.close()


def make_partitions(peer: Peer, prefix: str, topics: int = 100, partitions: int = 100) -> None:
    for i in range(topics):
        peer.create(f"{prefix}-{i:03}", partitions)


def metadata_ms(peer: Peer, rounds: int = 20) -> tuple[float, int]:
    """Median ms for a Metadata request naming no topics (all of them), and the answer's size."""
    times = []
    size = 0
    with connect(peer.bootstrap) as sock:
        raw_request(sock, 3, 9, metadata_all())
        for _ in range(rounds):
            start = time.perf_counter()
            size = raw_request(sock, 3, 9, metadata_all())
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return times[len(times) // 2], size


def client_connections(peer: Peer, topic: str, count: int = 1000) -> float:
    """Microseconds per short-lived client, one after another: connect, ApiVersions v3, Metadata v12
    naming one topic, close (the first requests of every producer, consumer and admin client; a test
    suite makes one per test).  Raw sockets with the requests encoded once, so the broker's work, not a
    client library's, is what takes the time."""
    peer.create_topic(topic, 4)
    m18, m3 = api.request_module(18), api.request_module(3)
    hello = api.to_bytes(api.encode_request(18, 3, 1, m18.ApiVersionsRequest(
        client_software_name="bench", client_software_version="1"), "bench"))
    ask = api.to_bytes(api.encode_request(3, 12, 2, m3.MetadataRequest(
        topics=[m3.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False), "bench"))

    def one() -> None:
        with connect(peer.bootstrap) as sock:
            for frame in (hello, ask):
                sock.sendall(frame)
                _recv_exact(sock, struct.unpack(">i", _recv_exact(sock, 4))[0])

    for _ in range(20):  # the first connections' answers (made, then kept) are not what a suite sees
        one()
    peer.phase_done("setup")
    start = time.perf_counter()
    for _ in range(count):
        one()
    spent = time.perf_counter() - start
    peer.phase_done("clients")
    return spent / count * 1e6


def rss_per_stored_mb(peer: Peer, topic: str, mib: int = 192, partitions: int = 64) -> tuple[float, float]:
    """(RSS growth / stored MiB, RSS MiB after) producing ``mib`` MiB of 1 KiB records (3 MiB a partition)."""
    peer.create_topic(topic, partitions)
    before = peer.rss_bytes()
    _produce(peer, topic, mib * 1024, bytes(range(256)) * 4, partitions, {"acks": 1, "linger.ms": 5})
    time.sleep(0.5)
    after = peer.rss_bytes()
    return (after - before) / (mib * MiB), after / MiB


def rss_per_connection(peer: Peer, connections: int = 1000) -> float:
    """KiB of broker RSS per idle connection (each has sent one ApiVersions request): the growth while
    the second half of ``connections`` opens.  Over all of them, what the process had freed before
    (heap its start-up left, which the first connections reuse) moved the figure: one change to the
    start took 0.24 KiB "per connection" that was 240 KB once, the same at 500, 1,000 and 2,000."""
    socks = []
    m = api.request_module(18)

    def open_more(count: int) -> None:
        for _ in range(count):
            sock = connect(peer.bootstrap)
            raw_request(sock, 18, 0, m.ApiVersionsRequest())
            socks.append(sock)
        time.sleep(0.5)

    measured = max(connections // 2, 1)
    try:
        open_more(connections - measured)
        half = peer.rss_bytes()
        open_more(measured)
        after = peer.rss_bytes()
    finally:
        for sock in socks:
            sock.close()
    return (after - half) / measured / 1024

