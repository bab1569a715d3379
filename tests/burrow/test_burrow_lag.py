"""Burrow (LinkedIn's consumer lag monitor, Debian's 1.2.1, client profile at kafka-version 2.1.0) watches a
MockCluster: its HTTP API lists the cluster, the topic and its offsets, the groups that real clients
(confluent-kafka and kafka-python) committed for, and each partition's lag.

Burrow learns of groups only by reading the OffsetCommit records in ``__consumer_offsets`` (it never asks the
broker for groups), so the group tests pass only when mockbroker writes those records as Kafka's group
coordinator does (issue 53).  Burrow also drops a commit for a topic it has not yet fetched offsets for,
and a commit whose commitTimestamp is older than its storage's ``expire-group`` (7 days) by the wall clock:
each test therefore commits before Burrow starts, or on a topic Burrow already knows.

Burrow starts its consumer on each partition of ``__consumer_offsets`` in turn, each start waiting behind the
previous partition's long-polling Fetch on the same connection (250 ms), so with Kafka's 50 partitions it
sees every partition, and heeds SIGTERM, only after about 12.5 s.  The fast tests give the cluster
``offsets.topic.num.partitions`` = 4 (Kafka's broker config); the slow tier runs Kafka's default of 50.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from mockbroker.cluster import MockCluster
from mockbroker.state.internal_topics import partition_for
from tests.burrow.harness import BURROW_CLIENT_ID, BURROW_CLUSTER, Burrow

pytestmark = pytest.mark.clients

TOPIC = "orders"
PARTITIONS = 3
PER_PARTITION = 10
CONFLUENT_GROUP = "burrow-confluent"
PYTHON_GROUP = "burrow-kafka-python"
COMMITS = {  # group -> partition -> the offset it commits (records left unread behind each)
    CONFLUENT_GROUP: {0: 2, 1: 4, 2: 6},
    PYTHON_GROUP: {0: 9, 1: 10, 2: 5},
}
OFFSETS_PARTITIONS = 4  # offsets.topic.num.partitions for the fast tests (Kafka's default: 50)
WAIT = 30.0  # seconds: every wait on a client or on Burrow's API is bounded by this


def _produce(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, f"{p}-{i}".encode(), partition=p)
    assert producer.flush(WAIT) == 0


def _confluent_commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """A confluent-kafka group member: joins, consumes a record, commits ``offsets`` synchronously, leaves."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                break
        else:
            raise AssertionError(f"{group}: no record within {WAIT} s")
        committed = consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                                    asynchronous=False)
        assert committed is not None and all(tp.error is None for tp in committed)
    finally:
        consumer.close()


