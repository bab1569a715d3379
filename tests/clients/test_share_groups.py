"""Share groups (KIP-932) with confluent-kafka's ShareConsumer (librdkafka 2.16: ShareGroupHeartbeat,
ShareFetch and ShareAcknowledge v1): records shared by members and accepted once, RELEASE redelivering
with a higher delivery count, REJECT and the delivery limit archiving, acquisition locks expiring on the
cluster's clock, a silent member losing its assignment, implicit acknowledgement, and
share.auto.offset.reset set on the group through the AdminClient."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Message, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from mockbroker.cluster import MockCluster
from mockbroker.protocol import api
from mockbroker.state.clock import ManualClock
from tests.broker.wire import WireClient

pytestmark = pytest.mark.clients

Seen = list[Message]


def share_consumer(cluster: MockCluster, group: str, explicit: bool = True, **conf: object) -> ShareConsumer:
    consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                              "share.acknowledgement.mode": "explicit" if explicit else "implicit", **conf})
    return consumer


def set_group_config(cluster: MockCluster, group: str, name: str, value: str) -> None:
    """A GROUP config set the way an application sets it: IncrementalAlterConfigs from the AdminClient."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(10)


def produce(cluster: MockCluster, topic: str, count: int, partitions: int = 1) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 2})
    for i in range(count):
        p.produce(topic, f"v{i}".encode(), partition=i % partitions)
    assert p.flush(10) == 0


def poll_until(consumers: list[ShareConsumer], done: Callable[[Seen], bool], timeout: float = 20,
               ack: Callable[[ShareConsumer, Message], None] | None = None) -> Seen:
    """Poll every consumer until ``done(records seen so far)``; ``ack`` acknowledges each record polled."""
    seen: Seen = []
    deadline = time.monotonic() + timeout
    while not done(seen) and time.monotonic() < deadline:
        for c in consumers:
            for m in c.poll(0.1):
                if m.error() is not None:
                    continue
                seen.append(m)
                if ack is not None:
                    ack(c, m)
    return seen


def accept(consumer: ShareConsumer, message: Message) -> None:
    consumer.acknowledge(message, AcknowledgeType.ACCEPT)


def records(cluster: MockCluster, group: str, topic: str, partition: int = 0) -> dict[int, tuple[int, int]]:
    """offset -> (state, delivery count) of the share-partition's in-flight records, read on the broker's loop."""
    def read() -> dict[int, tuple[int, int]]:
        sp = cluster.state.share.partitions.get((group, topic, partition))
        return {} if sp is None else {r["offset"]: (r["state"], r["delivery_count"]) for r in sp.state()["records"]}
    return cluster.call(read)


