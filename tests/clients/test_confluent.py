"""confluent-kafka (librdkafka) produces and consumes through mockbroker, byte for byte."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from mockbroker.cluster import MockCluster

from .workload import PARTITIONS, Rec, check_consumed, workload

pytestmark = pytest.mark.clients
COUNT = 10_000


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as c:
        yield c


def produce(bootstrap: str, topic: str, recs: list[Rec], **conf: str) -> list[tuple[int, int]]:
    errors: list[str] = []
    acked: list[tuple[int, int]] = []

    def report(err, msg) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            acked.append((msg.partition(), msg.offset()))

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    for r in recs:
        producer.produce(topic, key=r.key, value=r.value, headers=list(r.headers), partition=r.partition,
                         timestamp=r.timestamp, on_delivery=report)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not errors, errors[:3]
    return acked


def consume(bootstrap: str, topic: str, count: int) -> dict[int, list[tuple[int, Rec]]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "test", "enable.auto.commit": False,
                         "enable.partition.eof": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got: dict[int, list[tuple[int, Rec]]] = {}
    seen = 0
    deadline = time.monotonic() + 30
    try:
        while seen < count and time.monotonic() < deadline:
            for m in consumer.consume(1000, 0.5):
                assert m.error() is None, m.error()
                headers = tuple((k, v) for k, v in (m.headers() or []))
                got.setdefault(m.partition(), []).append(
                    (m.offset(), Rec(m.partition(), m.key(), m.value(), headers, m.timestamp()[1])))
                seen += 1
    finally:
        consumer.close()
    assert seen == count, f"consumed {seen} of {count}"
    return got


@pytest.mark.parametrize("acks", ["0", "1", "all"])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume_every_codec_and_acks(cluster: MockCluster, codec: str, acks: str) -> None:
    topic = f"cf-{codec}-{acks}"
    cluster.create_topic(topic, PARTITIONS)
    recs = workload(COUNT)
    acked = produce(cluster.bootstrap_servers, topic, recs, **{"compression.type": codec, "acks": acks})
    if acks != "0":
        per_partition: dict[int, list[int]] = {}
        for p, o in acked:
            per_partition.setdefault(p, []).append(o)
        assert all(sorted(v) == list(range(len(v))) for v in per_partition.values())
    check_consumed(recs, consume(cluster.bootstrap_servers, topic, COUNT))
