"""@mock_kafka on async tests: aiokafka's and confluent-kafka's asyncio clients are redirected, and the
cluster is the decorator's (``.cluster`` inside the coroutine) or ``async with``'s."""

from __future__ import annotations

import gc
import logging

import confluent_kafka.aio
import pytest

from mockbroker import mock_kafka
from mockbroker.cluster import MockCluster
from mockbroker.redirect import active_cluster
from tests.mock_kafka import app_orders

pytestmark = pytest.mark.clients

AIO = mock_kafka(topics={"orders-aio": 1}, schema_registry=False)


def records(cluster: MockCluster, topic: str) -> int:
    return cluster.call(lambda: sum(p.high_watermark for p in cluster.state.topics[topic].partitions))


@AIO
async def test_aiokafka_app() -> None:
    values = [b"a-1", b"a-2"]
    await app_orders.produce_aiokafka("orders-aio", values)
    assert await app_orders.consume_aiokafka("orders-aio", "aio-billing", 2) == values
    assert AIO.cluster is active_cluster()
    assert records(AIO.cluster, "orders-aio") == 2
    assert AIO.cluster.journal.entries(api="Produce", client_id="orders-aiokafka")


async def test_async_with_and_confluent_aio_clients(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mockbroker.mock_kafka")
    async with mock_kafka(topics={"aio-confluent": 1}, schema_registry=False) as cluster:
        producer = confluent_kafka.aio.AIOProducer({"bootstrap.servers": app_orders.BOOTSTRAP,
                                                    "security.protocol": "SSL", "linger.ms": 1})
        try:
            delivery = await producer.produce("aio-confluent", value=b"v")
            await producer.flush()  # (else the batch waits for its buffer_timeout)
            assert (await delivery).error() is None
        finally:
            await producer.close()
        consumer = confluent_kafka.aio.AIOConsumer({"bootstrap.servers": app_orders.BOOTSTRAP, "group.id": "aio",
                                                    "auto.offset.reset": "earliest", "sasl.mechanism": "PLAIN"})
        try:
            await consumer.subscribe(["aio-confluent"])
            message = None
            for _ in range(40):  # bounded: 40 polls of at most 0.5 s
                message = await consumer.poll(0.5)
                if message is not None and not message.error():
                    break
            assert message is not None and message.value() == b"v"
        finally:
            await consumer.close()
        del producer, consumer
        gc.collect()  # their librdkafka handles go now, before the cluster stops
        assert records(cluster, "aio-confluent") == 1
    # one line per client: the Producer / Consumer each makes inside gets its rewritten config as it is
    debug = [r.getMessage().split(" ")[1] for r in caplog.records if r.levelno == logging.DEBUG]
    assert debug == ["confluent_kafka.aio.AIOProducer", "confluent_kafka.aio.AIOConsumer"]


@mock_kafka
async def test_the_async_schema_registry_client_is_redirected() -> None:
    from confluent_kafka.schema_registry import AsyncSchemaRegistryClient, Schema

    client = AsyncSchemaRegistryClient({"url": app_orders.REGISTRY, "basic.auth.user.info": "k:s"})
    schema_id = await client.register_schema("orders-value", Schema(app_orders.ORDER_SCHEMA, "AVRO"))
    assert await client.get_subjects() == ["orders-value"]
    cluster = mock_kafka.cluster
    assert cluster.schema_registry is not None and schema_id >= 1
