"""``__share_group_state`` holds Kafka's share coordinator records: a confluent-kafka ShareConsumer's
acknowledgements leave ShareSnapshot / ShareUpdate records (decoded by the hand-written reader of
tests/internal_topics/records.py) in the partition of "groupId:topicId:partition", a ShareSnapshot every
``share.coordinator.snapshot.update.records.per.snapshot`` updates, a new state epoch when the start offset
is altered and a tombstone when the state is deleted; the loader rebuilds the share-partitions from a copy
of the logs (start offset, record states and delivery counts), and a share consumer of a cluster started on
the reloaded state gets only the records not yet done."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Message, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from mockbroker.batches import stored_batch
from mockbroker.cluster import MockCluster
from mockbroker.records import build_batch, decode_batch
from mockbroker.state.clock import ManualClock
from mockbroker.state.cluster import ClusterState
from mockbroker.state.coordinator_load import load_all
from tests.internal_topics.records import ShareState, copy_logs, java_partition, share_record, uuid_text

pytestmark = pytest.mark.clients

SHARE_STATE = "__share_group_state"
ACCEPT, RELEASE, REJECT = 1, 2, 3
AVAILABLE, ACKED, ARCHIVED = 0, 2, 4


def share_records(state: ClusterState) -> list[tuple[int, ShareState]]:
    """(partition, decoded record) of every record in __share_group_state, partition by partition."""
    topic = state.topics.get(SHARE_STATE)
    out = []
    for plog in [] if topic is None else topic.partitions:
        for b in plog.batches:
            _header, records = decode_batch(b"".join(bytes(x) for x in b.buffers))
            out += [(plog.index, share_record(bytes(r.key), None if r.value is None else bytes(r.value)))
                    for r in records]
    return out


def in_flight(state: ClusterState, group: str, topic: str = "jobs") -> tuple[int, dict[int, tuple[str, int]]]:
    sp = state.share.partitions.get((group, topic, 0))
    assert sp is not None
    return sp.start_offset, {r["offset"]: (r["state"], r["delivery_count"]) for r in sp.state()["records"]}


@contextmanager
def share_consumer(cluster: MockCluster, group: str) -> Iterator[ShareConsumer]:
    consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    try:
        consumer.subscribe(["jobs"])
        yield consumer
    finally:
        consumer.close()


def poll(consumer: ShareConsumer, count: int, timeout: float = 15) -> list[Message]:
    seen: list[Message] = []
    deadline = time.monotonic() + timeout
    while len(seen) < count and time.monotonic() < deadline:
        seen += [m for m in consumer.poll(0.1) if m.error() is None]
    return seen


def test_acknowledgements_leave_share_records_and_a_reloaded_cluster_redelivers_only_what_is_not_done() -> None:
    with MockCluster(topics={"jobs": 1}) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        resource = ConfigResource(ResourceType.GROUP, "g", incremental_configs=[
            ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(10)
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        for i in range(4):
            p.produce("jobs", f"v{i}".encode(), partition=0)
        assert p.flush(10) == 0
        with share_consumer(cluster, "g") as consumer:
            got = poll(consumer, 4)
            assert [m.offset() for m in got] == [0, 1, 2, 3]
            for m, kind in zip(got, (AcknowledgeType.ACCEPT, AcknowledgeType.REJECT, AcknowledgeType.RELEASE,
                                     AcknowledgeType.ACCEPT), strict=True):
                consumer.acknowledge(m, kind)
            consumer.commit_sync(10)
        topic_id = bytes(cluster.state.topics["jobs"].topic_id)
        written = cluster.call(share_records, cluster.state)
        kept = cluster.call(in_flight, cluster.state, "g")
        fresh = MockCluster()
        cluster.call(copy_logs, cluster.state, fresh.state)

    place = java_partition(f"g:{uuid_text(topic_id)}:0", 50)
    assert {p for p, _ in written} == {place}
    records = [r for _, r in written]
    assert {(r.group_id, r.topic_id, r.partition) for r in records} == {("g", topic_id, 0)}
    first = records[0]
    assert (first.kind, first.snapshot_epoch, first.state_epoch, first.start_offset, first.batches) == (
        "snapshot", 0, 0, 0, [])  # the share-partition started at offset 0 (earliest)
    assert all(r.kind == "update" and r.snapshot_epoch == 0 for r in records[1:])
    last = records[-1]
    start, states = kept
    assert last.start_offset == start == 2  # 0 accepted, 1 rejected: the start moved past them
    assert last.batches[-1] == (3, 3, ACKED, 1)
    assert last.batches[0][:3] == (2, 2, AVAILABLE)  # released (acquired again meanwhile: still Available)

    load_all(fresh.state)
    start, states = in_flight(fresh.state, "g")
    assert start == 2 and states[3] == ("ACKNOWLEDGED", 1) and states[2][0] == "AVAILABLE"
    count = states[2][1]
    with fresh, share_consumer(fresh, "g") as consumer:
        again = poll(consumer, 1)
        assert [(m.offset(), m.value(), m.delivery_count()) for m in again] == [(2, b"v2", count + 1)]
        consumer.acknowledge(again[0], AcknowledgeType.ACCEPT)
        consumer.commit_sync(10)
        assert poll(consumer, 1, timeout=1.0) == []  # 0, 1 and 3 were done before the restart
        assert fresh.call(in_flight, fresh.state, "g")[0] == 4


def single_record_batches(state: ClusterState, count: int) -> Any:
    plog = state.topics["jobs"].partitions[0]
    for i in range(count):
        data = build_batch([(None, f"v{i}".encode(), None, state.clock.now_ms())], base_offset=plog.next_offset)
        plog.append(stored_batch(memoryview(data), plog.next_offset, plog.leader_epoch))
    return plog


def test_snapshots_every_n_updates_state_epochs_tombstones_and_the_rebuild() -> None:
    clock = ManualClock()
    state = ClusterState({"share.coordinator.snapshot.update.records.per.snapshot": 2}, clock)
    state.create_topic("jobs", 1, 1)
    plog = single_record_batches(state, 6)
    share = state.share
    share.partition("g", plog)  # starts at the log's end by default: moved to 0 as AlterShareGroupOffsets does
    share.alter_start_offset("g", "jobs", 0, 0)
    ranges, _read = share.acquire("g", "m1", plog, 100)
    assert ranges == [(0, 5, 1)]
    for offset, kind in ((0, ACCEPT), (1, RELEASE), (2, REJECT), (3, ACCEPT)):
        share.acknowledge("g", "m1", plog, [(offset, offset, [kind])])
    records = [r for _, r in share_records(state)]
    assert [(r.kind, r.snapshot_epoch, r.state_epoch) for r in records] == [
        ("snapshot", 0, 0),  # the share-partition starts (at the log end, 6)
        ("snapshot", 1, 1),  # AlterShareGroupOffsets to 0: a new state epoch
        ("update", 1, -1), ("update", 1, -1),  # two updates...
        ("snapshot", 2, 1),  # ...then a snapshot (per.snapshot = 2)
        ("update", 2, -1)]
    assert (records[0].start_offset, records[1].start_offset) == (6, 0)
    assert records[-1].start_offset == 1
    assert records[-1].batches == [(1, 1, AVAILABLE, 1), (2, 2, ARCHIVED, 1), (3, 3, ACKED, 1), (4, 5, AVAILABLE, 1)]

    loaded = ClusterState(None, clock)
    copy_logs(state, loaded)
    load_all(loaded)
    assert in_flight(loaded, "g") == (1, {1: ("AVAILABLE", 1), 2: ("ARCHIVED", 1), 3: ("ACKNOWLEDGED", 1),
                                          4: ("AVAILABLE", 1), 5: ("AVAILABLE", 1)})
    lplog = loaded.topics["jobs"].partitions[0]
    ranges, _read = loaded.share.acquire("g", "m2", lplog, 100)
    assert ranges == [(1, 1, 2), (4, 5, 2)]  # redelivered with the next delivery count; 2 and 3 stay done
    loaded.share.acknowledge("g", "m2", lplog, [(1, 1, [ACCEPT]), (4, 5, [ACCEPT])])
    last = share_records(loaded)[-1][1]
    assert (last.kind, last.snapshot_epoch, last.start_offset, last.batches) == ("update", 2, 6, [])

    loaded.share.delete_offsets("g", "jobs")
    assert share_records(loaded)[-1][1].tombstone
    again = ClusterState(None, clock)
    copy_logs(loaded, again)
    load_all(again)
    assert again.share.partitions.get(("g", "jobs", 0)) is None