def wait_for(check: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@contextmanager
def running(**cluster_args: Any) -> Iterator[tuple[MockCluster, list[ShareConsumer]]]:
    """A cluster and the share consumers a test makes, closed before the cluster stops (a consumer closing
    after its broker went waits for its socket timeout)."""
    with MockCluster(**cluster_args) as cluster:
        consumers: list[ShareConsumer] = []
        try:
            yield cluster, consumers
        finally:
            for c in consumers:
                c.close()


def test_two_members_accept_every_record_exactly_once() -> None:
    with running(topics={"jobs": 2}) as (cluster, closing):
        set_group_config(cluster, "workers", "share.auto.offset.reset", "earliest")
        produce(cluster, "jobs", 200, 2)
        closing += [share_consumer(cluster, "workers") for _ in range(2)]
        for c in closing:
            c.subscribe(["jobs"])
        seen = poll_until(closing, lambda s: len(s) >= 200, ack=accept)
        for c in closing:
            c.commit_sync(10)
        keys = [(m.partition(), m.offset()) for m in seen]
        assert len(keys) == 200 and len(set(keys)) == 200
        assert {m.delivery_count() for m in seen} == {1}
        for partition in (0, 1):
            assert set(records(cluster, "workers", "jobs", partition).values()) <= {("ACKNOWLEDGED", 1)}
            state = cluster.call(lambda p=partition: cluster.state.share.partitions.get(("workers", "jobs", p)))
            assert state is not None and state.start_offset == 100  # every record done: the start moved past them
        members = cluster.call(lambda: cluster.state.share.groups.describe("workers")).members
        assert len(members) == 2


def test_released_record_comes_back_with_delivery_count_2_and_rejected_never() -> None:
    with running(topics={"jobs": 1}) as (cluster, closing):
        set_group_config(cluster, "g", "share.auto.offset.reset", "earliest")
        produce(cluster, "jobs", 3)
        consumer = share_consumer(cluster, "g")
        closing.append(consumer)
        consumer.subscribe(["jobs"])
        first = poll_until([consumer], lambda s: len(s) >= 3)
        assert [(m.offset(), m.delivery_count()) for m in first] == [(0, 1), (1, 1), (2, 1)]
        consumer.acknowledge(first[0], AcknowledgeType.RELEASE)
        consumer.acknowledge(first[1], AcknowledgeType.REJECT)
        consumer.acknowledge(first[2], AcknowledgeType.ACCEPT)
        again = poll_until([consumer], lambda s: len(s) >= 1)
        assert [(m.offset(), m.delivery_count(), m.value()) for m in again] == [(0, 2, b"v0")]
        consumer.acknowledge(again[0], AcknowledgeType.ACCEPT)
        consumer.commit_sync(10)
        assert poll_until([consumer], lambda s: False, timeout=1.5) == []  # the rejected record never returns
        assert records(cluster, "g", "jobs") == {}  # all three done: SPSO moved past them
        sp = cluster.call(lambda: cluster.state.share.partitions.get(("g", "jobs", 0)))
        assert sp is not None and sp.start_offset == 3


def test_unacknowledged_record_returns_when_its_lock_expires_on_the_cluster_clock() -> None:
    clock = ManualClock(int(time.time() * 1000))
    with running(topics={"jobs": 1}, clock=clock) as (cluster, closing):
        set_group_config(cluster, "g", "share.auto.offset.reset", "earliest")
        produce(cluster, "jobs", 1)
        holder = share_consumer(cluster, "g")
        closing.append(holder)
        holder.subscribe(["jobs"])
        got = poll_until([holder], lambda s: len(s) >= 1)
        assert [(m.offset(), m.delivery_count()) for m in got] == [(0, 1)]
        assert records(cluster, "g", "jobs") == {0: ("ACQUIRED", 1)}
        cluster.call(clock.advance, 30_001)  # share.record.lock.duration.ms: 30 s, no real wait
        wait_for(lambda: records(cluster, "g", "jobs") == {0: ("AVAILABLE", 1)})
        other = share_consumer(cluster, "g")
        closing.append(other)
        other.subscribe(["jobs"])
        back = poll_until([other], lambda s: len(s) >= 1)
        assert [(m.offset(), m.delivery_count()) for m in back] == [(0, 2)]


def test_record_released_past_the_delivery_limit_is_archived() -> None:
    with running(topics={"jobs": 1}, config={"group.share.delivery.count.limit": 2}) as (cluster, closing):
        set_group_config(cluster, "g", "share.auto.offset.reset", "earliest")
        produce(cluster, "jobs", 1)
        consumer = share_consumer(cluster, "g")
        closing.append(consumer)
        consumer.subscribe(["jobs"])
        counts = []
        for _ in range(2):
            got = poll_until([consumer], lambda s: len(s) >= 1)
            assert len(got) == 1
            counts.append(got[0].delivery_count())
            consumer.acknowledge(got[0], AcknowledgeType.RELEASE)
        consumer.commit_sync(10)
        assert counts == [1, 2]
        assert poll_until([consumer], lambda s: False, timeout=1.5) == []
        sp = cluster.call(lambda: cluster.state.share.partitions.get(("g", "jobs", 0)))
        assert sp is not None and sp.start_offset == 1  # archived: the start moved past it


def test_silent_member_loses_its_assignment_to_the_others() -> None:
    clock = ManualClock(int(time.time() * 1000))
    with running(topics={"jobs": 2}, clock=clock) as (cluster, closing):
        set_group_config(cluster, "g", "share.auto.offset.reset", "earliest")
        produce(cluster, "jobs", 10, 2)
        live = share_consumer(cluster, "g")
        closing.append(live)
        live.subscribe(["jobs"])
        poll_until([live], lambda s: len(s) >= 10, ack=accept)
        live.commit_sync(10)
        # a second member joins with one ShareGroupHeartbeat over its own socket and then falls silent
        with WireClient(int(cluster.bootstrap_servers.rsplit(":", 1)[1])) as wire:
            silent = wire.call(76, 1, api.request_module(76).ShareGroupHeartbeatRequest(
                group_id="g", member_id="silent-member", member_epoch=0, rack_id=None, subscribed_topic_names=["jobs"]))
        assert silent.error_code == 0 and [len(t.partitions) for t in silent.assignment.topic_partitions] == [1]

        def members() -> set[str]:
            return {m.member_id for m in cluster.call(lambda: cluster.state.share.groups.describe("g")).members}

        assert "silent-member" in members()
        cluster.call(clock.advance, 45_001)  # share.session.timeout.ms passes without a heartbeat from it
        wait_for(lambda: "silent-member" not in members())
        produce(cluster, "jobs", 10, 2)
        got = poll_until([live], lambda s: len(s) >= 10, ack=accept)
        assert sorted({m.partition() for m in got}) == [0, 1]  # the live member has both partitions again


def test_implicit_mode_accepts_on_the_next_poll() -> None:
    with running(topics={"jobs": 1}) as (cluster, closing):
        set_group_config(cluster, "g", "share.auto.offset.reset", "earliest")
        produce(cluster, "jobs", 5)
        consumer = share_consumer(cluster, "g", explicit=False)
        closing.append(consumer)
        consumer.subscribe(["jobs"])
        got = poll_until([consumer], lambda s: len(s) >= 5)
        assert [m.offset() for m in got] == [0, 1, 2, 3, 4]
        assert set(records(cluster, "g", "jobs").values()) == {("ACQUIRED", 1)}
        consumer.poll(0.5)  # the next poll carries the ACCEPTs of the records the last one returned
        wait_for(lambda: records(cluster, "g", "jobs") == {})
        sp = cluster.call(lambda: cluster.state.share.partitions.get(("g", "jobs", 0)))
        assert sp is not None and sp.start_offset == 5


def test_auto_offset_reset_latest_by_default_and_earliest_through_the_admin_client() -> None:
    with running(topics={"old": 1, "also-old": 1}) as (cluster, closing):
        produce(cluster, "old", 3)
        produce(cluster, "also-old", 3)
        latest = share_consumer(cluster, "by-default")
        closing.append(latest)
        latest.subscribe(["old"])
        assert poll_until([latest], lambda s: False, timeout=2) == []  # latest: what was there is skipped
        set_group_config(cluster, "from-start", "share.auto.offset.reset", "earliest")
        earliest = share_consumer(cluster, "from-start")
        closing.append(earliest)
        earliest.subscribe(["also-old"])
        got = poll_until([earliest], lambda s: len(s) >= 3, ack=accept)
        assert [m.value() for m in got] == [b"v0", b"v1", b"v2"]


def test_read_committed_share_group_never_delivers_aborted_records() -> None:
    with running(topics={"jobs": 1}) as (cluster, closing):
        set_group_config(cluster, "g", "share.auto.offset.reset", "earliest")
        set_group_config(cluster, "g", "share.isolation.level", "read_committed")
        txn = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "t1"})
        txn.init_transactions(10)
        for outcome, values in (("abort", [b"a0", b"a1"]), ("commit", [b"c0", b"c1"])):
            txn.begin_transaction()
            for value in values:
                txn.produce("jobs", value, partition=0)
            txn.flush(10)
            txn.abort_transaction(10) if outcome == "abort" else txn.commit_transaction(10)
        open_txn = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "t2"})
        open_txn.init_transactions(10)
        open_txn.begin_transaction()
        open_txn.produce("jobs", b"pending", partition=0)  # still open: past the last stable offset
        open_txn.flush(10)
        consumer = share_consumer(cluster, "g")
        closing.append(consumer)
        consumer.subscribe(["jobs"])
        got = poll_until([consumer], lambda s: False, timeout=2, ack=accept)
        assert [m.value() for m in got] == [b"c0", b"c1"]
        open_txn.commit_transaction(10)
        more = poll_until([consumer], lambda s: len(s) >= 1, ack=accept)
        assert [m.value() for m in more] == [b"pending"]
