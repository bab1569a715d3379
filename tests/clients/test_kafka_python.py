"""kafka-python produces and consumes through mockbroker: magic 2 by default, magic 1 with
api_version=(0, 10) and magic 0 with (0, 9), and across formats with confluent-kafka."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from mockbroker.cluster import MockCluster

from .test_confluent import consume as confluent_consume
from .test_confluent import produce as confluent_produce
from .workload import PARTITIONS, Rec, check_consumed, workload

pytestmark = pytest.mark.clients
COUNT = 10_000
OLD_CODECS = ["none", "gzip", "snappy"]  # what magic 0 can carry; magic 1 adds lz4


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as c:
        yield c


def kp_produce(bootstrap: str, topic: str, recs: list[Rec], api_version: tuple | None, codec: str,
               acks: int | str = 1) -> None:
    extra = {"api_version": api_version} if api_version else {}
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks=acks,
                             compression_type=None if codec == "none" else codec, **extra)
    try:
        futures = []
        for r in recs:
            ts = r.timestamp if api_version != (0, 9) else None
            headers = list(r.headers) if api_version is None else None
            futures.append(producer.send(topic, key=r.key, value=r.value, partition=r.partition,
                                         timestamp_ms=ts, headers=headers))
        producer.flush(30)
        for f in futures:
            f.get(timeout=10)
    finally:
        producer.close(5)


def kp_consume(bootstrap: str, topic: str, count: int, api_version: tuple | None) -> dict[int, list[tuple[int, Rec]]]:
    extra = {"api_version": api_version} if api_version else {}
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None, **extra)
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    got: dict[int, list[tuple[int, Rec]]] = {}
    seen = 0
    deadline = time.monotonic() + 30
    try:
        while seen < count and time.monotonic() < deadline:
            for tp, msgs in consumer.poll(timeout_ms=500, max_records=5000).items():
                for m in msgs:
                    headers = tuple((k, v) for k, v in (m.headers or []))
                    got.setdefault(tp.partition, []).append(
                        (m.offset, Rec(tp.partition, m.key, m.value, headers, m.timestamp)))
                    seen += 1
    finally:
        consumer.close()
    assert seen == count, f"consumed {seen} of {count}"
    return got


@pytest.mark.parametrize("acks", [0, 1, "all"])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_default_client_magic_2(cluster: MockCluster, codec: str, acks: int | str) -> None:
    topic = f"kp-v2-{codec}-{acks}"
    cluster.create_topic(topic, PARTITIONS)
    recs = workload(COUNT)
    kp_produce(cluster.bootstrap_servers, topic, recs, None, codec, acks=acks)
    check_consumed(recs, kp_consume(cluster.bootstrap_servers, topic, COUNT, None))


@pytest.mark.parametrize("acks", [0, 1, "all"])
@pytest.mark.parametrize("codec", [*OLD_CODECS, "lz4"])
def test_pinned_0_10_magic_1(cluster: MockCluster, codec: str, acks: int | str) -> None:
    topic = f"kp-v1-{codec}-{acks}"
    cluster.create_topic(topic, PARTITIONS)
    recs = workload(COUNT, with_headers=False)
    kp_produce(cluster.bootstrap_servers, topic, recs, (0, 10), codec, acks=acks)
    check_consumed(recs, kp_consume(cluster.bootstrap_servers, topic, COUNT, (0, 10)))


@pytest.mark.parametrize("acks", [0, 1, "all"])
@pytest.mark.parametrize("codec", OLD_CODECS)
def test_pinned_0_9_magic_0(cluster: MockCluster, codec: str, acks: int | str) -> None:
    topic = f"kp-v0-{codec}-{acks}"
    cluster.create_topic(topic, PARTITIONS)
    recs = workload(COUNT, with_headers=False)
    kp_produce(cluster.bootstrap_servers, topic, recs, (0, 9), codec, acks=acks)
    check_consumed(recs, kp_consume(cluster.bootstrap_servers, topic, COUNT, (0, 9)), timestamps=False)


def test_magic_0_records_read_by_confluent_kafka(cluster: MockCluster) -> None:
    topic = "cross-v0-to-v2"
    cluster.create_topic(topic, PARTITIONS)
    recs = workload(2000, with_headers=False)
    kp_produce(cluster.bootstrap_servers, topic, recs, (0, 9), "gzip")
    got = confluent_consume(cluster.bootstrap_servers, topic, len(recs))
    check_consumed(recs, got, timestamps=False)
    # magic 0 has no timestamps: Kafka stores them as -1 (NO_TIMESTAMP)
    assert {rec.timestamp for recs_ in got.values() for _, rec in recs_} == {-1}


def test_confluent_records_read_by_kafka_python_pinned_to_0_9(cluster: MockCluster) -> None:
    topic = "cross-v2-to-v0"
    cluster.create_topic(topic, PARTITIONS)
    recs = workload(2000, with_headers=False)
    confluent_produce(cluster.bootstrap_servers, topic, recs, **{"compression.type": "snappy"})
    check_consumed(recs, kp_consume(cluster.bootstrap_servers, topic, len(recs), (0, 9)), timestamps=False)
