"""testcontainers-python's docs example for Kafka (docs/modules/kafka_example.py, ``basic_example``) against
mockbroker.testcontainers: the same JSON producer and group consumer on two topics, with the import changed
and, instead of its ``time.sleep(2)``, a bounded wait for the two records (what it printed, it collects)."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer

from mockbroker.testcontainers import KafkaContainer

WAIT_S = 20.0
# kafka-python 3 deprecates plain functions as (de)serializers; the example passes lambdas
pytestmark = pytest.mark.filterwarnings("ignore:value_(de)?serializer does not implement:DeprecationWarning")


def test_basic_example() -> None:
    received: list[tuple[str, dict[str, Any]]] = []
    both = threading.Event()
    with KafkaContainer() as kafka:
        bootstrap_servers = kafka.get_bootstrap_server()
        producer = KafkaProducer(bootstrap_servers=bootstrap_servers,
                                 value_serializer=lambda v: json.dumps(v).encode("utf-8"))
        consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers,
                                 value_deserializer=lambda v: json.loads(v.decode("utf-8")),
                                 auto_offset_reset="earliest", group_id="test_group")
        topics = ["test_topic1", "test_topic2"]
        consumer.subscribe(topics)

        def consume_messages() -> None:
            for message in consumer:  # the example's loop; it stops once both records are in
                received.append((message.topic, message.value))
                if len(received) == 2:
                    both.set()
                    return

        consumer_thread = threading.Thread(target=consume_messages, daemon=True)
        consumer_thread.start()
        now = datetime.now(UTC).isoformat()
        test_messages = [
            {"topic": "test_topic1", "message": {"id": 1, "content": "Message for topic 1", "timestamp": now}},
            {"topic": "test_topic2", "message": {"id": 2, "content": "Message for topic 2", "timestamp": now}},
        ]
        for msg in test_messages:
            producer.send(msg["topic"], msg["message"])
        assert both.wait(WAIT_S), f"records received within {WAIT_S} s: {received}"
        consumer_thread.join(timeout=WAIT_S)
        assert sorted(received, key=lambda r: r[0]) == [(m["topic"], m["message"]) for m in test_messages]
        for topic in topics:
            assert consumer.partitions_for_topic(topic) == {0}
        producer.close(timeout=5)
        consumer.close()
        assert kafka.cluster.state.groups  # the example's group lived in the in-process cluster
