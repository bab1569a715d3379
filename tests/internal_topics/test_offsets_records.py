"""Pure tests of the group coordinator's ``__consumer_offsets`` records: the value versions Kafka chooses
(OffsetCommitValue v3, v1 with an expire timestamp; GroupMetadataValue v3), checked against bytes laid
out by hand; the loader over Kafka-style transactional batches (TxnOffsetCommit records, then a COMMIT
or ABORT marker); a record that is not the group coordinator's is skipped."""

from __future__ import annotations

import struct

from mockbroker import records as rec
from mockbroker.state import offsets_records as recs
from mockbroker.state.clock import ManualClock
from mockbroker.state.cluster import ClusterState
from mockbroker.state.internal_topics import CONSUMER_OFFSETS, ensure, partition_for
from mockbroker.state.log import PartitionLog, StoredBatch
from mockbroker.state.offsets_replay import live_records, load
from tests.internal_topics.offsets_bytes import offset_key, offset_value


def _s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def test_offset_commit_key_and_values_are_laid_out_as_kafka_writes_them() -> None:
    assert recs.offset_key("g", "t", 3) == struct.pack(">h", 1) + _s("g") + _s("t") + struct.pack(">i", 3)
    v3 = recs.offset_value(42, 7, "meta", 1000)
    assert v3 == struct.pack(">hqi", 3, 42, 7) + _s("meta") + struct.pack(">q", 1000)
    v1 = recs.offset_value(42, 7, None, 1000, 5000)  # an expire timestamp: v1, no leader epoch
    assert v1 == struct.pack(">hq", 1, 42) + _s("") + struct.pack(">qq", 1000, 5000)
    assert offset_value(v1)["expire_ms"] == 5000 and offset_key(recs.offset_key("g", "t", 3)) == ("g", "t", 3)


def test_group_metadata_value_v3() -> None:
    value = recs.encode_value(recs.GROUP_METADATA, 3, protocol_type="consumer", generation=2, protocol="range",
                              leader="m1", current_state_timestamp=99, members=[
                                  recs.value_module(recs.GROUP_METADATA).MemberMetadata(
                                      member_id="m1", group_instance_id=None, client_id="c", client_host="/h",
                                      rebalance_timeout=300, session_timeout=45, subscription=b"S", assignment=b"A")])
    expected = (struct.pack(">h", 3) + _s("consumer") + struct.pack(">i", 2) + _s("range") + _s("m1")
                + struct.pack(">qi", 99, 1) + _s("m1") + struct.pack(">h", -1) + _s("c") + _s("/h")
                + struct.pack(">ii", 300, 45) + struct.pack(">i", 1) + b"S" + struct.pack(">i", 1) + b"A")
    assert value == expected
    kind, key, version, decoded = recs.decode(recs.encode_key(recs.GROUP_METADATA, group="g"), value)
    assert (kind, key.group, version, decoded.leader, decoded.members[0].assignment) == (2, "g", 3, "m1", b"A")


def test_an_offset_commit_with_a_retention_time_is_written_with_its_expire_timestamp() -> None:
    state = ClusterState(clock=ManualClock(1_000_000))
    state.create_topic("t", 1)
    state.groups.store("g", [("t", 0, 5, -1, "")], expire_ms=1_000_000 + 60_000)
    log = state.topics[CONSUMER_OFFSETS].partitions[partition_for("g", 50)]
    (entry,) = live_records(log).values()
    (_, _, version, value), raw = entry
    assert version == 1 and value.expire_timestamp == 1_060_000 and value.commit_timestamp == 1_000_000
    assert offset_value(raw)["expire_ms"] == 1_060_000


def _append(log: PartitionLog, items: list[tuple[bytes, bytes | None]], producer_id: int = -1) -> None:
    """One batch of ``items``: plain, or transactional for ``producer_id`` (as Kafka writes TxnOffsetCommit)."""
    base = log.next_offset
    data = rec.build_batch(items, base_offset=base, base_timestamp=1, producer_id=producer_id, producer_epoch=0,
                           transactional=producer_id >= 0)
    log.append(StoredBatch(base, base + len(items) - 1, 1, len(data), (data,), producer_id, producer_id >= 0))


def _marker(log: PartitionLog, producer_id: int, commit: bool) -> None:
    base = log.next_offset
    data = rec.build_control_batch(commit, producer_id, 0, base, 1)
    log.append(StoredBatch(base, base, 1, len(data), (data,), producer_id, True, True))


def test_the_loader_takes_kafkas_transactional_offsets_only_once_committed() -> None:
    state = ClusterState()
    state.create_topic("t", 2)
    log = ensure(state, CONSUMER_OFFSETS).partitions[partition_for("g", 50)]
    _append(log, [(recs.offset_key("g", "t", 0), recs.offset_value(3, -1, "", 1))])
    _append(log, [(recs.offset_key("g", "t", 0), recs.offset_value(9, -1, "", 1))], 7)  # aborted below
    _append(log, [(b"\x7f\x7f not ours", b"x")])  # another coordinator's record: skipped
    _marker(log, 7, commit=False)
    _append(log, [(recs.offset_key("g", "t", 1), recs.offset_value(4, 2, "m", 1))], 7)
    _marker(log, 7, commit=True)
    _append(log, [(recs.offset_key("g", "t", 1), recs.offset_value(6, 2, "m", 1))], 8)
    load(state)  # producer 8's transaction is still open: its offset does not count
    assert state.groups.committed("g", "t", 0) == (3, -1, "")
    assert state.groups.committed("g", "t", 1) == (4, 2, "m")


def test_a_deleted_topics_offsets_are_tombstoned_as_kafka_does_on_partition_deletion() -> None:
    state = ClusterState()
    state.create_topic("t", 2)
    state.create_topic("u", 1)
    state.groups.store("g", [("t", 0, 1, -1, ""), ("t", 1, 2, -1, ""), ("u", 0, 3, -1, "")])
    state.delete_topic("t")
    log = state.topics[CONSUMER_OFFSETS].partitions[partition_for("g", 50)]
    live = {offset_key(key) for key in live_records(log)}
    assert live == {("g", "u", 0)}
    last = rec.decode_batch(b"".join(bytes(b) for b in log.batches[-1].buffers))[1]
    assert [(offset_key(bytes(r.key)), r.value) for r in last] == [(("g", "t", 0), None), (("g", "t", 1), None)]
