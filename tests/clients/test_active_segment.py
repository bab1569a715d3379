"""Compaction and retention only where Kafka has them: on segments below the active one, which rolls at
``segment.bytes`` or ``segment.ms`` (broker ``log.segment.bytes``, ``log.roll.ms`` / ``log.roll.hours``)
after its first record (mockbroker.state.segments).  A real confluent-kafka producer writes, the cleaner
and retention run as the broker's tick runs them (or as MockCluster.run_log_cleaner forces a pass), and
a real consumer reads what is left."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

from mockbroker.cluster import MockCluster
from tests.clients.test_configs_clients import consume_all

pytestmark = pytest.mark.clients


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    # the tick's own passes are an hour apart: each test runs them itself, when it means to
    with MockCluster(config={"log.cleaner.backoff.ms": 3_600_000, "log.retention.check.interval.ms": 3_600_000}) as c:
        yield c


def send(cluster: MockCluster, topic: str, items: list[tuple[bytes, bytes, int | None]]) -> None:
    """Each item its own batch (a flush after each): (key, value, timestamp or None for now)."""
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    errors: list[Any] = []
    for key, value, ts in items:
        extra = {} if ts is None else {"timestamp": ts}
        p.produce(topic, key=key, value=value, partition=0, on_delivery=lambda e, m: errors.append(e) if e else None,
                  **extra)
        assert p.flush(15) == 0
    assert not errors, errors


def read_all(cluster: MockCluster, topic: str) -> list[tuple[int, bytes]]:
    """Every record of ``topic`` (one partition) as (offset, value), read to its end."""
    return [(offset, value) for offset, _key, value in consume_all(cluster, topic, 0)]


def tick_cleaner(cluster: MockCluster) -> int:
    """One cleaner pass as the broker's tick runs it (Kafka's choice of log: its dirty ratio)."""
    return int(cluster.call(cluster.state.log_maintenance.run_cleaner).removed_records)


def rolled_then_active(base: int) -> list[tuple[bytes, bytes, int | None]]:
    """Versions 0-4 of one key a second apart (each past a 100 ms roll time: a segment each), then
    versions 5-9 within a few milliseconds of each other (all in the segment version 5 starts)."""
    return ([(b"k", b"v%d" % i, base + i * 1000) for i in range(5)]
            + [(b"k", b"v%d" % i, base + 5000 + i) for i in range(5, 10)])


def test_kafka_defaults_keep_every_version_in_the_active_segment(cluster: MockCluster) -> None:
    """The issue's case: 100 versions of one key in 100 batches on a compacted topic with Kafka's
    default segment.bytes (1 GiB) and segment.ms (7 days) all stay in the active segment."""
    cluster.create_topic("c", 1, config={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"})
    send(cluster, "c", [(b"k", b"v%d" % i, None) for i in range(100)])
    assert tick_cleaner(cluster) == 0
    assert cluster.run_log_cleaner() == 0
    assert [v for _o, v in read_all(cluster, "c")] == [b"v%d" % i for i in range(100)]


def test_small_segment_ms_compacts_every_segment_but_the_active_one(cluster: MockCluster) -> None:
    cluster.create_topic("c", 1, config={"cleanup.policy": "compact", "segment.ms": "100",
                                         "min.cleanable.dirty.ratio": "0.01"})
    send(cluster, "c", rolled_then_active(int(time.time() * 1000) - 60_000))
    assert tick_cleaner(cluster) == 4  # versions 0-3: version 4 is the newest below the active segment
    assert read_all(cluster, "c") == [(i, b"v%d" % i) for i in range(4, 10)]
    assert cluster.run_log_cleaner() == 0  # nothing more is cleanable, whatever the ratio


def test_broker_log_roll_ms_rolls_topics_without_segment_ms() -> None:
    with MockCluster(config={"log.roll.ms": 100, "log.cleaner.backoff.ms": 3_600_000}) as cluster:
        cluster.create_topic("c", 1, config={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"})
        send(cluster, "c", rolled_then_active(int(time.time() * 1000) - 60_000))
        assert tick_cleaner(cluster) == 4
        assert read_all(cluster, "c") == [(i, b"v%d" % i) for i in range(4, 10)]
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        topic = ConfigResource("topic", "c")
        entry = admin.describe_configs([topic])[topic].result(15)["segment.ms"]
        assert (entry.value, entry.source) == ("100", ConfigSource.STATIC_BROKER_CONFIG.value)


def test_retention_keeps_old_records_sharing_the_active_segment_with_new_ones(cluster: MockCluster) -> None:
    """retention.ms deletes whole segments by their newest record: an old record in the active segment
    with a new one stays (Kafka's default segment.ms); with segment.ms under the gap it is alone in a
    segment and goes."""
    now = int(time.time() * 1000)
    cluster.create_topic("kept", 1, config={"retention.ms": "60000"})
    cluster.create_topic("split", 1, config={"retention.ms": "60000", "segment.ms": "60000"})
    for topic in ("kept", "split"):
        send(cluster, topic, [(b"k", b"old", now - 120_000), (b"k", b"new", None)])
    assert cluster.run_retention() == 1
    assert read_all(cluster, "kept") == [(0, b"old"), (1, b"new")]
    assert read_all(cluster, "split") == [(1, b"new")]


def test_retention_deletes_an_expired_active_segment(cluster: MockCluster) -> None:
    cluster.create_topic("t", 1, config={"retention.ms": "60000"})
    old = int(time.time() * 1000) - 120_000
    send(cluster, "t", [(b"k", b"a", old), (b"k", b"b", old + 1)])
    assert cluster.run_retention() == 2  # Kafka rolls the expired active segment and deletes it
    assert read_all(cluster, "t") == []


def test_a_segment_ms_set_after_the_appends_does_not_roll_them_again(cluster: MockCluster) -> None:
    """Kafka decides a roll when it appends: records written under segment.ms = 7 days stay in one
    segment after segment.ms is lowered, and only later appends roll at the new value."""
    cluster.create_topic("c", 1, config={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"})
    base = int(time.time() * 1000) - 60_000
    send(cluster, "c", [(b"k", b"v%d" % i, base + i * 1000) for i in range(3)])
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = ConfigResource("topic", "c", set_config={"cleanup.policy": "compact", "segment.ms": "100",
                                                     "min.cleanable.dirty.ratio": "0.01"})
    with pytest.warns(DeprecationWarning):
        admin.alter_configs([topic])[topic].result(15)
    assert cluster.run_log_cleaner() == 0  # one segment, the active one
    send(cluster, "c", [(b"k", b"v3", base + 3000)])  # 3 s after the segment's first record: it rolls
    assert tick_cleaner(cluster) == 2
    assert read_all(cluster, "c") == [(2, b"v2"), (3, b"v3")]
