"""A fetch outside the log (past its end, below its start after DeleteRecords) with every Python client.

The broker answers OFFSET_OUT_OF_RANGE with empty (never null) records, as Kafka does; each client then
resets by its ``auto.offset.reset`` and reads on, or reports the documented error when it has no reset
policy.  Every case runs against the broker with its C extensions (in-process) and without them
(``MOCKBROKER_PURE_PYTHON=1``, its own process).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from mockbroker.cluster import MockCluster
from tests.load.broker_process import BrokerProcess

pytestmark = pytest.mark.clients
STORED = 20
_names = itertools.count()


@pytest.fixture(scope="module", params=["c-extensions", "pure-python"])
def bootstrap(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "pure-python":
        with BrokerProcess(env={"MOCKBROKER_PURE_PYTHON": "1"}) as broker:
            yield broker.bootstrap
    else:
        with MockCluster() as cluster:
            yield cluster.bootstrap_servers


def _produce(bootstrap: str, topic: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(first, first + count):
        producer.produce(topic, value=b"v%d" % i, partition=0)
    assert producer.flush(20) == 0


def _topic(bootstrap: str, deleted_below: int = 0) -> str:
    """A new one-partition topic holding STORED records v0..v19, the first ``deleted_below`` deleted."""
    topic = f"oor-{next(_names)}"
    _produce(bootstrap, topic, 0, STORED)
    if deleted_below:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        done = admin.delete_records([TopicPartition(topic, 0, deleted_below)])
        assert next(iter(done.values())).result(20).low_watermark == deleted_below
    return topic


# -- confluent-kafka (librdkafka) ------------------------------------------------------------------------

def _confluent_read(bootstrap: str, topic: str, offset: int, reset: str, want: int,
                    produce_after: int = 0) -> tuple[list[bytes], list[int]]:
    fetching_at: list[int] = []  # the partition's fetch position, from librdkafka's statistics

    def stats(text: str) -> None:
        part = json.loads(text).get("topics", {}).get(topic, {}).get("partitions", {}).get("0", {})
        if part.get("fetch_state") == "active":
            fetching_at.append(part.get("next_offset", -1))

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "enable.auto.commit": False,
                         "auto.offset.reset": reset, "fetch.wait.max.ms": 100, "statistics.interval.ms": 100,
                         "stats_cb": stats})
    values: list[bytes] = []
    errors: list[int] = []
    consumer.assign([TopicPartition(topic, 0, offset)])
    deadline = time.monotonic() + 20
    produced = False
    try:
        while len(values) < want and not errors and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                if produce_after and not produced and STORED in fetching_at:  # reset to the end: add records
                    _produce(bootstrap, topic, STORED, produce_after)
                    produced = True
                continue
            if msg.error():
                errors.append(msg.error().code())
            else:
                values.append(msg.value())
    finally:
        consumer.close()
    return values, errors


def test_confluent_past_the_end_earliest_reads_everything(bootstrap: str) -> None:
    topic = _topic(bootstrap)
    values, errors = _confluent_read(bootstrap, topic, STORED + 5, "earliest", STORED)
    assert errors == []
    assert values == [b"v%d" % i for i in range(STORED)]


def test_confluent_past_the_end_latest_reads_only_new_records(bootstrap: str) -> None:
    topic = _topic(bootstrap)
    values, errors = _confluent_read(bootstrap, topic, STORED + 5, "latest", 3, produce_after=3)
    assert errors == []
    assert values == [b"v%d" % i for i in range(STORED, STORED + 3)]


def test_confluent_past_the_end_without_reset_policy_reports_the_error(bootstrap: str) -> None:
    topic = _topic(bootstrap)
    values, errors = _confluent_read(bootstrap, topic, STORED + 5, "error", 1)
    assert values == []
    assert errors == [KafkaError._AUTO_OFFSET_RESET]


def test_confluent_below_the_start_earliest_reads_from_the_new_start(bootstrap: str) -> None:
    topic = _topic(bootstrap, deleted_below=10)
    values, errors = _confluent_read(bootstrap, topic, 5, "earliest", STORED - 10)
    assert errors == []
    assert values == [b"v%d" % i for i in range(10, STORED)]


def test_confluent_below_the_start_latest_reads_only_new_records(bootstrap: str) -> None:
    topic = _topic(bootstrap, deleted_below=10)
    values, errors = _confluent_read(bootstrap, topic, 5, "latest", 2, produce_after=2)
    assert errors == []
    assert values == [b"v%d" % i for i in range(STORED, STORED + 2)]


# -- kafka-python ----------------------------------------------------------------------------------------

def _kafka_python_read(bootstrap: str, topic: str, offset: int, reset: str, want: int) -> list[bytes]:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset=reset, enable_auto_commit=False,
                             fetch_max_wait_ms=100, request_timeout_ms=20000)
    tp = KTP(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, offset)
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    try:
        while len(values) < want and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                values.extend(r.value for r in records)
    finally:
        consumer.close()
    return values


def test_kafka_python_past_the_end_earliest_reads_everything(bootstrap: str) -> None:
    topic = _topic(bootstrap)
    assert _kafka_python_read(bootstrap, topic, STORED + 5, "earliest", STORED) == [b"v%d" % i for i in range(STORED)]


def test_kafka_python_below_the_start_earliest_reads_from_the_new_start(bootstrap: str) -> None:
    topic = _topic(bootstrap, deleted_below=10)
    assert _kafka_python_read(bootstrap, topic, 5, "earliest", 10) == [b"v%d" % i for i in range(10, STORED)]


def test_kafka_python_past_the_end_without_reset_policy_raises(bootstrap: str) -> None:
    from kafka.errors import OffsetOutOfRangeError

    topic = _topic(bootstrap)
    with pytest.raises(OffsetOutOfRangeError):
        _kafka_python_read(bootstrap, topic, STORED + 5, "none", 1)


# -- aiokafka --------------------------------------------------------------------------------------------

async def _aiokafka_read(bootstrap: str, topic: str, offset: int, reset: str, want: int) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as ATP

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset=reset, enable_auto_commit=False,
                                fetch_max_wait_ms=100)
    await consumer.start()
    tp = ATP(topic, 0)
    values: list[bytes] = []
    try:
        consumer.assign([tp])
        consumer.seek(tp, offset)
        deadline = time.monotonic() + 20
        while len(values) < want and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=200)).values():
                values.extend(r.value for r in records)
    finally:
        await consumer.stop()
    return values


def test_aiokafka_past_the_end_earliest_reads_everything(bootstrap: str) -> None:
    topic = _topic(bootstrap)
    got = asyncio.run(_aiokafka_read(bootstrap, topic, STORED + 5, "earliest", STORED))
    assert got == [b"v%d" % i for i in range(STORED)]


def test_aiokafka_below_the_start_earliest_reads_from_the_new_start(bootstrap: str) -> None:
    topic = _topic(bootstrap, deleted_below=10)
    got = asyncio.run(_aiokafka_read(bootstrap, topic, 5, "earliest", 10))
    assert got == [b"v%d" % i for i in range(10, STORED)]


def test_aiokafka_past_the_end_without_reset_policy_raises(bootstrap: str) -> None:
    from aiokafka.errors import OffsetOutOfRangeError

    topic = _topic(bootstrap)
    with pytest.raises(OffsetOutOfRangeError):
        asyncio.run(_aiokafka_read(bootstrap, topic, STORED + 5, "none", 1))
