"""Consumer groups (classic protocol) with real clients: balanced assignment, rebalance when a
member leaves, committed offsets that a new member resumes from."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaException, Producer

from mockbroker.cluster import MockCluster

pytestmark = pytest.mark.clients


def fill(cluster: MockCluster, topic: str, count: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5})
    for i in range(count):
        p.produce(topic, f"v{i}".encode(), partition=i % partitions)
    assert p.flush(10) == 0


def consumer(cluster: MockCluster, group: str, **conf: object) -> Consumer:
    return Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                     "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                     "heartbeat.interval.ms": 200, **conf})


def poll_until(consumers: list[Consumer], done: Callable[[list], bool], timeout: float = 20) -> list:
    seen = []
    deadline = time.monotonic() + timeout
    while not done(seen) and time.monotonic() < deadline:
        for c in consumers:
            m = c.poll(0.05)
            if m is not None and m.error() is None:
                seen.append((m.partition(), m.offset()))
    return seen


def test_confluent_group_balances_and_rebalances_on_leave() -> None:
    with MockCluster(brokers=3, topics={"orders": 6}) as cluster:
        fill(cluster, "orders", 600, 6)
        members = [consumer(cluster, "g") for _ in range(3)]
        for c in members:
            c.subscribe(["orders"])
        seen = poll_until(members, lambda s: len(s) >= 600)
        assert len(seen) == 600 and len(set(seen)) == 600
        assert sorted(len(c.assignment()) for c in members) == [2, 2, 2]
        members[0].close()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and sorted(len(c.assignment()) for c in members[1:]) != [3, 3]:
            poll_until(members[1:], lambda s: False, timeout=0.2)
        assert sorted(len(c.assignment()) for c in members[1:]) == [3, 3]
        for c in members[1:]:
            c.close()


def test_committed_offsets_survive_and_a_new_member_resumes() -> None:
    with MockCluster(brokers=1, topics={"t": 2}) as cluster:
        fill(cluster, "t", 100, 2)
        first = consumer(cluster, "resume", **{"enable.auto.commit": False})
        first.subscribe(["t"])
        seen = poll_until([first], lambda s: len(s) >= 100)
        assert len(seen) == 100
        first.commit(asynchronous=False)
        first.close()
        fill(cluster, "t", 10, 2)
        second = consumer(cluster, "resume")
        second.subscribe(["t"])
        later = poll_until([second], lambda s: len(s) >= 10)
        second.close()
        assert sorted(later) == [(p, o) for p in (0, 1) for o in range(50, 55)]


def test_kafka_python_group_consumer() -> None:
    from kafka import KafkaConsumer

    with MockCluster(brokers=2, topics={"kp": 4}) as cluster:
        fill(cluster, "kp", 400, 4)
        c = KafkaConsumer("kp", bootstrap_servers=cluster.bootstrap_servers, group_id="kp-group",
                          auto_offset_reset="earliest", consumer_timeout_ms=10_000)
        try:
            got = 0
            for _ in c:
                got += 1
                if got == 400:
                    break
            assert got == 400
            c.commit()
        finally:
            c.close()
        assert len(cluster.state.groups.committed_all("kp-group")) == 4


async def test_aiokafka_group_consumer() -> None:
    from aiokafka import AIOKafkaConsumer

    async with MockCluster(brokers=2, topics={"aio": 4}) as cluster:
        await asyncio.to_thread(fill, cluster, "aio", 400, 4)
        c = AIOKafkaConsumer("aio", bootstrap_servers=cluster.bootstrap_servers, group_id="aio-group",
                             auto_offset_reset="earliest")
        await c.start()
        try:
            got = 0
            async with asyncio.timeout(20):
                while got < 400:
                    batches = await c.getmany(timeout_ms=500)
                    got += sum(len(v) for v in batches.values())
            assert got == 400
            await c.commit()
        finally:
            await c.stop()
        assert len(cluster.state.groups.committed_all("aio-group")) == 4


def test_confluent_admin_lists_describes_and_deletes_groups() -> None:
    from confluent_kafka.admin import AdminClient

    with MockCluster(brokers=3, topics={"adm": 2}) as cluster:
        fill(cluster, "adm", 20, 2)
        member = consumer(cluster, "watched")
        member.subscribe(["adm"])
        assert len(poll_until([member], lambda s: len(s) >= 20)) == 20
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        listed = admin.list_consumer_groups().result(10)
        assert [g.group_id for g in listed.valid] == ["watched"]
        described = admin.describe_consumer_groups(["watched"])["watched"].result(10)
        assert str(described.state).endswith("STABLE") and len(described.members) == 1
        assert {tp.partition for tp in described.members[0].assignment.topic_partitions} == {0, 1}
        with pytest.raises(KafkaException, match="NON_EMPTY_GROUP"):
            admin.delete_consumer_groups(["watched"])["watched"].result(10)
        member.commit(asynchronous=False)
        member.close()
        admin.delete_consumer_groups(["watched"])["watched"].result(10)
        assert "watched" not in cluster.state.groups.groups


def test_cooperative_sticky_rebalances_incrementally() -> None:
    with MockCluster(brokers=1, topics={"orders": 6}) as cluster:
        revoked: list[list[int]] = []

        def on_revoke(_c: Consumer, parts: list) -> None:
            revoked.append(sorted(p.partition for p in parts))

        first = consumer(cluster, "coop", **{"partition.assignment.strategy": "cooperative-sticky"})
        first.subscribe(["orders"], on_revoke=on_revoke)
        poll_until([first], lambda _: len(first.assignment()) == 6, timeout=10)
        assert len(first.assignment()) == 6
        second = consumer(cluster, "coop", **{"partition.assignment.strategy": "cooperative-sticky"})
        second.subscribe(["orders"])
        poll_until([first, second], lambda _: sorted([len(first.assignment()), len(second.assignment())]) == [3, 3],
                   timeout=15)
        kept = sorted(p.partition for p in first.assignment())
        assert len(kept) == 3 and len(second.assignment()) == 3
        assert revoked and all(len(r) == 3 for r in revoked)  # only the partitions that moved were revoked
        assert sorted(revoked[0] + kept) == list(range(6))
        first.close()
        second.close()


def test_static_member_restart_keeps_its_partitions_without_a_rebalance() -> None:
    with MockCluster(brokers=1, topics={"orders": 4}) as cluster:
        static = {"session.timeout.ms": 6000}
        a = consumer(cluster, "static", **{"group.instance.id": "a", **static})
        b = consumer(cluster, "static", **{"group.instance.id": "b", **static})
        for c in (a, b):
            c.subscribe(["orders"])
        poll_until([a, b], lambda _: len(a.assignment()) == 2 and len(b.assignment()) == 2, timeout=15)
        group = cluster.state.groups.groups["static"]
        leader_instance = group.members[group.leader].group_instance_id
        follower, other = (b, a) if leader_instance == "a" else (a, b)
        follower_id = "b" if leader_instance == "a" else "a"
        kept = sorted(p.partition for p in follower.assignment())
        generation = group.generation
        follower.close()  # a static member leaves no LeaveGroup behind
        assert len(group.members) == 2
        back = consumer(cluster, "static", **{"group.instance.id": follower_id, **static})
        back.subscribe(["orders"])
        poll_until([back, other], lambda _: len(back.assignment()) == 2, timeout=15)
        assert sorted(p.partition for p in back.assignment()) == kept
        assert group.generation == generation  # no rebalance happened
        back.close()
        other.close()


def test_offset_delete_with_kafka_python_admin() -> None:
    from kafka import TopicPartition as KTP
    from kafka.admin import KafkaAdminClient
    from kafka.errors import GroupSubscribedToTopicError, NoError

    with MockCluster(brokers=3, topics={"orders": 2, "other": 1}) as cluster:
        fill(cluster, "orders", 20, 2)
        fill(cluster, "other", 10, 1)
        state = cluster.state.groups
        # an admin commit for a topic nobody reads, made while the group has no members (a simple commit into
        # a group with members is refused: ILLEGAL_GENERATION)
        state.commit("od", "", -1, [("other", 0, 7, -1, None)])
        c = consumer(cluster, "od")
        c.subscribe(["orders"])
        poll_until([c], lambda seen: len(seen) >= 20)
        c.commit(asynchronous=False)
        assert state.committed("od", "other", 0)[0] == 7
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            result = admin.delete_group_offsets("od", [KTP("orders", 0), KTP("other", 0)])
            assert result[KTP("orders", 0)] is GroupSubscribedToTopicError
            assert result[KTP("other", 0)] is NoError
            assert state.committed("od", "other", 0)[0] == -1 and state.committed("od", "orders", 0)[0] == 10
            c.close()
            result = admin.delete_group_offsets("od", [KTP("orders", 0)])  # nobody subscribed any more
            assert result[KTP("orders", 0)] is NoError
            assert state.committed("od", "orders", 0)[0] == -1 and state.committed("od", "orders", 1)[0] == 10
        finally:
            admin.close()
