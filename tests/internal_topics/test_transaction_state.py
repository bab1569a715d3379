"""``__transaction_state`` holds Kafka's TransactionLog records: a confluent-kafka transactional producer's
commit and abort leave one record per state change (Empty, Ongoing, PrepareCommit, CompleteCommit, Ongoing,
PrepareAbort, CompleteAbort) naming its transactional id, producer id and epoch, in the partition Kafka's
hash picks, read back over the wire and decoded by the hand-written reader of tests/internal_topics/records.py.
The loader rebuilds the coordinator from a copy of the logs into a fresh ClusterState: an open transaction is
aborted (epoch bumped, ABORT marker written) once its timeout passes on a manual clock, a PrepareCommit gets
its markers, an expired id's tombstone forgets it, a new InitProducerId bumps the loaded epoch and the
producer id allocator moves past every loaded id; and a MockCluster started on a reloaded state answers a
real client's InitProducerId with the next epoch."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Producer

from mockbroker.batches import stored_batch
from mockbroker.cluster import MockCluster
from mockbroker.records import build_batch, decode_batch, parse_control_record
from mockbroker.state.clock import ManualClock
from mockbroker.state.cluster import ClusterState
from mockbroker.state.coordinator_load import load_all
from tests.internal_topics.records import copy_logs, java_partition, read_topic, txn_key, txn_value

pytestmark = pytest.mark.clients

TXN_STATE = "__transaction_state"


def txn_records(state: ClusterState, txn_id: str) -> list[tuple[int, Any]]:
    """(partition, decoded value or None) of every record of ``txn_id`` in __transaction_state, state side."""
    out = []
    topic = state.topics[TXN_STATE]
    for plog in topic.partitions:
        for b in plog.batches:
            _header, records = decode_batch(b"".join(bytes(x) for x in b.buffers))
            for r in records:
                if txn_key(bytes(r.key)) == txn_id:
                    out.append((plog.index, None if r.value is None else txn_value(bytes(r.value))[1]))
    return out


def markers(state: ClusterState, topic: str, partition: int = 0) -> list[str]:
    """The control records of a partition: COMMIT / ABORT in log order."""
    out = []
    for b in state.topics[topic].partitions[partition].batches:
        if b.is_control:
            _header, records = decode_batch(b"".join(bytes(x) for x in b.buffers))
            out += ["COMMIT" if parse_control_record(r)[1] == 1 else "ABORT" for r in records]
    return out


def test_commit_and_abort_leave_transaction_log_records_in_kafkas_partition() -> None:
    txn_id = "txn-records-1"
    with MockCluster(topics={"t": 1}) as cluster:
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id,
                      "transaction.timeout.ms": 30000})
        p.init_transactions(10)
        p.begin_transaction()
        p.produce("t", b"kept", partition=0)
        p.commit_transaction(10)
        p.begin_transaction()
        p.produce("t", b"dropped", partition=0)
        assert p.flush(10) == 0  # sent, so the abort goes to the coordinator (else librdkafka aborts locally)
        p.abort_transaction(10)
        partition = java_partition(txn_id, 50)
        described = cluster.call(lambda: cluster.state.transactions.describe(txn_id))
        messages = read_topic(cluster.bootstrap_servers, TXN_STATE, partition, 7)
    assert len(messages) == 7
    assert {txn_key(m.key()) for m in messages} == {txn_id}
    decoded = [txn_value(m.value()) for m in messages]
    assert {version for version, _ in decoded} == {1}  # transaction.version 2 is finalized: flexible values
    values = [v for _, v in decoded]
    assert [v.state for v in values] == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit",
                                         "Ongoing", "PrepareAbort", "CompleteAbort"]
    assert {v.producer_id for v in values} == {described.producer_id}
    assert {v.timeout_ms for v in values} == {30000}
    epochs = [v.epoch for v in values]
    assert epochs == sorted(epochs) and epochs[-1] == described.epoch
    assert values[0].partitions is None and values[0].start_ms == -1  # Empty: no partitions, no start
    assert values[1].partitions == {"t": [0]} and values[1].start_ms > 0
    assert values[2].partitions == {"t": [0]} and values[2].start_ms == values[1].start_ms
    assert values[3].partitions == {} and values[3].start_ms == values[1].start_ms  # Kafka keeps the start
    assert values[4].start_ms >= values[3].last_update_ms


def open_transaction(state: ClusterState, txn_id: str, timeout_ms: int = 10_000) -> tuple[int, int]:
    """InitProducerId and AddPartitionsToTxn on the coordinator, one transactional batch in t-0."""
    pid, epoch = state.transactions.init_producer(txn_id, timeout_ms)
    state.transactions.add_partitions(txn_id, pid, epoch, [("t", 0)])
    plog = state.topics["t"].partitions[0]
    data = build_batch([(None, b"v", None, state.clock.now_ms())], base_offset=plog.next_offset,
                       producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)
    plog.append(stored_batch(memoryview(data), plog.next_offset, plog.leader_epoch))
    return pid, epoch


def fresh_copy(state: ClusterState, clock: ManualClock, config: dict[str, Any] | None = None) -> ClusterState:
    copy = ClusterState(config, clock)
    copy_logs(state, copy)
    load_all(copy)
    return copy


def test_an_open_transaction_loaded_is_aborted_after_its_timeout_and_init_bumps_the_epoch() -> None:
    clock = ManualClock()
    state = ClusterState(None, clock)
    state.create_topic("t", 1, 1)
    pid, epoch = open_transaction(state, "open-1", timeout_ms=10_000)
    clock.advance(3_000)

    loaded = fresh_copy(state, clock)
    txn = loaded.transactions.describe("open-1")
    assert (txn.producer_id, txn.epoch, txn.timeout_ms, txn.state) == (pid, epoch, 10_000, "Ongoing")
    assert txn.partitions == {("t", 0)} and txn.start_ms == clock.now_ms() - 3_000
    assert loaded.producers.new_id() > pid  # never an id at or below a loaded one
    loaded.tick()
    assert loaded.transactions.describe("open-1").state == "Ongoing"  # not timed out yet
    clock.advance(7_001)
    loaded.tick()
    txn = loaded.transactions.describe("open-1")
    assert (txn.state, txn.epoch) == ("CompleteAbort", epoch + 1)  # fenced, as Kafka aborts a timed-out one
    assert markers(loaded, "t") == ["ABORT"]
    states = [(v.state, v.epoch) for _, v in txn_records(loaded, "open-1")]
    assert states == [("Empty", epoch), ("Ongoing", epoch), ("PrepareAbort", epoch + 1), ("CompleteAbort", epoch + 1)]
    assert {p for p, _ in txn_records(loaded, "open-1")} == {java_partition("open-1", 50)}

    assert loaded.transactions.init_producer("open-1", 10_000) == (pid, epoch + 2)


def test_a_prepare_commit_loaded_gets_its_markers_and_completes() -> None:
    clock = ManualClock()
    state = ClusterState({"mock.transaction.marker.delay.ms": 60_000}, clock)
    state.create_topic("t", 1, 1)
    pid, epoch = open_transaction(state, "prep-1")
    state.transactions.end("prep-1", pid, epoch, commit=True)
    assert state.transactions.describe("prep-1").state == "PrepareCommit"

    loaded = fresh_copy(state, clock)
    assert loaded.transactions.describe("prep-1").state == "PrepareCommit"
    loaded.tick()  # Kafka sends the markers of a loaded PrepareCommit at once
    assert loaded.transactions.describe("prep-1").state == "CompleteCommit"
    assert markers(loaded, "t") == ["COMMIT"]
    assert [v.state for _, v in txn_records(loaded, "prep-1")][-2:] == ["PrepareCommit", "CompleteCommit"]


def test_an_expired_id_is_a_tombstone_the_loader_forgets() -> None:
    clock = ManualClock()
    state = ClusterState({"transactional.id.expiration.ms": 1_000}, clock)
    state.create_topic("t", 1, 1)
    state.transactions.init_producer("gone-1", 5_000)
    state.transactions.init_producer("kept-1", 5_000)
    clock.advance(1_000)
    state.transactions.init_producer("kept-1", 5_000)  # kept-1 was used again: not idle
    state.tick()
    assert [v for _, v in txn_records(state, "gone-1")][-1] is None
    loaded = fresh_copy(state, clock)
    assert [t.transactional_id for t in loaded.transactions.listed()] == ["kept-1"]
    assert loaded.transactions.describe("kept-1").epoch == 1


def test_transaction_version_0_writes_value_version_0() -> None:
    state = ClusterState(None, ManualClock())
    state.features.finalized["transaction.version"] = 0
    state.transactions.init_producer("tv0", 5_000)
    plog = state.topics[TXN_STATE].partitions[java_partition("tv0", 50)]
    _header, records = decode_batch(b"".join(bytes(x) for x in plog.batches[0].buffers))
    version, value = txn_value(bytes(records[0].value))
    assert (version, value.state, value.epoch) == (0, "Empty", 0)


def test_a_cluster_started_on_a_reloaded_state_bumps_a_real_clients_epoch() -> None:
    txn_id = "restart-1"
    with MockCluster(topics={"t": 1}) as first:
        p = Producer({"bootstrap.servers": first.bootstrap_servers, "transactional.id": txn_id,
                      "transaction.timeout.ms": 10000})
        p.init_transactions(10)
        p.begin_transaction()
        p.produce("t", b"left open", partition=0)
        assert p.flush(10) == 0
        before = first.call(lambda: first.state.transactions.describe(txn_id))
        pid, epoch, state = before.producer_id, before.epoch, before.state
        clock = ManualClock(first.call(first.state.clock.now_ms))
        second = MockCluster(clock=clock)
        first.call(copy_logs, first.state, second.state)
    assert state == "Ongoing"
    load_all(second.state)
    with second:
        clock.advance(10_001)  # the ticker aborts the loaded transaction
        p2 = Producer({"bootstrap.servers": second.bootstrap_servers, "transactional.id": txn_id,
                       "transaction.timeout.ms": 10000})
        p2.init_transactions(15)
        after = second.call(lambda: second.state.transactions.describe(txn_id))
        ends = second.call(markers, second.state, "t")
    assert (after.producer_id, after.epoch, after.state) == (pid, epoch + 2, "Empty")
    assert ends == ["ABORT"]


def test_a_group_in_a_transaction_is_its_offsets_partition_and_is_settled_after_loading() -> None:
    clock = ManualClock()
    state = ClusterState({"mock.transaction.marker.delay.ms": 60_000}, clock)
    state.create_topic("t", 1, 1)
    pid, epoch = open_transaction(state, "offsets-1")
    state.transactions.add_offsets("offsets-1", pid, epoch, "app")
    state.transactions.check_offsets("offsets-1", pid, epoch, "app")
    state.groups.store_pending("app", pid, [("t", 0, 42, -1, None)])
    ongoing = [v for _, v in txn_records(state, "offsets-1")][-1]
    assert ongoing.state == "Ongoing"
    assert ongoing.partitions == {"__consumer_offsets": [java_partition("app", 50)], "t": [0]}

    loaded = fresh_copy(state, clock)
    loaded.transactions.check_offsets("offsets-1", pid, epoch, "app")  # TxnOffsetCommit still accepted
    loaded.groups.store_pending("app", pid, [("t", 0, 42, -1, None)])  # what the group records give back
    loaded.transactions.end("offsets-1", pid, epoch, commit=True)
    loaded.tick()
    clock.advance(60_000)
    loaded.tick()
    assert loaded.transactions.describe("offsets-1").state == "CompleteCommit"
    assert loaded.groups.committed("app", "t", 0)[0] == 42  # the commit settled the group's offsets


def test_unreadable_records_are_logged_and_skipped_by_the_loader(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    state = ClusterState(None, clock)
    pid, _epoch = state.transactions.init_producer("fine-1", 5_000)
    plog = state.topics[TXN_STATE].partitions[0]
    for key, value in ((b"\x00", b"x"), (b"\x00\x00\x00\x05ab", b"\x00\x00"), (b"\x00\x07junk", b"\x00\x00")):
        data = build_batch([(key, value, None, clock.now_ms())], base_offset=plog.next_offset)
        plog.append(stored_batch(memoryview(data), plog.next_offset, plog.leader_epoch))
    loaded = fresh_copy(state, clock)
    assert [(t.transactional_id, t.producer_id) for t in loaded.transactions.listed()] == [("fine-1", pid)]
    skipped = [r.getMessage() for r in caplog.records if "record skipped" in r.getMessage()]
    assert len(skipped) == 2  # the short key and the truncated one; an unknown record type (7) is ignored
    assert all(m.startswith(f"{TXN_STATE}-0 offset ") for m in skipped)
