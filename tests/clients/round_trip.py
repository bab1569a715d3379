"""Produce a few values and read them back with one client, over any listener (SASL and TLS tests)."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer


def consume_confluent(config: dict[str, Any], topic: str, count: int) -> list[bytes]:
    """Values of the first ``count`` records a new group reads from ``topic`` (30 s at most)."""
    consumer = Consumer({**config, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got.append(msg.value())
    consumer.close()
    return got


def kafka_python_round_trip(config: dict[str, Any], topic: str, count: int = 10) -> list[bytes]:
    """Send k0..k{count-1} with kafka-python's producer, then read them with its consumer (sorted)."""
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(**config)
    for i in range(count):
        producer.send(topic, f"k{i}".encode())
    producer.flush(15)
    producer.close()
    consumer = KafkaConsumer(topic, **config, auto_offset_reset="earliest", group_id=f"g-{topic}")
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got += [r.value for r in records]
    consumer.close()
    return sorted(got)
