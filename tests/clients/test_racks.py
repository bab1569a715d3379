"""Broker racks and fetch-from-follower (KIP-392) with real clients.

Three brokers in racks a, b and c; a topic of one partition replicated on all three, led by broker 0.
With ``replica.selector.class`` set to Kafka's RackAwareReplicaSelector, a consumer whose
``client.rack`` is b is sent by the leader to broker 1 and reads its records there (the journal shows
which broker answered); without the selector it reads from the leader; when the follower stops, the
consumer goes back to the leader and reads on without loss.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from mockbroker.cluster import MockCluster
from mockbroker.state.replica_selector import RACK_AWARE

pytestmark = pytest.mark.clients
RACKS = ["a", "b", "c"]
LEADER, FOLLOWER = 0, 1  # broker 1 is in rack b
_names = itertools.count()


@pytest.fixture
def rack_aware() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, racks=RACKS, config={"replica.selector.class": RACK_AWARE}) as cluster:
        yield cluster


@pytest.fixture
def leader_only() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, racks=RACKS) as cluster:
        yield cluster


def _topic(cluster: MockCluster) -> str:
    """A new topic of one partition on brokers 0, 1 and 2, led by broker 0."""
    name = f"racks-{next(_names)}"
    cluster.call(cluster.state.create_topic, name, 1, 3, None, False, [[LEADER, FOLLOWER, 2]])
    return name


def _produce(cluster: MockCluster, topic: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    for i in range(first, first + count):
        producer.produce(topic, value=b"v%d" % i, partition=0)
    assert producer.flush(20) == 0


def _fetches(cluster: MockCluster, broker: int, topic: str) -> int:
    """Fetch requests broker ``broker`` answered about ``topic``."""
    return sum(1 for e in cluster.journal.entries(api="Fetch", broker=broker) if topic in e.about.get("topics", {}))


def _fetch_mark(cluster: MockCluster) -> tuple[int, set[int]]:
    """Where the Fetch journal stands: its last entry, and the fetches still pending (a long poll waiting then
    may answer what comes next, so it counts as later)."""
    entries = cluster.journal.entries(api="Fetch")
    return max((e.seq for e in entries), default=-1), {e.seq for e in entries if e.outcome == "pending"}


def _fetches_since(cluster: MockCluster, mark: tuple[int, set[int]]) -> list[Any]:
    since, waiting = mark
    return [e for e in cluster.journal.entries(api="Fetch") if e.seq > since or e.seq in waiting]


def _consumer(cluster: MockCluster, topic: str, rack: str | None) -> Consumer:
    config = {"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"g-{topic}",
              "enable.auto.commit": False, "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 1000}
    if rack is not None:
        config["client.rack"] = rack
    consumer = Consumer(config)
    consumer.assign([TopicPartition(topic, 0, 0)])
    return consumer


def _read(consumer: Consumer, want: int, seen: list[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while len(seen) < want and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and not msg.error():
            seen.append(msg.value())


def _wait(check: object, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_describe_cluster_and_metadata_show_the_racks(rack_aware: MockCluster) -> None:
    admin = AdminClient({"bootstrap.servers": rack_aware.bootstrap_servers})
    nodes = admin.describe_cluster().result(20).nodes
    assert {n.id: n.rack for n in nodes} == {0: "a", 1: "b", 2: "c"}


def test_describe_configs_reports_each_brokers_rack_read_only(rack_aware: MockCluster) -> None:
    admin = AdminClient({"bootstrap.servers": rack_aware.bootstrap_servers})
    for node, rack in enumerate(RACKS):
        resource = ConfigResource(ResourceType.BROKER, str(node))
        entry = admin.describe_configs([resource])[resource].result(20)["broker.rack"]
        assert (entry.value, entry.is_read_only) == (rack, True)
    resource = ConfigResource(ResourceType.BROKER, "0")
    entry = admin.describe_configs([resource])[resource].result(20)["replica.selector.class"]
    assert (entry.value, entry.is_read_only) == (RACK_AWARE, True)


def test_a_consumer_in_a_followers_rack_reads_from_that_follower(rack_aware: MockCluster) -> None:
    topic = _topic(rack_aware)
    consumer = _consumer(rack_aware, topic, "b")
    try:
        seen: list[bytes] = []
        # at offset 0 of an empty log the leader already names the follower; the consumer moves there
        consumer.poll(0.5)
        assert _wait(lambda: _fetches(rack_aware, FOLLOWER, topic) > 0)
        at_leader = _fetches(rack_aware, LEADER, topic)
        _produce(rack_aware, topic, 0, 20)
        _read(consumer, 20, seen)
        assert seen == [b"v%d" % i for i in range(20)]
        # the records, produced after the move, came from the follower: the leader saw no fetch since
        assert _fetches(rack_aware, LEADER, topic) == at_leader
        assert _fetches(rack_aware, 2, topic) == 0
    finally:
        consumer.close()


def test_without_the_selector_the_consumer_reads_from_the_leader(leader_only: MockCluster) -> None:
    topic = _topic(leader_only)
    _produce(leader_only, topic, 0, 20)
    consumer = _consumer(leader_only, topic, "b")
    try:
        seen: list[bytes] = []
        _read(consumer, 20, seen)
        assert seen == [b"v%d" % i for i in range(20)]
        assert _fetches(leader_only, LEADER, topic) > 0
        assert _fetches(leader_only, FOLLOWER, topic) == 0
    finally:
        consumer.close()


def test_a_consumer_in_the_leaders_rack_reads_from_the_leader(rack_aware: MockCluster) -> None:
    topic = _topic(rack_aware)
    _produce(rack_aware, topic, 0, 10)
    consumer = _consumer(rack_aware, topic, "a")
    try:
        seen: list[bytes] = []
        _read(consumer, 10, seen)
        assert seen == [b"v%d" % i for i in range(10)]
        assert _fetches(rack_aware, FOLLOWER, topic) == _fetches(rack_aware, 2, topic) == 0
    finally:
        consumer.close()


def test_when_the_follower_stops_the_consumer_reads_on_from_the_leader(rack_aware: MockCluster) -> None:
    topic = _topic(rack_aware)
    consumer = _consumer(rack_aware, topic, "b")
    try:
        seen: list[bytes] = []
        _produce(rack_aware, topic, 0, 10)
        _read(consumer, 10, seen)
        assert _fetches(rack_aware, FOLLOWER, topic) > 0
        rack_aware.broker_down(FOLLOWER)
        # librdkafka may already be long-polling the leader when the records come: that fetch answers them
        mark = _fetch_mark(rack_aware)
        _produce(rack_aware, topic, 10, 10)
        _read(consumer, 20, seen)
        assert seen == [b"v%d" % i for i in range(20)]  # nothing lost, nothing twice
        served = [e for e in _fetches_since(rack_aware, mark)
                  if e.broker == LEADER and topic in e.about.get("topics", {})]
        assert served, "the leader answered no fetch after the follower stopped"
    finally:
        consumer.close()


def test_kafka_python_consumer_with_client_rack_reads_from_the_follower(rack_aware: MockCluster) -> None:
    kafka = pytest.importorskip("kafka", reason="kafka-python is not installed")
    topic = _topic(rack_aware)
    consumer = kafka.KafkaConsumer(bootstrap_servers=rack_aware.bootstrap_servers, client_rack="b",
                                   enable_auto_commit=False, fetch_max_wait_ms=100, consumer_timeout_ms=500)
    try:
        racks = {b.node_id: b.rack for b in consumer._client.cluster.brokers()}
        consumer.assign([kafka.TopicPartition(topic, 0)])
        consumer.seek(kafka.TopicPartition(topic, 0), 0)
        consumer.poll(timeout_ms=500)
        assert racks == {0: "a", 1: "b", 2: "c"}
        assert _wait(lambda: (consumer.poll(timeout_ms=100) is not None) and _fetches(rack_aware, FOLLOWER, topic) > 0)
        # kafka-python (3.0) forgets the preferred replica whenever the follower answers the partition with
        # preferred_read_replica -1, as Kafka's followers answer (the Java client keeps it until
        # metadata.max.age.ms), so its next fetch goes back to the leader, which sends it to the follower
        # again: the leader answers a fetch more now and then, and never stops naming the follower
        mark = _fetch_mark(rack_aware)  # the follower's long poll may be waiting: pending
        _produce(rack_aware, topic, 0, 20)
        seen: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(seen) < 20 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                seen.extend(r.value for r in records)
        assert seen == [b"v%d" % i for i in range(20)]
        after = _fetches_since(rack_aware, mark)
        assert any(e.broker == FOLLOWER and e.outcome == "answered" and not e.errors for e in after), after
        assert all(e.broker in (LEADER, FOLLOWER) for e in after), after
        assert consumer._subscription.assignment[kafka.TopicPartition(topic, 0)].preferred_read_replica() in (None,
                                                                                                            FOLLOWER)
    finally:
        consumer.close()
