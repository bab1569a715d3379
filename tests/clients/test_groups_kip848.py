"""KIP-848 consumer groups with librdkafka (`group.protocol=consumer`): server-side assignment across
members, takeover when one leaves, committed offsets that survive, regex subscriptions picking up new
topics, the range assignor, and ConsumerGroupDescribe through the admin client."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from mockbroker.cluster import MockCluster
from tests.clients.test_groups import fill

pytestmark = pytest.mark.clients


def member(cluster: MockCluster, group: str, **conf: object) -> Consumer:
    return Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "group.protocol": "consumer",
                     "auto.offset.reset": "earliest", **conf})


Seen = list[tuple[str, int, int]]


def poll_until(consumers: list[Consumer], done: Callable[[Seen], bool], timeout: float = 20) -> Seen:
    """Poll every consumer until ``done(records seen so far)`` or the timeout."""
    seen: Seen = []
    deadline = time.monotonic() + timeout
    while not done(seen) and time.monotonic() < deadline:
        for c in consumers:
            m = c.poll(0.05)
            if m is not None and m.error() is None:
                seen.append((m.topic(), m.partition(), m.offset()))
    return seen


def counts(consumers: list[Consumer]) -> list[int]:
    return sorted(len(c.assignment()) for c in consumers)


def test_members_share_partitions_and_take_over_when_one_leaves() -> None:
    with MockCluster(brokers=3, topics={"orders": 6}) as cluster:
        fill(cluster, "orders", 600, 6)
        members = [member(cluster, "g") for _ in range(3)]
        for c in members:
            c.subscribe(["orders"])
        seen = poll_until(members, lambda seen: counts(members) == [2, 2, 2] and len(seen) >= 600)
        assert len(set(seen)) == 600
        owned = [tp.partition for c in members for tp in c.assignment()]
        assert sorted(owned) == list(range(6))
        group = cluster.state.groups.groups["g"].consumer
        assert group is not None and group.state_name() == "Stable"
        assert {m.epoch for m in group.members.values()} == {group.assignment_epoch}
        for c in members:
            c.commit(asynchronous=False)
        members[0].close()
        rest = members[1:]
        poll_until(rest, lambda _: counts(rest) == [3, 3], timeout=10)
        assert counts(rest) == [3, 3]
        for c in rest:
            c.close()
        assert cluster.state.groups.groups["g"].consumer.members == {}
        fill(cluster, "orders", 60, 6)  # ten more per partition
        late = member(cluster, "g")
        late.subscribe(["orders"])
        more = poll_until([late], lambda got: len(got) >= 60)
        late.close()
    assert len(more) == 60 and min(offset for _, _, offset in more) == 100  # resumed from the commits


def test_regex_subscription_picks_up_new_topics() -> None:
    with MockCluster(brokers=1, topics={"metrics.a": 2, "other": 2}) as cluster:
        fill(cluster, "metrics.a", 20, 2)
        fill(cluster, "other", 20, 2)
        c = member(cluster, "rx", **{"topic.metadata.refresh.interval.ms": 500})
        c.subscribe(["^metrics\\..*"])
        seen = poll_until([c], lambda got: len(got) >= 20)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("metrics.b", 2, 1)])["metrics.b"].result(10)
        fill(cluster, "metrics.b", 20, 2)
        more = poll_until([c], lambda got: len(got) >= 20, timeout=15)
        c.close()
        described = cluster.state.groups.groups["rx"].consumer
        assert described is not None
    assert {t for t, _, _ in seen} == {"metrics.a"}
    assert {t for t, _, _ in more} == {"metrics.b"} and len(more) == 20


def test_range_assignor() -> None:
    with MockCluster(brokers=1, topics={"a": 3, "b": 3}) as cluster:
        members = [member(cluster, "rg", **{"group.remote.assignor": "range"}) for _ in range(2)]
        for c in members:
            c.subscribe(["a", "b"])
        poll_until(members, lambda _: counts(members) == [2, 4])  # range: 2 of each topic, then 1 of each
        group = cluster.state.groups.groups["rg"].consumer
        assert group is not None and group.assignor == "range"
        ranges = sorted(sorted((tp.topic, tp.partition) for tp in c.assignment()) for c in members)
        for c in members:
            c.close()
    assert ranges == [[("a", 0), ("a", 1), ("b", 0), ("b", 1)], [("a", 2), ("b", 2)]]


def test_describe_consumer_group_with_admin_client() -> None:
    with MockCluster(brokers=3, topics={"orders": 4}) as cluster:
        members = [member(cluster, "dg") for _ in range(2)]
        for c in members:
            c.subscribe(["orders"])
        poll_until(members, lambda _: counts(members) == [2, 2])
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        listed = admin.list_consumer_groups().result(10)
        described = admin.describe_consumer_groups(["dg"])["dg"].result(10)
        for c in members:
            c.close()
    assert "dg" in {g.group_id for g in listed.valid}
    assert len(described.members) == 2
    assert sorted(tp.partition for m in described.members for tp in m.assignment.topic_partitions) == [0, 1, 2, 3]
