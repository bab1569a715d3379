"""Error paths with confluent-kafka (librdkafka), each asserting what Kafka makes the client do.

A topic deleted and re-created under a subscribed consumer, leaders moved mid-produce and mid-fetch, the
group coordinator moved between commits, a broker lost inside a transaction, a record over the topic's
``max.message.bytes`` among small ones, and a committed offset that retention deleted.  One 3-broker
cluster for the module; each test makes its own topic (and brings back any broker it took down).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mockbroker.cluster import MockCluster
from tests.clients.test_transactions_confluent import read_all

pytestmark = pytest.mark.clients
_names = itertools.count()


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as c:
        yield c


def new_topic(cluster: MockCluster, partitions: int = 1, **config: object) -> str:
    name = f"em-{next(_names)}"
    cluster.create_topic(name, partitions, 3, {k.replace("_", "."): v for k, v in config.items()})
    return name


def _producer(cluster: MockCluster, **conf: object) -> Producer:
    return Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 2, "retry.backoff.ms": 20,
                     **conf})


def _produce(cluster: MockCluster, topic: str, values: list[bytes], **kwargs: object) -> None:
    p = _producer(cluster)
    for v in values:
        p.produce(topic, v, partition=0, **kwargs)
    assert p.flush(20) == 0


def _consumer(cluster: MockCluster, group: str, **conf: object) -> Consumer:
    return Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                     "enable.auto.commit": False, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
                     "topic.metadata.refresh.interval.ms": 500, "session.timeout.ms": 6000, **conf})


def _poll_until(c: Consumer, done: Callable[[list[bytes], list[Message]], bool], timeout: float = 20,
                values: list[bytes] | None = None) -> tuple[list[bytes], list[Message]]:
    """Poll until ``done(values, errors)``; the records' values and the error events seen."""
    values = [] if values is None else values
    errors: list[Message] = []
    deadline = time.monotonic() + timeout
    while not done(values, errors) and time.monotonic() < deadline:
        m = c.poll(0.1)
        if m is None:
            continue
        if m.error() is not None:
            errors.append(m)
        else:
            values.append(m.value())
    return values, errors


def _vals(prefix: str, n: int, start: int = 0) -> list[bytes]:
    return [f"{prefix}{i}".encode() for i in range(start, start + n)]


# -- 1. a topic deleted and re-created while a subscribed consumer reads it -------------------------

def test_topic_deleted_and_recreated_under_a_subscribed_consumer(cluster: MockCluster) -> None:
    topic = new_topic(cluster)
    _produce(cluster, topic, _vals("old", 5))
    c = _consumer(cluster, f"g-{topic}")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    try:
        c.subscribe([topic])
        values, _ = _poll_until(c, lambda v, e: len(v) >= 5)
        assert values == _vals("old", 5)
        c.commit(asynchronous=False)
        assert c.committed([TopicPartition(topic, 0)], 10)[0].offset == 5
        next(iter(admin.delete_topics([topic]).values())).result(10)
        # librdkafka reports a subscribed topic missing from Metadata as UNKNOWN_TOPIC_OR_PART
        _, errors = _poll_until(c, lambda v, e: bool(e), timeout=10)
        assert [m.error().code() for m in errors][:1] == [KafkaError.UNKNOWN_TOPIC_OR_PART]
        cluster.create_topic(topic, 1, 3)
        _produce(cluster, topic, _vals("new", 8))
        # Kafka drops a deleted topic's committed offsets, so the group starts the new topic by
        # auto.offset.reset (earliest): every record of the new topic, none skipped at the old offset 5
        values, _ = _poll_until(c, lambda v, e: len(v) >= 8)
        assert values == _vals("new", 8)
    finally:
        c.close()


def test_deleted_topic_takes_its_committed_offsets_with_it(cluster: MockCluster) -> None:
    topic = new_topic(cluster)
    group = f"g-{topic}"
    c = _consumer(cluster, group)
    c.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    next(iter(admin.delete_topics([topic]).values())).result(10)
    cluster.create_topic(topic, 1, 3)
    try:
        assert c.committed([TopicPartition(topic, 0)], 10)[0].offset == -1001  # OFFSET_INVALID: none
    finally:
        c.close()


