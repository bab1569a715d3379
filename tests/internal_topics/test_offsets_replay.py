"""Rebuilding the group coordinator from ``__consumer_offsets`` (state.offsets_replay, run by
coordinator_load.load_all): records written by real clients into one MockCluster, copied byte for byte
into a fresh state, give back the committed offsets, the classic and the KIP-848 groups; a cluster built
that way answers OffsetFetch, lets a KIP-848 consumer resume, and tombstones what it deletes; the cleaner
keeps the newest record per key and drops tombstones after delete.retention.ms, and the compacted log
rebuilds the same offsets."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from mockbroker.cluster import MockCluster
from mockbroker.state.cluster import ClusterState
from mockbroker.state.compaction import compact_log
from mockbroker.state.internal_topics import CONSUMER_OFFSETS, partition_for
from mockbroker.state.offsets_replay import live_records
from tests.internal_topics.offsets_bytes import group_key, offsets_of, read_offsets_topic
from tests.internal_topics.prefilled import cluster_from, rebuilt_state

pytestmark = pytest.mark.clients
CONFIG = {"group.initial.rebalance.delay.ms": 0}


def _fill(bootstrap: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(8):
        p.produce("t", f"v{i}".encode(), partition=i % 2)
    assert p.flush(10) == 0


def _member(bootstrap: str, group: str, protocol: str) -> Consumer:
    """A consumer of ``group`` that read all 8 records and committed (t-0: 4 with metadata, t-1: 3): left open."""
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    c = Consumer(conf)
    c.subscribe(["t"])
    seen, deadline = 0, time.monotonic() + 20
    while seen < 8 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            seen += 1
    assert seen == 8
    c.commit(offsets=[TopicPartition("t", 0, 4, "m-" + protocol), TopicPartition("t", 1, 3)], asynchronous=False)
    return c


def _picture(state: ClusterState) -> dict[str, Any]:
    """What the coordinator holds per group (sessions' clocks left out)."""
    out: dict[str, Any] = {}
    for gid, g in state.groups.groups.items():
        if gid == "offsets-reader":
            continue
        entry: dict[str, Any] = {"offsets": dict(g.offsets), "times": dict(g.offset_times)}
        if g.consumer is None:
            entry |= {"type": g.protocol_type, "generation": g.generation, "protocol": g.protocol_name,
                      "leader": g.leader, "state": g.state,
                      "members": {m.member_id: (m.client_id, m.client_host, m.session_timeout_ms,
                                                m.rebalance_timeout_ms, dict(m.protocols)[g.protocol_name or ""],
                                                m.assignment) for m in g.members.values()}}
        else:
            c = g.consumer
            entry |= {"epoch": c.group_epoch, "assignment_epoch": c.assignment_epoch, "target": c.target,
                      "members": {m.member_id: (m.client_id, m.subscribed, m.epoch, m.previous_epoch, m.assigned,
                                                m.revoking, m.rebalance_timeout_ms) for m in c.members.values()}}
        out[gid] = copy.deepcopy(entry)  # (the live group goes on changing once its members leave)
    return out


def test_state_rebuilt_from_the_records_matches_the_coordinator_that_wrote_them() -> None:
    with MockCluster(topics={"t": 2}, config=CONFIG) as cluster:
        _fill(cluster.bootstrap_servers)
        members = [_member(cluster.bootstrap_servers, "cg", "classic"),
                   _member(cluster.bootstrap_servers, "kg", "consumer")]
        try:
            # both taken on the cluster's loop, at one moment
            source, rebuilt = cluster.call(lambda: (_picture(cluster.state), _picture(rebuilt_state(cluster.state))))
        finally:
            for c in members:
                c.close()
    assert set(source) == {"cg", "kg"}
    for gid in source:
        for name in source[gid]:
            assert rebuilt[gid][name] == source[gid][name], (gid, name)
    assert source["cg"]["state"] == "Stable" and len(source["cg"]["members"]) == 1
    assert source["cg"]["offsets"][("t", 0)][0] == 4 and source["cg"]["times"][("t", 0)][0] > 0
    assert sum(len(p) for m in source["kg"]["members"].values() for p in m[4].values()) == 2


def test_a_cluster_built_from_the_records_answers_offset_fetch_and_lets_groups_go_on() -> None:
    with MockCluster(topics={"t": 2}, config=CONFIG) as cluster:
        _fill(cluster.bootstrap_servers)
        for group, protocol in (("cg", "classic"), ("kg", "consumer")):
            _member(cluster.bootstrap_servers, group, protocol).close()
        source = cluster.state
    with cluster_from(source, topics={"t": 2}, config=CONFIG) as rebuilt:
        bootstrap = rebuilt.bootstrap_servers
        _fill(bootstrap)  # the rebuilt cluster's own logs: 8 records per partition (offsets 0-7)
        _fill(bootstrap)
        reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "cg", "enable.auto.commit": False})
        try:
            got = reader.committed([TopicPartition("t", 0), TopicPartition("t", 1)], timeout=10)
        finally:
            reader.close()
        assert [(tp.partition, tp.offset, tp.metadata) for tp in got] == [(0, 4, "m-classic"), (1, 3, None)]
        resumed = Consumer({"bootstrap.servers": bootstrap, "group.id": "kg", "group.protocol": "consumer",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
        try:  # the KIP-848 group goes on from its committed offsets, not from the beginning
            resumed.subscribe(["t"])
            first: dict[int, int] = {}
            deadline = time.monotonic() + 20
            while len(first) < 2 and time.monotonic() < deadline:
                m = resumed.poll(0.2)
                if m is not None and not m.error():
                    first.setdefault(m.partition(), m.offset())
        finally:
            resumed.close()
        assert first == {0: 4, 1: 3}
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.delete_consumer_groups(["cg"])["cg"].result(10)
        records = read_offsets_topic(bootstrap)
    offsets = offsets_of(records)
    assert offsets[("cg", "t", 0)][-1][1] is None and offsets[("cg", "t", 1)][-1][1] is None
    cg = [r for r in records if group_key(r.key) == "cg"]
    assert cg[-1].record_type == 2 and cg[-1].value is None  # the loaded GroupMetadata, tombstoned


def test_the_cleaner_keeps_the_newest_record_per_key_and_drops_tombstones_after_delete_retention() -> None:
    home = partition_for("many", 50)
    dropped = next(f"dropped-{i}" for i in range(10_000) if partition_for(f"dropped-{i}", 50) == home)
    with MockCluster(topics={"t": 2}, config=CONFIG) as cluster:
        bootstrap = cluster.bootstrap_servers
        other = Consumer({"bootstrap.servers": bootstrap, "group.id": dropped, "enable.auto.commit": False})
        try:
            other.commit(offsets=[TopicPartition("t", 0, 2)], asynchronous=False)
        finally:
            other.close()
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.delete_consumer_groups([dropped])[dropped].result(10)
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "many", "enable.auto.commit": False})
        try:
            for offset in range(1, 6):
                c.commit(offsets=[TopicPartition("t", 0, offset), TopicPartition("t", 1, offset)], asynchronous=False)
        finally:
            c.close()
        state = cluster.state
    log = state.topics[CONSUMER_OFFSETS].partitions[home]
    before = live_records(log)
    now = state.clock.now_ms()
    retention = 86_400_000  # delete.retention.ms: Kafka's default
    assert compact_log(log, now, retention, segment_starts=_each_batch(log)).removed_records > 0
    assert live_records(log) == before
    records = _flat(log)
    many = [value for key, value in records if key is not None and b"many" in key]
    # five commits of two partitions: the newest of the cleaned part (4, 4) and the active batch (5, 5) stay
    assert len(many) == 4
    gone = [(key, value) for key, value in records if key is not None and dropped.encode() in key]
    assert gone and all(value is None for _, value in gone)  # the commit went, its tombstone stays for now
    compact_log(log, now + retention + 1, retention, segment_starts=_each_batch(log))
    assert not [key for key, _ in _flat(log) if key is not None and dropped.encode() in key]
    rebuilt = rebuilt_state(state)
    assert rebuilt.groups.committed("many", "t", 0)[0] == 5 and dropped not in rebuilt.groups.groups


def _records(log: Any) -> list[list[tuple[bytes | None, bytes | None]]]:
    from mockbroker.state.inspect import decoded_batches

    return [[(None if r.key is None else bytes(r.key), None if r.value is None else bytes(r.value))
             for r in b.records] for b in decoded_batches(log)]


def _flat(log: Any) -> list[tuple[bytes | None, bytes | None]]:
    return [r for b in _records(log) for r in b]


def _each_batch(log: Any) -> list[int]:
    """Segment starts with every batch a segment of its own: all but the newest (the active one) cleanable."""
    return [b.base_offset for b in log.batches]
