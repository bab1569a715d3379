"""An "application" that knows nothing of mockbroker: it hard-codes its production Kafka cluster and Schema
Registry (with their security settings) and imports its client classes at module top, before any test runs.
The tests in this folder call it unchanged under mock_kafka."""

from __future__ import annotations

import time
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, DeserializingConsumer, Producer, SerializingProducer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from kafka import KafkaConsumer, KafkaProducer

BOOTSTRAP = "kafka.prod.internal:9092"
REGISTRY = "http://schema-registry.prod.internal:8081"
# what production needs, and the mock's PLAINTEXT listener cannot use (mock_kafka drops it)
SECURITY = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "orders-app",
            "sasl.password": "s3cret", "ssl.ca.location": "/etc/kafka/prod-ca.pem"}
ORDER_SCHEMA = """{"type": "record", "name": "Order", "namespace": "shop",
 "fields": [{"name": "id", "type": "int"}, {"name": "item", "type": "string"}]}"""
WAIT_S = 20


def produce_confluent(topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": BOOTSTRAP, "client.id": "orders-app", "linger.ms": 1,
                         "retry.backoff.ms": 20, **SECURITY})
    for value in values:
        producer.produce(topic, value)
    if producer.flush(WAIT_S):
        raise RuntimeError("records left unsent")


def consume_confluent(topic: str, group: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": group, "auto.offset.reset": "earliest",
                         **SECURITY})
    return _values(consumer, topic, count)


def _values(consumer: Any, topic: str, count: int) -> list[Any]:
    """Up to ``count`` record values from ``topic`` within WAIT_S; the consumer is closed."""
    consumer.subscribe([topic])
    got: list[Any] = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            got.append(message.value())
    consumer.close()
    return got


def _registry() -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": REGISTRY, "basic.auth.user.info": "registry-key:registry-secret"})


def produce_avro(topic: str, orders: list[dict[str, Any]]) -> None:
    producer = SerializingProducer({"bootstrap.servers": BOOTSTRAP, "linger.ms": 1, **SECURITY,
                                    "value.serializer": AvroSerializer(_registry(), ORDER_SCHEMA)})
    for order in orders:
        producer.produce(topic, value=order)
    if producer.flush(WAIT_S):
        raise RuntimeError("records left unsent")


def consume_avro(topic: str, group: str, count: int) -> list[dict[str, Any]]:
    consumer = DeserializingConsumer({"bootstrap.servers": BOOTSTRAP, "group.id": group,
                                      "auto.offset.reset": "earliest", **SECURITY,
                                      "value.deserializer": AvroDeserializer(_registry())})
    return _values(consumer, topic, count)


def produce_kafka_python(topic: str, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=[BOOTSTRAP], client_id="orders-kafka-python",
                             security_protocol="SASL_SSL", sasl_mechanism="PLAIN",
                             sasl_plain_username="orders-app", sasl_plain_password="s3cret")
    for value in values:
        producer.send(topic, value).get(timeout=WAIT_S)
    producer.close(timeout=WAIT_S)


def consume_kafka_python(topic: str, group: str, count: int) -> list[bytes]:
    consumer = KafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, group_id=group, auto_offset_reset="earliest",
                             security_protocol="SSL", ssl_cafile="/etc/kafka/prod-ca.pem")
    got: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(record.value for record in records)
    consumer.close()
    return got


async def produce_aiokafka(topic: str, values: list[bytes]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, client_id="orders-aiokafka",
                                security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                                sasl_plain_username="orders-app", sasl_plain_password="s3cret")
    await producer.start()
    try:
        for value in values:
            await producer.send_and_wait(topic, value)
    finally:
        await producer.stop()


async def consume_aiokafka(topic: str, group: str, count: int) -> list[bytes]:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, group_id=group, auto_offset_reset="earliest")
    await consumer.start()
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + WAIT_S
        while len(got) < count and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                got.extend(record.value for record in records)
    finally:
        await consumer.stop()
    return got