# -- 2. the leader moved mid-produce and mid-fetch ------------------------------------------------

def test_leader_moves_mid_produce_and_mid_fetch_lose_and_repeat_nothing(cluster: MockCluster) -> None:
    topic = new_topic(cluster)
    total = 3000
    p = _producer(cluster, **{"enable.idempotence": True, "batch.num.messages": 50})
    c = _consumer(cluster, f"g-{topic}")
    c.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    try:
        for i in range(total // 2):
            p.produce(topic, b"%d" % i, partition=0)
        cluster.move_leader(topic, 0)  # batches are in flight to the old leader
        assert p.flush(20) == 0
        _poll_until(c, lambda v, e: len(v) >= total // 4, values=got)
        cluster.move_leader(topic, 0)  # the consumer is part way through
        for i in range(total // 2, total):
            p.produce(topic, b"%d" % i, partition=0)
            if i == 2 * total // 3:
                cluster.move_leader(topic, 0)
        assert p.flush(20) == 0
        _, errors = _poll_until(c, lambda v, e: len(v) >= total, values=got)
    finally:
        c.close()
    assert [int(v) for v in got] == list(range(total))  # no gap, no duplicate, in order
    assert [m.error().code() for m in errors] == []
    assert cluster.state.topics[topic].partitions[0].leader_epoch == 3
    assert cluster.state.topics[topic].partitions[0].next_offset == total  # each record stored once


# -- 3. the group coordinator moved between commits -------------------------------------------------

def test_commit_follows_a_moved_coordinator(cluster: MockCluster) -> None:
    topic = new_topic(cluster)
    group = f"g-{topic}"
    _produce(cluster, topic, _vals("v", 10))
    c = _consumer(cluster, group)
    try:
        c.subscribe([topic])
        values, _ = _poll_until(c, lambda v, e: len(v) >= 4)
        c.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)
        old = cluster.state.coordinator_for(group).node_id
        new = cluster.move_coordinator(group)
        assert new != old
        done = c.commit(offsets=[TopicPartition(topic, 0, 9)], asynchronous=False)
        assert done is not None and done[0].offset == 9 and done[0].error is None
        assert c.committed([TopicPartition(topic, 0)], 10)[0].offset == 9
    finally:
        c.close()
    commits = cluster.journal.entries(api="OffsetCommit")
    assert commits[-1].broker == new and commits[-1].errors == []  # answered by the new coordinator
    # a fresh member of the group starts at the committed offset, from the new coordinator
    c2 = _consumer(cluster, group)
    try:
        c2.subscribe([topic])
        values, _ = _poll_until(c2, lambda v, e: len(v) >= 1)
    finally:
        c2.close()
    assert values == [b"v9"]


# -- 4. a broker down in the middle of a transaction ------------------------------------------------

@pytest.mark.parametrize("victim", ["partition-leader", "coordinator"])
def test_broker_down_mid_transaction_commits_all_or_nothing(cluster: MockCluster, victim: str) -> None:
    topic = new_topic(cluster, 3)
    tid = f"tx-{topic}"
    p = _producer(cluster, **{"transactional.id": tid, "transaction.timeout.ms": 20000})
    p.init_transactions(20)
    p.begin_transaction()
    for i in range(30):
        p.produce(topic, f"t{i}".encode(), partition=i % 3)
    assert p.flush(20) == 0
    if victim == "coordinator":
        down = cluster.state.coordinator_for(tid).node_id
    else:
        down = next(log.leader for log in cluster.state.topics[topic].partitions
                    if log.leader != cluster.state.coordinator_for(tid).node_id)
    cluster.broker_down(down)
    try:
        for i in range(30, 60):
            p.produce(topic, f"t{i}".encode(), partition=i % 3)
        committed = True
        try:
            p.commit_transaction(20)
        except KafkaException as exc:
            assert exc.args[0].txn_requires_abort(), exc
            p.abort_transaction(20)
            committed = False
        seen = read_all(cluster, topic, 3, "read_committed")
    finally:
        cluster.broker_up(down)
    everything = sorted(f"t{i}" for i in range(60))
    assert sorted(v for vs in seen.values() for v in vs) == (everything if committed else [])
    assert committed  # the mock moves leaders and coordinators at once, so librdkafka commits


# -- 5. a record over max.message.bytes among small ones --------------------------------------------

@pytest.mark.parametrize("idempotent", [False, True])
def test_oversized_record_fails_alone_and_the_small_ones_land_in_order(cluster: MockCluster,
                                                                      idempotent: bool) -> None:
    topic = new_topic(cluster, max_message_bytes=2000)
    reports: list[tuple[bytes, int | None]] = []

    def delivered(err: KafkaError | None, msg: Message) -> None:
        reports.append((msg.value(), err.code() if err is not None else None))

    p = _producer(cluster, **{"enable.idempotence": idempotent, "linger.ms": 0})
    big = b"B" * 5000
    sent = [*_vals("s", 5), big, *_vals("s", 5, 5)]
    for v in sent:
        p.produce(topic, v, partition=0, on_delivery=delivered)
        assert p.flush(20) == 0  # one record a batch: Kafka refuses a whole batch, librdkafka never splits one
    assert reports == [(v, KafkaError.MSG_SIZE_TOO_LARGE if v is big else None) for v in sent]
    assert read_all(cluster, topic, 1, "read_uncommitted") == {0: [v.decode() for v in sent if v is not big]}


# -- 6. a committed offset deleted by retention -----------------------------------------------------

def topic_with_expired_head(cluster: MockCluster, group: str) -> str:
    """o0..o9 (timestamps long past retention.ms) then n0..n4; ``group`` committed offset 3; then retention."""
    # segment.ms under the two hours between o9 and n0: the old records are a segment of their own, which
    # retention deletes whole (in Kafka's default 7-day segment they would share the active one with n0..n4)
    topic = new_topic(cluster, retention_ms=3_600_000, segment_ms=3_600_000)
    old = int(time.time() * 1000) - 7_200_000
    p = _producer(cluster)
    for i, v in enumerate(_vals("o", 10)):
        p.produce(topic, v, partition=0, timestamp=old + i)
    assert p.flush(20) == 0
    for v in _vals("n", 5):
        p.produce(topic, v, partition=0)
    assert p.flush(20) == 0
    c = _consumer(cluster, group)
    c.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
    c.close()
    cluster.run_retention()
    assert cluster.state.topics[topic].partitions[0].log_start_offset == 10
    return topic


@pytest.mark.parametrize("reset", ["earliest", "latest", "error"])
def test_committed_offset_removed_by_retention_resets_by_policy(cluster: MockCluster, reset: str) -> None:
    group = f"g-ret-{next(_names)}"
    topic = topic_with_expired_head(cluster, group)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    low = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()})
    assert next(iter(low.values())).result(10).offset == 10
    c = _consumer(cluster, group, **{"auto.offset.reset": reset})
    try:
        c.subscribe([topic])
        if reset == "earliest":
            values, errors = _poll_until(c, lambda v, e: len(v) >= 5 or bool(e))
            assert values == _vals("n", 5)  # from the new log start
        elif reset == "latest":
            _poll_until(c, lambda v, e: bool(c.assignment()) and c.position(c.assignment())[0].offset == 15,
                        timeout=15)
            _produce(cluster, topic, _vals("m", 2))
            values, errors = _poll_until(c, lambda v, e: len(v) >= 2 or bool(e))
            assert values == _vals("m", 2)  # only what came after the reset to the end
        else:
            values, errors = _poll_until(c, lambda v, e: bool(e) or bool(v))
            assert values == []
            assert [m.error().code() for m in errors] == [KafkaError._AUTO_OFFSET_RESET]
            return
        assert errors == []
    finally:
        c.close()
