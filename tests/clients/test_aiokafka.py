"""aiokafka produces and consumes through mockbroker (asyncio client, asyncio test)."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from mockbroker.cluster import MockCluster

from .workload import PARTITIONS, Rec, check_consumed, workload

pytestmark = pytest.mark.clients
COUNT = 10_000


@pytest.mark.parametrize("acks", [0, 1, "all"])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
async def test_produce_and_consume(codec: str, acks: int | str) -> None:
    async with MockCluster(brokers=3, topics={"orders": PARTITIONS}) as cluster:
        recs = workload(COUNT)
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=5, acks=acks,
                                    compression_type=None if codec == "none" else codec)
        await producer.start()
        try:
            batch_futures = [
                await producer.send("orders", key=r.key, value=r.value, partition=r.partition,
                                    timestamp_ms=r.timestamp, headers=list(r.headers))
                for r in recs
            ]
            await producer.flush()
            await asyncio.gather(*batch_futures)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False,
                                    auto_offset_reset="earliest")
        await consumer.start()
        got: dict[int, list[tuple[int, Rec]]] = {}
        seen = 0
        try:
            consumer.assign([TopicPartition("orders", p) for p in range(PARTITIONS)])
            async with asyncio.timeout(30):
                while seen < COUNT:
                    batches = await consumer.getmany(timeout_ms=500, max_records=5000)
                    for tp, msgs in batches.items():
                        for m in msgs:
                            headers = tuple((k, v) for k, v in m.headers)
                            got.setdefault(tp.partition, []).append(
                                (m.offset, Rec(tp.partition, m.key, m.value, headers, m.timestamp)))
                            seen += 1
        finally:
            await consumer.stop()
        check_consumed(recs, got)
