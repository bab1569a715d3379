"""Error paths with kafka-python and aiokafka, each asserting what Kafka makes the client do.

The same matrix as test_error_matrix_confluent.py: a topic deleted and re-created under a subscribed
consumer, leaders moved mid-produce and mid-fetch, the group coordinator moved between commits, a broker
lost inside a transaction, a record over the topic's ``max.message.bytes`` among small ones, and a
committed offset that retention deleted.  One 3-broker cluster for the module, each test its own topic.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mockbroker.cluster import MockCluster
from tests.clients.test_error_matrix_confluent import new_topic, topic_with_expired_head
from tests.clients.test_transactions_confluent import read_all

pytestmark = pytest.mark.clients
DEADLINE = 20.0
# kafka-python 3.0.12 was seen receiving a SyncGroup answer yet never applying its assignment when poll(timeout_ms=100)
# returned mid-join (then it polls an empty assignment forever): 4 of 12 runs under load, 0 of 12 with 1000 ms
POLL_MS = 1000


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    # no auto-creation: aiokafka's Metadata requests always ask for it, and would bring a deleted topic back
    with MockCluster(brokers=3, config={"auto.create.topics.enable": False}) as c:
        yield c


def _vals(prefix: str, n: int, start: int = 0) -> list[bytes]:
    return [f"{prefix}{i}".encode() for i in range(start, start + n)]


def _kp_producer(cluster: MockCluster, **conf: Any) -> Any:
    from kafka import KafkaProducer

    return KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, retry_backoff_ms=20, **conf)


def _kp_produce(cluster: MockCluster, topic: str, values: list[bytes]) -> None:
    p = _kp_producer(cluster)
    for v in values:
        p.send(topic, v, partition=0)
    p.flush(DEADLINE)
    p.close()


def _kp_consumer(cluster: MockCluster, group: str | None, **conf: Any) -> Any:
    from kafka import KafkaConsumer

    settings: dict[str, Any] = {"auto_offset_reset": "earliest", "enable_auto_commit": False,
                                "fetch_max_wait_ms": 100, "metadata_max_age_ms": 500, **conf}
    return KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group, **settings)


def _kp_poll(c: Any, done: Callable[[list[bytes]], bool], values: list[bytes] | None = None) -> list[bytes]:
    values = [] if values is None else values
    deadline = time.monotonic() + DEADLINE
    while not done(values) and time.monotonic() < deadline:
        for records in c.poll(timeout_ms=POLL_MS).values():
            values.extend(r.value for r in records)
    return values


async def _aio_poll(c: Any, done: Callable[[list[bytes]], bool], values: list[bytes] | None = None) -> list[bytes]:
    values = [] if values is None else values
    deadline = time.monotonic() + DEADLINE
    while not done(values) and time.monotonic() < deadline:
        for records in (await c.getmany(timeout_ms=100)).values():
            values.extend(r.value for r in records)
    return values


def _aio_consumer(cluster: MockCluster, group: str | None, *topics: str, **conf: Any) -> Any:
    from aiokafka import AIOKafkaConsumer

    settings: dict[str, Any] = {"auto_offset_reset": "earliest", "enable_auto_commit": False,
                                "fetch_max_wait_ms": 100, "metadata_max_age_ms": 500, **conf}
    return AIOKafkaConsumer(*topics, bootstrap_servers=cluster.bootstrap_servers, group_id=group, **settings)


# -- 1. a topic deleted and re-created while a subscribed consumer reads it -------------------------

def test_kafka_python_topic_deleted_and_recreated(cluster: MockCluster) -> None:
    """The group's committed offset goes with the deleted topic: a member of the group reads the
    re-created topic from its start.  (The member that read the old topic is closed first: kafka-python
    only logs UNKNOWN_TOPIC_OR_PARTITION for a subscribed topic that leaves Metadata, and whether its next
    rebalance still assigns the gone partition depends on when its own metadata refresh lands - seen in CI
    as a stable group keeping it - so a subscribed member's revocation is not asserted here; confluent-kafka
    and aiokafka's tests assert it.)"""
    topic = new_topic(cluster)
    _kp_produce(cluster, topic, _vals("old", 5))
    c = _kp_consumer(cluster, f"g-{topic}")
    try:
        c.subscribe([topic])
        assert _kp_poll(c, lambda v: len(v) >= 5) == _vals("old", 5)
        c.commit()
    finally:
        c.close()
    assert cluster.state.groups.committed(f"g-{topic}", topic, 0)[0] == 5
    cluster.call(cluster.state.delete_topic, topic)
    assert cluster.state.groups.committed(f"g-{topic}", topic, 0)[0] == -1
    cluster.create_topic(topic, 1, 3)
    _kp_produce(cluster, topic, _vals("new", 8))
    again = _kp_consumer(cluster, f"g-{topic}")
    try:
        again.subscribe([topic])
        # the old topic's committed offset 5 went with it: the new topic is read from its start
        assert _kp_poll(again, lambda v: len(v) >= 8) == _vals("new", 8)
    finally:
        again.close()


def test_aiokafka_topic_deleted_and_recreated(cluster: MockCluster) -> None:
    topic = new_topic(cluster)
    _kp_produce(cluster, topic, _vals("old", 5))

    async def run() -> None:
        c = _aio_consumer(cluster, f"g-{topic}", topic)
        await c.start()
        try:
            assert await _aio_poll(c, lambda v: len(v) >= 5) == _vals("old", 5)
            await c.commit()
            cluster.call(cluster.state.delete_topic, topic)
            # aiokafka, like kafka-python, only logs the missing topic; the rebalance revokes it
            await _aio_poll(c, lambda v: not c.assignment())
            assert c.assignment() == set()
            cluster.create_topic(topic, 1, 3)
            _kp_produce(cluster, topic, _vals("new", 8))
            assert await _aio_poll(c, lambda v: len(v) >= 8) == _vals("new", 8)
        finally:
            await c.stop()

    asyncio.run(run())


# -- 2. the leader moved mid-produce and mid-fetch ------------------------------------------------

TOTAL = 2000


def test_kafka_python_leader_moves_mid_produce_and_fetch(cluster: MockCluster) -> None:
    from kafka import TopicPartition

    topic = new_topic(cluster)
    p = _kp_producer(cluster, enable_idempotence=True, linger_ms=2)
    c = _kp_consumer(cluster, None)
    c.assign([TopicPartition(topic, 0)])
    got: list[bytes] = []
    try:
        for i in range(TOTAL // 2):
            p.send(topic, b"%d" % i, partition=0)
        cluster.move_leader(topic, 0)
        p.flush(DEADLINE)
        _kp_poll(c, lambda v: len(v) >= TOTAL // 4, got)
        cluster.move_leader(topic, 0)
        for i in range(TOTAL // 2, TOTAL):
            p.send(topic, b"%d" % i, partition=0)
        p.flush(DEADLINE)
        _kp_poll(c, lambda v: len(v) >= TOTAL, got)
    finally:
        c.close()
        p.close()
    assert [int(v) for v in got] == list(range(TOTAL))
    assert cluster.state.topics[topic].partitions[0].next_offset == TOTAL


def test_aiokafka_leader_moves_mid_produce_and_fetch(cluster: MockCluster) -> None:
    from aiokafka import AIOKafkaProducer, TopicPartition

    topic = new_topic(cluster)

    async def run() -> list[bytes]:
        p = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, enable_idempotence=True, linger_ms=2,
                             retry_backoff_ms=20)
        c = _aio_consumer(cluster, None)
        await p.start()
        await c.start()
        got: list[bytes] = []
        try:
            c.assign([TopicPartition(topic, 0)])
            sent = [await p.send(topic, b"%d" % i, partition=0) for i in range(TOTAL // 2)]
            cluster.move_leader(topic, 0)
            await asyncio.gather(*sent)
            await _aio_poll(c, lambda v: len(v) >= TOTAL // 4, got)
            cluster.move_leader(topic, 0)
            sent = [await p.send(topic, b"%d" % i, partition=0) for i in range(TOTAL // 2, TOTAL)]
            await asyncio.gather(*sent)
            await _aio_poll(c, lambda v: len(v) >= TOTAL, got)
        finally:
            await c.stop()
            await p.stop()
        return got

    assert [int(v) for v in asyncio.run(run())] == list(range(TOTAL))
    assert cluster.state.topics[topic].partitions[0].next_offset == TOTAL


# -- 3. the group coordinator moved between commits -------------------------------------------------

def test_kafka_python_commit_follows_a_moved_coordinator(cluster: MockCluster) -> None:
    from kafka import TopicPartition
    from kafka.structs import OffsetAndMetadata

    topic = new_topic(cluster)
    group = f"g-{topic}"
    _kp_produce(cluster, topic, _vals("v", 10))
    tp = TopicPartition(topic, 0)
    c = _kp_consumer(cluster, group)
    try:
        c.subscribe([topic])
        _kp_poll(c, lambda v: len(v) >= 4)
        c.commit({tp: OffsetAndMetadata(4, "", -1)})
        old = cluster.state.coordinator_for(group).node_id
        new = cluster.move_coordinator(group)
        assert new != old
        c.commit({tp: OffsetAndMetadata(9, "", -1)})
        assert c.committed(tp) == 9
    finally:
        c.close()
    commits = cluster.journal.entries(api="OffsetCommit")
    assert commits[-1].broker == new and commits[-1].errors == []


def test_aiokafka_commit_follows_a_moved_coordinator(cluster: MockCluster) -> None:
    from aiokafka import TopicPartition

    topic = new_topic(cluster)
    group = f"g-{topic}"
    _kp_produce(cluster, topic, _vals("v", 10))
    tp = TopicPartition(topic, 0)

    async def run() -> int:
        c = _aio_consumer(cluster, group, topic)
        await c.start()
        try:
            await _aio_poll(c, lambda v: len(v) >= 4)
            await c.commit({tp: 4})
            cluster.move_coordinator(group)
            await c.commit({tp: 9})
            return await c.committed(tp)
        finally:
            await c.stop()

    assert asyncio.run(run()) == 9
    commits = cluster.journal.entries(api="OffsetCommit")
    assert commits[-1].broker == cluster.state.coordinator_for(group).node_id and commits[-1].errors == []


# -- 4. a broker down in the middle of a transaction ------------------------------------------------

def _victim(cluster: MockCluster, topic: str, tid: str, which: str) -> int:
    coordinator = cluster.state.coordinator_for(tid).node_id
    if which == "coordinator":
        return coordinator
    return next(log.leader for log in cluster.state.topics[topic].partitions if log.leader != coordinator)


def _all_or_nothing(cluster: MockCluster, topic: str, committed: bool) -> None:
    seen = read_all(cluster, topic, 3, "read_committed")
    expected = sorted(f"t{i}" for i in range(60)) if committed else []
    assert sorted(v for vs in seen.values() for v in vs) == expected


KP_LOST_END_TXN = ("kafka-python 3.0.12 bug: when the coordinator's connection is refused, Sender._send_transactional"
                   "_request's exception path keeps target_node set, so the EndTxn is never re-queued after the new"
                   " FindCoordinator answer and commit_transaction() blocks forever")


@pytest.mark.parametrize("which", ["partition-leader",
                                   pytest.param("coordinator", marks=pytest.mark.skip(reason=KP_LOST_END_TXN))])
def test_kafka_python_broker_down_mid_transaction(cluster: MockCluster, which: str) -> None:
    from kafka.errors import KafkaError

    topic = new_topic(cluster, 3)
    tid = f"tx-{topic}"
    p = _kp_producer(cluster, transactional_id=tid, linger_ms=2, request_timeout_ms=5000)
    p.init_transactions()
    p.begin_transaction()
    for i in range(30):
        p.send(topic, f"t{i}".encode(), partition=i % 3)
    p.flush(DEADLINE)
    down = _victim(cluster, topic, tid, which)
    cluster.broker_down(down)
    try:
        for i in range(30, 60):
            p.send(topic, f"t{i}".encode(), partition=i % 3)
        committed = True
        try:
            p.commit_transaction()
        except KafkaError:
            p.abort_transaction()
            committed = False
        _all_or_nothing(cluster, topic, committed)
    finally:
        p.close(timeout=5)
        cluster.broker_up(down)
    assert committed


@pytest.mark.parametrize("which", ["partition-leader", "coordinator"])
def test_aiokafka_broker_down_mid_transaction(cluster: MockCluster, which: str) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError

    topic = new_topic(cluster, 3)
    tid = f"tx-{topic}"

    async def run() -> bool:
        p = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id=tid, linger_ms=2,
                             retry_backoff_ms=20)
        await p.start()
        try:
            await p.begin_transaction()
            sent = [await p.send(topic, f"t{i}".encode(), partition=i % 3) for i in range(30)]
            await asyncio.gather(*sent)
            await asyncio.to_thread(cluster.broker_down, _victim(cluster, topic, tid, which))
            sent = [await p.send(topic, f"t{i}".encode(), partition=i % 3) for i in range(30, 60)]
            try:
                await asyncio.gather(*sent)
                await p.commit_transaction()
                return True
            except KafkaError:
                await p.abort_transaction()
                return False
        finally:
            await p.stop()

    down = _victim(cluster, topic, tid, which)
    try:
        committed = asyncio.run(asyncio.wait_for(run(), DEADLINE))
        _all_or_nothing(cluster, topic, committed)
    finally:
        if down not in cluster.state.brokers:
            cluster.broker_up(down)
    assert committed


# -- 5. a record over max.message.bytes among small ones --------------------------------------------

@pytest.mark.parametrize("idempotent", [False, True])
def test_kafka_python_oversized_record_fails_alone(cluster: MockCluster, idempotent: bool) -> None:
    from kafka.errors import MessageSizeTooLargeError

    topic = new_topic(cluster, max_message_bytes=2000)
    big = b"B" * 5000
    sent = [*_vals("s", 5), big, *_vals("s", 5, 5)]
    p = _kp_producer(cluster, enable_idempotence=idempotent)
    outcomes: list[object] = []
    for v in sent:  # one record a batch: Kafka refuses a whole batch
        future = p.send(topic, v, partition=0)
        p.flush(DEADLINE)
        outcomes.append(type(future.exception) if future.failed() else None)
    p.close()
    if not idempotent:
        assert outcomes == [MessageSizeTooLargeError if v is big else None for v in sent]
        assert read_all(cluster, topic, 1, "read_uncommitted") == {0: [v.decode() for v in sent if v is not big]}
        return
    # kafka-python's behaviour, not Kafka's: an idempotent producer takes the refused batch as an abortable
    # error and fails every later record with it, unsent (the Java client bumps its epoch and goes on);
    # the broker saw one MESSAGE_TOO_LARGE and nothing after it
    assert outcomes == [None] * 5 + [MessageSizeTooLargeError] * 6
    assert read_all(cluster, topic, 1, "read_uncommitted") == {0: [v.decode() for v in sent[:5]]}


@pytest.mark.parametrize("idempotent", [False, True])
def test_aiokafka_oversized_record_fails_alone(cluster: MockCluster, idempotent: bool) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError, MessageSizeTooLargeError, OutOfOrderSequenceNumber

    topic = new_topic(cluster, max_message_bytes=2000)
    big = b"B" * 5000
    sent = [*_vals("s", 5), big, *_vals("s", 5, 5)]

    async def run() -> list[object]:
        p = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, enable_idempotence=idempotent,
                             retry_backoff_ms=20)
        await p.start()
        outcomes: list[object] = []
        try:
            for v in sent:
                try:
                    await p.send_and_wait(topic, v, partition=0)
                    outcomes.append(None)
                except KafkaError as exc:
                    outcomes.append(type(exc))
        finally:
            await p.stop()
        return outcomes

    outcomes = asyncio.run(asyncio.wait_for(run(), DEADLINE))
    if not idempotent:
        assert outcomes == [MessageSizeTooLargeError if v is big else None for v in sent]
        assert read_all(cluster, topic, 1, "read_uncommitted") == {0: [v.decode() for v in sent if v is not big]}
        return
    # aiokafka's behaviour, not the Java client's: it keeps the sequence number of the refused batch, so
    # the broker answers each later batch OUT_OF_ORDER_SEQUENCE_NUMBER, as Kafka does (a refused batch
    # never enters the producer state), and aiokafka neither bumps its epoch nor resets its sequence
    assert outcomes == [None] * 5 + [MessageSizeTooLargeError] + [OutOfOrderSequenceNumber] * 5
    assert read_all(cluster, topic, 1, "read_uncommitted") == {0: [v.decode() for v in sent[:5]]}
    refused = [e.errors for e in cluster.journal.entries(api="Produce")][-6:]
    assert refused == [["MESSAGE_TOO_LARGE"]] + [["OUT_OF_ORDER_SEQUENCE_NUMBER"]] * 5


# -- 6. a committed offset deleted by retention -----------------------------------------------------

@pytest.mark.parametrize("reset", ["earliest", "latest", "none"])
def test_kafka_python_committed_offset_removed_by_retention(cluster: MockCluster, reset: str) -> None:
    from kafka import TopicPartition
    from kafka.errors import OffsetOutOfRangeError

    group = f"g-ret-kp-{reset}"
    topic = topic_with_expired_head(cluster, group)
    tp = TopicPartition(topic, 0)
    c = _kp_consumer(cluster, group, auto_offset_reset=reset)
    try:
        c.assign([tp])
        if reset == "none":
            with pytest.raises(OffsetOutOfRangeError):
                _kp_poll(c, lambda v: bool(v))
            return
        if reset == "earliest":
            assert _kp_poll(c, lambda v: len(v) >= 5) == _vals("n", 5)  # from the new log start
            return
        _kp_poll(c, lambda v: c.position(tp) == 15)
        assert c.position(tp) == 15  # reset to the end
        _kp_produce(cluster, topic, _vals("m", 2))
        assert _kp_poll(c, lambda v: len(v) >= 2) == _vals("m", 2)
    finally:
        c.close()


@pytest.mark.parametrize("reset", ["earliest", "latest", "none"])
def test_aiokafka_committed_offset_removed_by_retention(cluster: MockCluster, reset: str) -> None:
    from aiokafka import TopicPartition
    from aiokafka.errors import OffsetOutOfRangeError

    group = f"g-ret-aio-{reset}"
    topic = topic_with_expired_head(cluster, group)
    tp = TopicPartition(topic, 0)

    async def run() -> list[bytes]:
        c = _aio_consumer(cluster, group, auto_offset_reset=reset)
        await c.start()
        try:
            c.assign([tp])
            if reset == "latest":
                got = await _aio_poll(c, lambda v: c.highwater(tp) == 15)
                assert got == [] and await c.position(tp) == 15  # reset to the end
                _kp_produce(cluster, topic, _vals("m", 2))
            return await _aio_poll(c, lambda v: len(v) >= (2 if reset == "latest" else 5))
        finally:
            await c.stop()

    if reset == "none":
        with pytest.raises(OffsetOutOfRangeError):
            asyncio.run(run())
        return
    assert asyncio.run(run()) == (_vals("m", 2) if reset == "latest" else _vals("n", 5))
