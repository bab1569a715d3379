"""What the seed tests share: reading every record of a topic with confluent-kafka and kafka-python (bounded
polls, read_committed), and a ``mockbroker`` process whose first line is waited for."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.processes import interrupt_group

Seen = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]], int]  # partition, key, value, headers, ts


def read_confluent(bootstrap: str, topic: str, partitions: int, count: int) -> list[Seen]:
    """Every record of ``topic`` (``count`` of them) through confluent-kafka's Consumer, read_committed, in
    partition then offset order."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "seed-reader", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    got: list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]], int]] = []
    try:
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append((msg.partition(), msg.offset(), msg.key(), msg.value(), msg.headers() or [],
                            msg.timestamp()[1]))
            if len(got) >= count:
                break
    finally:
        consumer.close()
    return _in_order(got, count)


def read_kafka_python(bootstrap: str, topic: str, partitions: int, count: int) -> list[Seen]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, isolation_level="read_committed",
                             consumer_timeout_ms=10000)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    got = []
    try:
        for msg in consumer:
            got.append((msg.partition, msg.offset, msg.key, msg.value, list(msg.headers), msg.timestamp))
            if len(got) >= count:
                break
    finally:
        consumer.close()
    return _in_order(got, count)


def _in_order(got: list[Any], count: int) -> list[Seen]:
    """(partition, key, value, headers, timestamp) of every record read, by partition then offset."""
    assert len(got) == count, f"read {len(got)} of {count} records"
    return [(p, k, v, h, ts) for p, _o, k, v, h, ts in sorted(got, key=lambda r: (r[0], r[1]))]


def mockbroker(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mockbroker", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


@contextmanager
def serving(*args: str) -> Iterator[str]:
    """``mockbroker serve --port 0 ARGS`` running; yields its bootstrap servers."""
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put("")

    threading.Thread(target=pump, daemon=True).start()
    try:
        while True:
            line = lines.get(timeout=30)
            if not line:
                raise AssertionError(f"serve ended: {proc.wait(5)} {proc.stderr.read() if proc.stderr else ''}")
            if line.startswith("bootstrap.servers="):
                yield line.strip().partition("=")[2]
                return
    finally:
        interrupt_group(proc)