def _kafka_python_commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """A kafka-python group member: joins, consumes, commits ``offsets`` synchronously, leaves."""
    from kafka import KafkaConsumer
    from kafka.structs import OffsetAndMetadata
    from kafka.structs import TopicPartition as KafkaTopicPartition

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, request_timeout_ms=20000)
    try:
        deadline = time.monotonic() + WAIT
        while not consumer.poll(timeout_ms=1000, max_records=1):
            assert time.monotonic() < deadline, f"{group}: no record within {WAIT} s"
        consumer.commit({KafkaTopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    """A cluster whose topic has records the two groups left unread, committed before any Burrow starts."""
    with MockCluster(topics={TOPIC: PARTITIONS}, config={"offsets.topic.num.partitions": OFFSETS_PARTITIONS}) as c:
        _produce(c.bootstrap_servers, TOPIC, PARTITIONS, PER_PARTITION)
        _confluent_commit(c.bootstrap_servers, CONFLUENT_GROUP, TOPIC, COMMITS[CONFLUENT_GROUP])
        _kafka_python_commit(c.bootstrap_servers, PYTHON_GROUP, TOPIC, COMMITS[PYTHON_GROUP])
        yield c


@pytest.fixture
def burrow(cluster: MockCluster, start_burrow: Callable[..., Burrow]) -> Burrow:
    started: Burrow = start_burrow(cluster.bootstrap_servers)
    return started


def _require_commit_records(cluster: MockCluster, group: str) -> None:
    """Burrow sees a group only through its OffsetCommit records: fail at once, saying so, when
    ``__consumer_offsets`` holds none in the group's partition (rather than after a wait on Burrow)."""
    topic = cluster.state.topics["__consumer_offsets"]
    log = topic.partitions[partition_for(group, len(topic.partitions))]
    assert log.next_offset > log.log_start_offset, (
        f"__consumer_offsets partition {log.index} holds no record for group {group}: mockbroker does not write "
        "OffsetCommit records yet (issue 53), so Burrow cannot see the group")


def _lag_path(group: str) -> str:
    return f"/v3/kafka/{BURROW_CLUSTER}/consumer/{group}/lag"


def _lags(answer: dict[str, Any]) -> dict[int, int]:
    """partition -> current_lag from a /lag answer ({} while Burrow does not know the group)."""
    if answer.get("error") or "status" not in answer:
        return {}
    return {p["partition"]: p["current_lag"] for p in answer["status"]["partitions"] or []}


def _lag_is(expected: dict[int, int]) -> Callable[[dict[str, Any]], bool]:
    """A /lag answer's check: Burrow reports exactly ``expected`` (partition -> current_lag)."""
    return lambda answer: _lags(answer) == expected


def test_burrow_lists_the_cluster_the_topic_and_its_offsets(burrow: Burrow) -> None:
    assert burrow.get("/v3/kafka")["clusters"] == [BURROW_CLUSTER]
    detail = burrow.get(f"/v3/kafka/{BURROW_CLUSTER}")["module"]
    assert detail["client-profile"]["kafka-version"] == "2.1.0"
    topics = burrow.wait_for(f"/v3/kafka/{BURROW_CLUSTER}/topic", lambda a: TOPIC in (a.get("topics") or []))
    assert "__consumer_offsets" in topics["topics"]  # Burrow lists the internal topic like any other
    offsets = burrow.wait_for(f"/v3/kafka/{BURROW_CLUSTER}/topic/{TOPIC}", lambda a: not a["error"])
    assert offsets["offsets"] == [PER_PARTITION] * PARTITIONS


def test_burrow_requests_are_all_answered_without_errors(cluster: MockCluster, burrow: Burrow) -> None:
    burrow.wait_for(f"/v3/kafka/{BURROW_CLUSTER}/topic/{TOPIC}", lambda a: not a["error"])
    sent = cluster.journal.entries(client_id=BURROW_CLIENT_ID)
    assert {"Metadata", "ListOffsets", "Fetch"} <= {e.api for e in sent}  # topics, their ends, __consumer_offsets
    refused = [e.to_dict() for e in cluster.journal.entries(client_id=BURROW_CLIENT_ID, errors_only=True)]
    assert refused == []


def test_burrow_lists_both_groups(cluster: MockCluster, burrow: Burrow) -> None:
    _require_commit_records(cluster, CONFLUENT_GROUP)
    _require_commit_records(cluster, PYTHON_GROUP)
    answer = burrow.wait_for(f"/v3/kafka/{BURROW_CLUSTER}/consumer",
                             lambda a: {CONFLUENT_GROUP, PYTHON_GROUP} <= set(a.get("consumers") or []),
                             timeout=WAIT)
    assert {CONFLUENT_GROUP, PYTHON_GROUP} <= set(answer["consumers"])


@pytest.mark.parametrize("group", [CONFLUENT_GROUP, PYTHON_GROUP])
def test_burrow_reports_each_partitions_lag(cluster: MockCluster, burrow: Burrow, group: str) -> None:
    _require_commit_records(cluster, group)
    expected = {p: PER_PARTITION - o for p, o in COMMITS[group].items()}
    answer = burrow.wait_for(_lag_path(group), _lag_is(expected), timeout=WAIT)
    status = answer["status"]
    assert status["cluster"] == BURROW_CLUSTER and status["group"] == group
    assert status["partition_count"] == PARTITIONS
    assert status["totallag"] == sum(expected.values())
    assert {p["topic"] for p in status["partitions"]} == {TOPIC}
    assert {p["partition"]: p["end"]["offset"] for p in status["partitions"]} == COMMITS[group]


def test_burrow_follows_commits_and_records_made_while_it_runs(start_burrow: Callable[..., Burrow]) -> None:
    """A commit made after Burrow started reaches it through its long-polling Fetch of ``__consumer_offsets``;
    records produced later raise the lag at Burrow's next offset refresh."""
    with MockCluster(topics={"live": 1}, config={"offsets.topic.num.partitions": OFFSETS_PARTITIONS}) as c:
        _produce(c.bootstrap_servers, "live", 1, 5)
        _confluent_commit(c.bootstrap_servers, "burrow-live", "live", {0: 1})  # the topic exists before Burrow
        _require_commit_records(c, "burrow-live")
        with start_burrow(c.bootstrap_servers) as burrow:  # stopped before the cluster
            burrow.wait_for(_lag_path("burrow-live"), _lag_is({0: 4}), timeout=WAIT)
            _confluent_commit(c.bootstrap_servers, "burrow-live", "live", {0: 3})
            burrow.wait_for(_lag_path("burrow-live"), _lag_is({0: 2}), timeout=WAIT)
            _produce(c.bootstrap_servers, "live", 1, 4)
            answer = burrow.wait_for(_lag_path("burrow-live"), _lag_is({0: 6}), timeout=WAIT)
            assert answer["status"]["partitions"][0]["end"]["offset"] == 3


@pytest.mark.slow  # Burrow's consumer needs about 12.5 s to start on 50 partitions (see the module's docstring)
def test_burrow_reports_lag_with_kafkas_fifty_offsets_partitions(start_burrow: Callable[..., Burrow]) -> None:
    groups = {f"burrow-default-{i}": {0: i} for i in range(1, 4)}  # a few groups: a few partitions of the 50
    with MockCluster(topics={"plain": 1}) as c:
        _produce(c.bootstrap_servers, "plain", 1, 5)
        for group, offsets in groups.items():
            _confluent_commit(c.bootstrap_servers, group, "plain", offsets)
            _require_commit_records(c, group)
        assert len(c.state.topics["__consumer_offsets"].partitions) == 50
        with start_burrow(c.bootstrap_servers) as burrow:  # stopped before the cluster
            for group, offsets in groups.items():
                expected = {0: 5 - offsets[0]}
                answer = burrow.wait_for(_lag_path(group), _lag_is(expected), timeout=2 * WAIT)
                assert answer["status"]["totallag"] == expected[0]
