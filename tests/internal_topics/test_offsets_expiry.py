"""Committed offsets expire as in Kafka (state.offsets_expiry), each with an OffsetCommit tombstone in
``__consumer_offsets``: a simple group's after ``offsets.retention.minutes`` from the commit, an empty
classic group's from when it became empty (then the group goes, its GroupMetadata tombstoned), never a
stable group's subscribed topics nor an offset an open transaction holds."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from mockbroker.cluster import MockCluster
from mockbroker.errors import KafkaError
from mockbroker.state import offsets_records as recs
from mockbroker.state.clock import ManualClock
from mockbroker.state.cluster import ClusterState
from mockbroker.state.internal_topics import CONSUMER_OFFSETS, partition_for
from mockbroker.state.offsets_expiry import expire_offsets
from mockbroker.state.offsets_replay import live_records
from tests.internal_topics.offsets_bytes import group_key, offsets_of, read_offsets_topic

MINUTE = 60_000


def _state() -> tuple[ClusterState, ManualClock]:
    clock = ManualClock()
    state = ClusterState({"offsets.retention.minutes": 10, "offsets.retention.check.interval.ms": 1000}, clock)
    state.create_topic("t", 2)
    return state, clock


def test_a_simple_groups_offsets_expire_from_their_commit_and_the_group_goes() -> None:
    state, clock = _state()
    groups = state.groups
    groups.store("simple", [("t", 0, 5, -1, "")])
    clock.advance(5 * MINUTE)
    groups.store("simple", [("t", 1, 7, -1, "")])
    clock.advance(5 * MINUTE)
    assert expire_offsets(groups, clock.now_ms(), 10 * MINUTE) == []
    assert groups.committed_all("simple") == {("t", 1): (7, -1, "")}  # t-0 expired, t-1 is 5 minutes old
    clock.advance(5 * MINUTE)
    assert expire_offsets(groups, clock.now_ms(), 10 * MINUTE) == ["simple"]
    assert "simple" not in groups.groups
    log = state.topics[CONSUMER_OFFSETS].partitions[partition_for("simple", 50)]
    assert live_records(log) == {}  # every record of the group tombstoned


def test_an_expire_timestamp_wins_and_open_transactions_and_subscribed_topics_keep_theirs() -> None:
    state, clock = _state()
    groups = state.groups
    now = clock.now_ms()
    groups.store("g", [("t", 0, 1, -1, "")], expire_ms=now + MINUTE)  # OffsetCommit v2-4 retention: 1 minute
    groups.store("g", [("t", 1, 2, -1, "")])
    groups.store_pending("g", 9, [("t", 1, 3, -1, "")])  # an open transaction holds t-1 too
    clock.advance(2 * MINUTE)
    expire_offsets(groups, clock.now_ms(), 10 * MINUTE)
    assert set(groups.committed_all("g")) == {("t", 1)}
    clock.advance(20 * MINUTE)
    expire_offsets(groups, clock.now_ms(), 10 * MINUTE)
    assert set(groups.committed_all("g")) == {("t", 1)} and "g" in groups.groups  # held by the transaction


def test_expired_offsets_are_tombstones_a_client_reads_and_offset_fetch_forgets_them() -> None:
    clock = ManualClock(int(time.time() * 1000))
    config = {"offsets.retention.minutes": 1, "offsets.retention.check.interval.ms": 100,
              "group.initial.rebalance.delay.ms": 0}
    with MockCluster(topics={"t": 1}, config=config, clock=clock) as cluster:
        bootstrap = cluster.bootstrap_servers
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "classic-gone", "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        try:
            c.subscribe(["t"])
            deadline = time.monotonic() + 20
            while not c.assignment() and time.monotonic() < deadline:
                c.poll(0.2)
            c.commit(offsets=[TopicPartition("t", 0, 3)], asynchronous=False)
        finally:
            c.close()  # the group turns empty now: its offsets count from here
        cluster.call(clock.advance, 2 * MINUTE)
        deadline = time.monotonic() + 10
        while "classic-gone" in cluster.state.groups.groups and time.monotonic() < deadline:
            time.sleep(0.05)  # the ticker's next tick (it runs on real time) expires them
        reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "classic-gone"})
        try:
            (got,) = reader.committed([TopicPartition("t", 0)], timeout=10)
        finally:
            reader.close()
        records = read_offsets_topic(bootstrap)
    assert got.offset < 0  # nothing committed any more
    assert offsets_of(records)[("classic-gone", "t", 0)][-1][1] is None
    group_records = [r for r in records if group_key(r.key) == "classic-gone"]
    assert group_records[-1].record_type == recs.GROUP_METADATA and group_records[-1].value is None


@pytest.mark.parametrize(("config", "message"), [
    ({"offsets.retention.minutes": 0}, "at least 1"),
    ({"offsets.retention.minute": 5}, "did you mean 'offsets.retention.minutes'"),
])
def test_a_wrong_retention_setting_is_refused_naming_it(config: dict[str, int], message: str) -> None:
    with pytest.raises(KafkaError, match=message):  # (the cluster's way with every broker config)
        MockCluster(config=config)
