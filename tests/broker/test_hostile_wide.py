"""One request naming 10,000 partitions (Produce, Fetch, ListOffsets, Metadata): answered correctly
and promptly (each under 3 s here; about 0.1-0.4 s on a quiet machine) while a well-behaved client
on another connection keeps its round trips under 3 s.

Kafka answers such requests in full (there is no per-request partition limit; only the byte limits
``socket.request.max.bytes`` and ``fetch.max.bytes`` apply).  These are valid requests, so the
broker logs nothing special for them.  Real clients: confluent-kafka produces one record to each of
the 10k partitions (librdkafka packs them into a few wide Produce requests) and a consumer assigned
all of them reads every record back.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from mockbroker import records as rec
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api

from .hostile import Harness, harness
from .wire import WireClient

N = 10_000
BUDGET_S = 3.0
P, F, L, M = (api.request_module(k) for k in (0, 1, 2, 3))


@pytest.fixture
def h(caplog: pytest.LogCaptureFixture) -> Iterator[Harness]:
    with harness(caplog, topics={"wide": N}) as got:
        yield got


def _timed(h: Harness, key: int, version: int, body: Any) -> Any:
    mark = h.bystander.rounds
    with WireClient(h.port, timeout=30) as c:
        start = time.monotonic()
        resp = c.call(key, version, body)
        took = time.monotonic() - start
    assert took < BUDGET_S, f"{api.api_name(key)} v{version} naming {N} partitions took {took:.2f}s"
    h.bystander.assert_progress(mark, max_latency_s=BUDGET_S)
    return resp


def _produce_all(h: Harness, version: int = 9) -> None:
    batch = rec.build_batch([(b"k", b"v")])
    resp = _timed(h, 0, version, P.ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[P.TopicProduceData(
        name="wide", partition_data=[P.PartitionProduceData(index=i, records=batch) for i in range(N)])]))
    parts = resp.responses[0].partition_responses
    assert sorted(p.index for p in parts) == list(range(N))
    assert {(p.error_code, p.base_offset) for p in parts} == {(0, 0)}


def test_produce_naming_10k_partitions(h: Harness) -> None:
    _produce_all(h)
    assert all(h.cluster.state.partition("wide", i).next_offset == 1 for i in range(0, N, 997))


def test_fetch_naming_10k_partitions(h: Harness) -> None:
    _produce_all(h)
    resp = _timed(h, 1, 12, F.FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=50 << 20, session_id=0, session_epoch=-1,
        topics=[F.FetchTopic(topic="wide", partitions=[
            F.FetchPartition(partition=i, fetch_offset=0, partition_max_bytes=1 << 20, current_leader_epoch=-1)
            for i in range(N)])]))
    parts = resp.responses[0].partitions
    assert len(parts) == N and {(p.error_code, p.high_watermark) for p in parts} == {(0, 1)}
    assert all(rec.records_summary(p.records) == (2, 1, 0, 0) for p in parts[::500])  # magic, count, offsets


def test_list_offsets_naming_10k_partitions(h: Harness) -> None:
    _produce_all(h)
    resp = _timed(h, 2, 7, L.ListOffsetsRequest(replica_id=-1, topics=[L.ListOffsetsTopic(
        name="wide", partitions=[L.ListOffsetsPartition(partition_index=i, timestamp=-1) for i in range(N)])]))
    parts = resp.topics[0].partitions
    assert len(parts) == N and {(p.error_code, p.offset) for p in parts} == {(0, 1)}


def test_metadata_naming_10k_topics_and_a_10k_partition_topic(h: Harness) -> None:
    unknown = _timed(h, 3, 12, M.MetadataRequest(
        topics=[M.MetadataRequestTopic(name=f"nope-{i}") for i in range(N)], allow_auto_topic_creation=False))
    assert len(unknown.topics) == N
    assert {t.error_code for t in unknown.topics} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    wide = _timed(h, 3, 12, M.MetadataRequest(topics=[M.MetadataRequestTopic(name="wide")]))
    parts = wide.topics[0].partitions
    assert sorted(p.partition_index for p in parts) == list(range(N)) and {p.leader_id for p in parts} == {0}
    assert not h.cluster.state.topics.keys() & {"nope-0", "nope-9999"}


def test_confluent_kafka_writes_and_reads_10k_partitions(h: Harness) -> None:
    bootstrap = f"127.0.0.1:{h.port}"
    mark = h.bystander.rounds
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "queue.buffering.max.messages": 2 * N})
    for i in range(N):
        producer.produce("wide", value=b"%d" % i, partition=i)
    assert producer.flush(120) == 0  # a bound, not a timing: 10k partitions took 31 s on 2 loaded cores
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "wide-reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition("wide", i, 0) for i in range(N)])
    seen: dict[int, bytes] = {}
    deadline = time.monotonic() + 120
    try:
        while len(seen) < N and time.monotonic() < deadline:
            for msg in consumer.consume(5000, timeout=0.5):
                if msg.error() is None:
                    seen[msg.partition()] = msg.value()
    finally:
        consumer.close()
    assert len(seen) == N and all(seen[i] == b"%d" % i for i in range(N))
    h.bystander.assert_progress(mark, max_latency_s=BUDGET_S)
