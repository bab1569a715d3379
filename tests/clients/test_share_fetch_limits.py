"""A ShareConsumer's size limits (confluent-kafka 2.16, ShareFetch v1), answered as Kafka answers them:
fetch.max.bytes bounds each ShareFetch's batches (the first batch comes whole even when larger), 0 is refused
for every partition (UNKNOWN_SERVER_ERROR, Kafka's message), and a small and a large record never come in one
answer over the client's receive.message.max.bytes."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer, ShareConsumer

from mockbroker.cluster import MockCluster
from tests.clients.test_share_groups import running, set_group_config

pytestmark = pytest.mark.clients


def produce_each(cluster: MockCluster, sizes: list[int]) -> list[int]:
    """One record a batch (flushed one by one), each value ``size`` bytes; the stored batches' sizes."""
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0, "message.max.bytes": 1 << 20})
    for i, size in enumerate(sizes):
        p.produce("jobs", bytes([65 + i % 26]) * size, partition=0)
        assert p.flush(10) == 0
    return cluster.call(lambda: [b.size for b in cluster.state.topics["jobs"].partitions[0].batches])


def consumer(cluster: MockCluster, **conf: object) -> ShareConsumer:
    c = ShareConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g",
                       "share.acknowledgement.mode": "implicit", **conf})
    c.subscribe(["jobs"])
    return c


def polls(c: ShareConsumer, wanted: int, timeout: float = 15) -> list[list[bytes]]:
    """The values of each poll that returned records, until ``wanted`` records came."""
    got: list[list[bytes]] = []
    deadline = time.monotonic() + timeout
    while sum(map(len, got)) < wanted and time.monotonic() < deadline:
        values = [m.value() for m in c.poll(0.2) if m.error() is None]
        if values:
            got.append(values)
    return got


def test_fetch_max_bytes_bounds_each_share_fetch() -> None:
    with running(topics={"jobs": 1}) as (cluster, closing):
        set_group_config(cluster, "g", "share.auto.offset.reset", "earliest")
        sizes = produce_each(cluster, [1000] * 10)
        assert 1500 < 2 * sizes[0]  # one batch fits in fetch.max.bytes, two do not
        closing.append(c := consumer(cluster, **{"fetch.max.bytes": 1500}))
        got = polls(c, 10)
        assert [len(values) for values in got] == [1] * 10  # Kafka: one batch a ShareFetch, not all ten
        assert [values[0][:1] for values in got] == [bytes([65 + i]) for i in range(10)]


def test_fetch_max_bytes_0_is_refused_and_delivers_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    with running(topics={"jobs": 1}) as (cluster, closing):
        set_group_config(cluster, "g", "share.auto.offset.reset", "earliest")
        produce_each(cluster, [100] * 3)
        closing.append(c := consumer(cluster, **{"fetch.max.bytes": 0}))
        capfd.readouterr()
        seen: list[object] = []
        told = ""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until half a second after the refusal reached the client
            seen += [m for m in c.poll(0.1) if m.error() is None]
            told += capfd.readouterr().err
            if "Request max bytes must be greater than 0" in told:  # (librdkafka logs the partition error)
                deadline = min(deadline, time.monotonic() + 0.5)  # (it asks again at once, as against Kafka)
        assert "Request max bytes must be greater than 0" in told
        assert seen == []
        assert cluster.call(lambda: cluster.state.share.partitions.get(("g", "jobs", 0)).state()["records"]) == []


def test_small_then_large_record_both_delivered_within_receive_message_max_bytes(
        capfd: pytest.CaptureFixture[str]) -> None:
    with running(topics={"jobs": 1}) as (cluster, closing):
        set_group_config(cluster, "g", "share.auto.offset.reset", "earliest")
        small, large = produce_each(cluster, [1024, 200 * 1024])
        receive_max = large + 600  # room for the large batch's answer, not for both batches in one
        closing.append(c := consumer(cluster, **{"receive.message.max.bytes": receive_max,
                                                 "fetch.max.bytes": receive_max - 512}))
        got = polls(c, 2)
        assert [[len(v) for v in values] for values in got] == [[1024], [200 * 1024]]
        assert "receive.message.max.bytes" not in capfd.readouterr().err and small + large > receive_max
