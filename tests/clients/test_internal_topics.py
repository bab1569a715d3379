"""Kafka's internal topics with real clients: ``__consumer_offsets`` and ``__transaction_state`` appear
once a group or a transaction first finds its coordinator, flagged internal, compacted, with 50
partitions; producers are refused; consumers' exclude-internal-topics settings act on them."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from mockbroker.cluster import MockCluster
from mockbroker.state.internal_topics import partition_for

pytestmark = pytest.mark.clients


def _commit_once(bootstrap: str, group: str) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition("t", 0, 0)])
        c.commit(offsets=[TopicPartition("t", 0, 1)], asynchronous=False)
    finally:
        c.close()


def test_consumer_offsets_appears_after_a_group_commits_flagged_internal() -> None:
    with MockCluster(brokers=3, topics={"t": 1}) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        assert "__consumer_offsets" not in admin.list_topics(timeout=10).topics  # not before any group
        _commit_once(cluster.bootstrap_servers, "g")
        topics = admin.list_topics(timeout=10).topics
        assert len(topics["__consumer_offsets"].partitions) == 50
        described = admin.describe_topics(TopicCollection(["__consumer_offsets", "t"]))
        assert described["__consumer_offsets"].result(10).is_internal is True
        assert described["t"].result(10).is_internal is False
        assert len(described["__consumer_offsets"].result(10).partitions[0].replicas) == 3  # min(3, brokers)
        resource = ConfigResource(ResourceType.TOPIC, "__consumer_offsets")
        configs = admin.describe_configs([resource])[resource].result(10)
        assert configs["cleanup.policy"].value == "compact"
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "w"})
        try:  # ListOffsets on it: empty partitions
            assert consumer.get_watermark_offsets(TopicPartition("__consumer_offsets", 7), timeout=10) == (0, 0)
        finally:
            consumer.close()


def test_transaction_state_appears_with_a_transactional_producer() -> None:
    with MockCluster(topics={"t": 1}) as cluster:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "tx-1"})
        producer.init_transactions(10)
        topics = AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(timeout=10).topics
        assert len(topics["__transaction_state"].partitions) == 50
        assert len(topics["__transaction_state"].partitions[0].replicas) == 1  # capped at the one broker
        assert "__consumer_offsets" not in topics


def test_confluent_producer_is_refused_on_internal_topics_but_not_on_other_double_underscore_names() -> None:
    with MockCluster(topics={"t": 1, "__mine": 1}) as cluster:
        _commit_once(cluster.bootstrap_servers, "g")
        reports: list[KafkaError | None] = []
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
        producer.produce("__consumer_offsets", b"x", partition=0, on_delivery=lambda err, _m: reports.append(err))
        producer.produce("__mine", b"y", partition=0, on_delivery=lambda err, _m: reports.append(err))
        assert producer.flush(15) == 0
        refused = [r for r in reports if r is not None]
        assert [r.code() for r in refused] == [KafkaError.TOPIC_EXCEPTION] and len(reports) == 2
        assert cluster.state.topics["__consumer_offsets"].partitions[0].next_offset == 0  # nothing stored
        assert cluster.state.topics["__mine"].is_internal is False


@pytest.mark.parametrize("exclude", [True, False])
def test_kafka_python_pattern_subscription_honours_exclude_internal_topics(exclude: bool) -> None:
    from kafka import KafkaConsumer

    with MockCluster(topics={"t": 1}) as cluster:
        _commit_once(cluster.bootstrap_servers, "g")
        consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=f"pattern-{exclude}",
                                 exclude_internal_topics=exclude, session_timeout_ms=6000,
                                 metadata_max_age_ms=500)
        consumer.subscribe(pattern="^(t|__consumer_offsets)$")
        try:
            deadline = time.monotonic() + 15
            while not consumer.assignment() and time.monotonic() < deadline:
                consumer.poll(timeout_ms=100)
            topics = {tp.topic for tp in consumer.assignment()}
        finally:
            consumer.close()
        assert topics == ({"t"} if exclude else {"t", "__consumer_offsets"})


def test_partition_for_is_kafkas_hash() -> None:
    # Java: "hello".hashCode() == 99162322; "polygenelubricants".hashCode() == Integer.MIN_VALUE (Utils.abs: 0)
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("Aa", 50) == partition_for("BB", 50) == 2112 % 50
