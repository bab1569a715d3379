"""The Spark data source against Tansu (a Kafka-protocol broker in Rust): the executors' own client works
with any Kafka-protocol broker, not only mockbroker."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

pytestmark = [pytest.mark.spark, pytest.mark.clients, pytest.mark.slow]


@pytest.fixture(scope="module")
def tansu() -> Iterator[Any]:
    from bench.peers import start_tansu

    try:
        peer = start_tansu()
    except Exception as exc:  # the binary comes from a PyPI wheel: no index, no Tansu
        pytest.skip(f"Tansu is not available here ({type(exc).__name__}: {exc})")
    yield peer
    peer.stop()


def test_read_and_write_through_tansu(spark: Any, tansu: Any) -> None:
    tansu.create_topic("spark-in")  # 4 partitions
    p = Producer({"bootstrap.servers": tansu.bootstrap, "linger.ms": 5})
    for i in range(500):
        p.produce("spark-in", f"v{i}".encode(), key=f"k{i}".encode(), partition=i % 4)
    assert p.flush(15) == 0
    df = (spark.read.format("mockbroker").option("kafka.bootstrap.servers", tansu.bootstrap)
          .option("subscribe", "spark-in").load())
    rows = df.select("key", "value", "partition", "offset").collect()
    assert sorted(r.value.decode() for r in rows) == sorted(f"v{i}" for i in range(500))
    assert all(r.key.decode()[1:] == r.value.decode()[1:] for r in rows)
    assert sorted((r.partition, r.offset) for r in rows) == [(p, o) for p in range(4) for o in range(125)]

    tansu.create_topic("spark-out")
    df.selectExpr("value", "partition").write.format("mockbroker").option(
        "kafka.bootstrap.servers", tansu.bootstrap).option("topic", "spark-out").mode("append").save()
    c = Consumer({"bootstrap.servers": tansu.bootstrap, "group.id": "spark-out-check"})
    c.assign([TopicPartition("spark-out", q, 0) for q in range(4)])
    got: list[str] = []
    deadline = time.monotonic() + 20
    while len(got) < 500 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got.append(m.value().decode())
    c.close()
    assert sorted(got) == sorted(f"v{i}" for i in range(500))
