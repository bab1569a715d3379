"""Fault rules and cluster actions with confluent-kafka reacting as it does to Kafka: retries after
NOT_LEADER_OR_FOLLOWER and a leader move, duplicates from drop-after-handling only without idempotence,
backing off when throttled, consumers surviving a broker loss, and the journal recording it all."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from mockbroker.cluster import MockCluster
from tests.clients.test_transactions_confluent import read_all

pytestmark = pytest.mark.clients


def producer(cluster: MockCluster, **conf: object) -> Producer:
    return Producer({"bootstrap.servers": cluster.bootstrap_servers, "retry.backoff.ms": 20, "linger.ms": 1, **conf})


def test_not_leader_then_a_leader_move_is_retried() -> None:
    with MockCluster(brokers=3, topics={"t": 1}) as cluster:
        log = cluster.state.topics["t"].partitions[0]
        p = producer(cluster)
        p.produce("t", b"warm", partition=0)
        assert p.flush(10) == 0
        old = log.leader
        rule = cluster.add_fault(api="Produce", broker=old, error="NOT_LEADER_OR_FOLLOWER", times=None)
        cluster.move_leader("t", 0)
        p.produce("t", b"moved", partition=0)
        assert p.flush(15) == 0
        assert log.leader != old and log.leader_epoch == 1
        assert read_all(cluster, "t", 1, "read_uncommitted") == {0: ["warm", "moved"]}
        refused = [e for e in cluster.journal.entries(api="Produce") if rule.id in e.faults]
        assert all(e.errors == ["NOT_LEADER_OR_FOLLOWER"] and e.broker == old for e in refused)


@pytest.mark.parametrize("idempotent", [False, True])
def test_drop_after_handling_duplicates_only_without_idempotence(idempotent: bool) -> None:
    with MockCluster(brokers=1, topics={"t": 1}) as cluster:
        rule = cluster.add_fault(api="Produce", action="drop_after", times=2)
        p = producer(cluster, **{"enable.idempotence": idempotent, "max.in.flight.requests.per.connection": 1})
        for i in range(5):
            p.produce("t", f"v{i}".encode(), partition=0)
            assert p.flush(15) == 0
        assert rule.hits == 2
        values = read_all(cluster, "t", 1, "read_uncommitted")[0]
    if idempotent:
        assert values == [f"v{i}" for i in range(5)]
    else:
        assert len(values) == 7 and sorted(set(values)) == [f"v{i}" for i in range(5)]  # two retried twice


def test_throttled_client_backs_off() -> None:
    events: list[int] = []
    with MockCluster(brokers=1, topics={"t": 1}) as cluster:
        p = producer(cluster, throttle_cb=lambda e: events.append(e.throttle_time))
        p.produce("t", b"warm", partition=0)
        assert p.flush(10) == 0
        cluster.add_fault(api="Produce", action="throttle", throttle_ms=600, times=1)
        p.produce("t", b"one", partition=0)
        assert p.flush(10) == 0
        started = time.monotonic()
        p.produce("t", b"two", partition=0)
        assert p.flush(10) == 0
        waited = time.monotonic() - started
        p.poll(0.1)
        produced = cluster.journal.entries(api="Produce")
    assert events and events[0] >= 0.5  # librdkafka reports the throttle time (seconds)
    assert waited > 0.3  # the next request waited out the throttle
    assert produced[-1].time_ms - produced[-2].time_ms >= 500


def test_consumer_survives_a_broker_loss() -> None:
    with MockCluster(brokers=3, topics={"t": 3}) as cluster:
        p = producer(cluster)
        for i in range(30):
            p.produce("t", f"a{i}".encode(), partition=i % 3)
        assert p.flush(10) == 0
        c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "survivor",
                      "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 500})
        c.subscribe(["t"])
        seen: list[str] = []
        deadline = time.monotonic() + 20
        while len(seen) < 30 and time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                seen.append(m.value().decode())
        victim = cluster.state.topics["t"].partitions[0].leader
        cluster.broker_down(victim)
        assert victim not in cluster.state.brokers
        for i in range(30):
            p.produce("t", f"b{i}".encode(), partition=i % 3)
        assert p.flush(20) == 0
        deadline = time.monotonic() + 30
        while len(seen) < 60 and time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                seen.append(m.value().decode())
        c.close()
        cluster.broker_up(victim)
        assert victim in cluster.state.brokers
    assert sorted(seen) == sorted([f"a{i}" for i in range(30)] + [f"b{i}" for i in range(30)])


def test_corrupt_crc_is_caught_by_the_consumer() -> None:
    with MockCluster(brokers=1, topics={"t": 1}) as cluster:
        p = producer(cluster)
        p.produce("t", b"x", partition=0)
        assert p.flush(10) == 0
        rule = cluster.add_fault(api="Fetch", action="corrupt_crc", times=1)
        c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "crc", "check.crcs": True,
                      "enable.partition.eof": False})
        c.assign([TopicPartition("t", 0, 0)])
        errors = []
        got = []
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is None:
                continue
            if m.error() is not None:
                errors.append(m.error().code())
            else:
                got.append(m.value())
        c.close()
    assert rule.hits == 1
    assert KafkaError._BAD_MSG in errors  # librdkafka noticed the bad CRC ...
    assert got == [b"x"]  # ... and read the record on the next, clean fetch


def test_no_reply_and_drop_before_make_the_client_reconnect() -> None:
    with MockCluster(brokers=1, topics={"t": 1}) as cluster:
        hang = cluster.add_fault(api="Produce", action="no_reply", times=1)
        drop = cluster.add_fault(api="Produce", action="drop_before", nth=2, times=1)
        p = producer(cluster, **{"socket.timeout.ms": 1000, "message.timeout.ms": 20000})
        p.produce("t", b"once", partition=0)
        assert p.flush(20) == 0
        values = read_all(cluster, "t", 1, "read_uncommitted")[0]
    assert hang.hits == 1 and drop.hits == 1
    assert values == ["once"]  # neither fault let the request be handled


def test_added_and_removed_brokers_are_followed_by_clients() -> None:
    with MockCluster(brokers=2, topics={"t": 1}) as cluster:
        p = producer(cluster)
        p.produce("t", b"before", partition=0)
        assert p.flush(10) == 0
        new = cluster.add_broker()
        assert len(p.list_topics(timeout=10).brokers) == 3
        cluster.move_leader("t", 0, new)  # the producer finds the new broker through Metadata
        p.produce("t", b"on the new broker", partition=0)
        assert p.flush(15) == 0
        assert cluster.journal.entries(api="Produce", broker=new)
        cluster.remove_broker(new)  # its partition moves back to a live broker
        assert new not in p.list_topics(timeout=10).brokers
        p.produce("t", b"after", partition=0)
        assert p.flush(15) == 0
        assert read_all(cluster, "t", 1, "read_uncommitted") == {0: ["before", "on the new broker", "after"]}
