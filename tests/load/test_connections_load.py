"""1,000 concurrent client connections to one ``mockbroker serve`` broker.

All 1,000 connect in one burst (``socket.listen.backlog.size``, mock default 1024, queues them),
then each does ApiVersions v3, Metadata v12, Produce v9 (one record, acks=1) and Fetch v12 of that
record, concurrently, on raw asyncio sockets with the project's codec; every answer is checked.
Meanwhile a confluent-kafka producer and consumer keep working on another topic. The broker's
RSS per open connection is printed (and bounded).
"""

from __future__ import annotations

import asyncio
import resource
import struct
import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from mockbroker import records as rec
from mockbroker.protocol import api
from tests.load.broker_process import BrokerProcess

pytestmark = [pytest.mark.slow, pytest.mark.clients]

CONNECTIONS = 1000
PARTITIONS = 8
KiB = 1024


def _raise_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft != resource.RLIM_INFINITY and soft < needed:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} is below the {needed} descriptors this test needs")


def _soft_limit_of(pid: int) -> int:
    for line in open(f"/proc/{pid}/limits").read().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3]) if line.split()[3].isdigit() else 2**31
    raise AssertionError(f"no open files limit for {pid}")


class RawClient:
    """One connection speaking Kafka with the project's codec (one request in flight)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        self.reader, self.writer, self.n = reader, writer, n
        self.correlation_id = 0

    async def call(self, key: int, version: int, body: Any) -> Any:
        self.correlation_id += 1
        frame = api.encode_request(key, version, self.correlation_id, body, f"load-{self.n}")
        self.writer.write(api.to_bytes(frame))
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        corr, response = api.decode_response(key, version, await self.reader.readexactly(size))
        assert corr == self.correlation_id
        return response


async def _round_trip(client: RawClient, topic: str) -> None:
    n = client.n
    versions = await client.call(18, 3, api.request_module(18).ApiVersionsRequest(
        client_software_name="load", client_software_version="1"))
    assert versions.error_code == 0 and any(k.api_key == 0 for k in versions.api_keys)
    md = api.request_module(3)
    meta = await client.call(3, 12, md.MetadataRequest(topics=[md.MetadataRequestTopic(name=topic)]))
    (t,) = meta.topics
    assert t.error_code == 0 and len(t.partitions) == PARTITIONS
    partition = n % PARTITIONS
    value = b"connection-%d" % n
    pm = api.request_module(0)
    produced = await client.call(0, 9, pm.ProduceRequest(acks=1, timeout_ms=10000, topic_data=[
        pm.TopicProduceData(name=topic, partition_data=[
            pm.PartitionProduceData(index=partition, records=rec.build_batch([(b"k%d" % n, value)]))])]))
    answer = produced.responses[0].partition_responses[0]
    assert answer.error_code == 0, answer
    fm = api.request_module(1)
    fetched = await client.call(1, 12, fm.FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, session_id=0, session_epoch=-1,
        topics=[fm.FetchTopic(topic=topic, partitions=[fm.FetchPartition(
            partition=partition, fetch_offset=answer.base_offset, partition_max_bytes=1 << 16)])]))
    part = fetched.responses[0].partitions[0]
    assert part.error_code == 0, part
    header, records = rec.decode_batch(bytes(part.records)[: 12 + struct.unpack(">i", part.records[8:12])[0]])
    got = {header.base_offset + r.offset_delta: bytes(r.value) for r in records}
    assert got[answer.base_offset] == value


async def _load(port: int, rss: Any) -> tuple[float, int, int]:
    start = time.monotonic()
    opened = await asyncio.gather(*(asyncio.open_connection("127.0.0.1", port) for _ in range(CONNECTIONS)))
    clients = [RawClient(r, w, n) for n, (r, w) in enumerate(opened)]
    connected = time.monotonic() - start
    await asyncio.wait_for(asyncio.gather(*(_round_trip(c, "load") for c in clients)), 120)
    elapsed = time.monotonic() - start
    rss_open = rss()
    for c in clients:
        c.writer.close()
    await asyncio.gather(*(c.writer.wait_closed() for c in clients), return_exceptions=True)
    return connected, elapsed, rss_open


class Bystander:
    """A confluent-kafka producer and consumer working on their own topic during the burst."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.stop = threading.Event()
        self.sent = self.delivered = 0
        self.received: set[bytes] = set()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 1, "enable.idempotence": True})
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "bystander",
                             "auto.offset.reset": "earliest"})
        consumer.subscribe(["bystander"])

        def delivered(err: Any, _msg: Any) -> None:
            if err is None:
                self.delivered += 1

        while not self.stop.is_set():
            producer.produce("bystander", value=b"b-%d" % self.sent, on_delivery=delivered)
            self.sent += 1
            producer.poll(0)
            msg = consumer.poll(0.02)
            if msg is not None and not msg.error():
                self.received.add(msg.value())
        assert producer.flush(30) == 0
        deadline = time.monotonic() + 30
        while len(self.received) < self.sent and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                self.received.add(msg.value())
        consumer.close()


def test_a_thousand_concurrent_connections_are_all_answered() -> None:
    _raise_fd_limit(CONNECTIONS * 2 + 256)  # the hard limit must allow it; the broker lifts its soft one
    with BrokerProcess("--brokers", "1", "--topic", f"load:{PARTITIONS}", "--topic", "bystander:2",
                       open_files=256) as broker:  # a low soft limit: `mockbroker serve` raises it
        assert _soft_limit_of(broker.pid) >= CONNECTIONS + 64
        time.sleep(0.5)
        rss_before = broker.rss()
        bystander = Bystander(broker.bootstrap)
        bystander.thread.start()
        time.sleep(2)  # the bystander's connections are up before the burst
        before_burst = bystander.delivered
        connected, elapsed, rss_open = asyncio.run(_load(broker.port, broker.rss))
        time.sleep(1)
        bystander.stop.set()
        bystander.thread.join(60)
        assert broker.alive(), broker.log_tail()
        rss_after = broker.rss()
        refused = broker.log_tail(5)
    per_connection = (rss_open - rss_before) / CONNECTIONS
    print(f"\n{CONNECTIONS} connections: connected in {connected:.2f} s, all round trips done in {elapsed:.2f} s; "
          f"broker RSS {rss_before / KiB / KiB:.1f} MiB before, {rss_open / KiB / KiB:.1f} MiB with all open "
          f"({per_connection / KiB:.1f} KiB per connection), {rss_after / KiB / KiB:.1f} MiB after closing; "
          f"bystander: {bystander.delivered} of {bystander.sent} delivered, {len(bystander.received)} read back")
    assert bystander.delivered == bystander.sent and bystander.delivered > before_burst, refused
    assert len(bystander.received) == bystander.sent
    assert per_connection < 64 * KiB, "the broker's memory per connection is out of bounds"
