"""OffsetCommit, TxnOffsetCommit and OffsetFetch refuse in Kafka's order, over the wire.

One table per request, as in test_group_check_order.py: each row puts a fresh group into a state with real
requests, sends one request and expects, per partition (or for the group), the code Kafka 4.x answers:
KafkaApis (authorization, then the topics), GroupCoordinatorService, OffsetMetadataManager.validateOffsetCommit /
validateTransactionalOffsetCommit / validateOffsetFetch, ClassicGroup.validateOffsetCommit and
ConsumerGroup.validateOffsetCommit / validateOffsetFetch, and last the metadata size per partition.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mockbroker.errors import ErrorCode
from tests.broker.group_wire import TOPIC, GroupStates, R, Setup

E = ErrorCode
BIG = "m" * 5000  # over offset.metadata.max.bytes (4096)
Row = tuple[str, str, Callable[[Setup], dict[str, Any]], "int | list[int]"]


@pytest.fixture(scope="module")
def states() -> Iterator[GroupStates]:
    with GroupStates.on_a_cluster() as gs:
        yield gs


def expected_codes(expected: int | list[int], partitions: int) -> list[int]:
    return expected if isinstance(expected, list) else [expected] * partitions


# -- OffsetCommit -------------------------------------------------------------------------------------------
ADMIN = {"member": "", "generation": -1}  # what AdminClient.alterConsumerGroupOffsets sends
TWO_BAD = [(TOPIC, 0), ("nope", 0), (TOPIC, 7)]
COMMIT: list[Row] = [
    ("an admin's commit into a live classic group", "stable", lambda s: ADMIN, E.UNKNOWN_MEMBER_ID),
    ("an admin's commit before the rebalance check", "completing", lambda s: ADMIN, E.UNKNOWN_MEMBER_ID),
    ("v0, a commit without member, into a live group", "stable", lambda s: {"version": 0}, E.UNKNOWN_MEMBER_ID),
    ("an admin's commit into an emptied group", "emptied", lambda s: ADMIN, 0),
    ("an admin's commit makes a simple group", "none", lambda s: ADMIN, 0),
    ("the empty group id is a group", "none", lambda s: ADMIN | {"group": ""}, 0),
    ("generation -1 with a member id into an emptied group", "emptied", lambda s: {"generation": -1}, 0),
    ("generation -1 with an instance id into an emptied group", "emptied",
     lambda s: {"generation": -1, "instance": "nobody"}, 0),
    ("the previous generation while the group completes a rebalance", "completing",
     lambda s: {"generation": s.generation - 1}, E.ILLEGAL_GENERATION),
    ("the current generation while the group completes a rebalance", "completing", lambda s: {},
     E.REBALANCE_IN_PROGRESS),
    ("an unknown member before the generation", "completing", lambda s: {"member": "ghost", "generation": 9},
     E.UNKNOWN_MEMBER_ID),
    ("the previous generation while a rebalance is prepared", "preparing",
     lambda s: {"generation": s.generation - 1}, E.ILLEGAL_GENERATION),
    ("commit on revoke while a rebalance is prepared", "preparing", lambda s: {}, 0),
    ("fencing before the generation", "static", lambda s: {"member": "ghost", "generation": 9},
     E.FENCED_INSTANCE_ID),
    ("an instance id nobody holds", "stable", lambda s: {"instance": "nobody"}, E.UNKNOWN_MEMBER_ID),
    ("v8: a generation for a group that does not exist", "none", lambda s: {"member": "ghost", "generation": 1},
     E.ILLEGAL_GENERATION),
    ("v9: a generation for a group that does not exist", "none",
     lambda s: {"member": "ghost", "generation": 1, "version": 9}, E.GROUP_ID_NOT_FOUND),
    ("the group before the metadata size", "stable", lambda s: ADMIN | {"metadata": BIG}, E.UNKNOWN_MEMBER_ID),
    ("metadata too large", "stable", lambda s: {"metadata": BIG}, E.OFFSET_METADATA_TOO_LARGE),
    ("unknown topics and partitions keep their code", "stable", lambda s: ADMIN | {"topics": TWO_BAD},
     [E.UNKNOWN_MEMBER_ID, E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_TOPIC_OR_PARTITION]),
    ("not the coordinator, after the topic checks", "stable", lambda s: {"coordinator": False, "topics": TWO_BAD},
     [E.NOT_COORDINATOR, E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_TOPIC_OR_PARTITION]),
    ("a member's commit", "stable", lambda s: {}, 0),
    ("an admin's commit into a live consumer group", "consumer", lambda s: ADMIN | {"version": 9},
     E.UNKNOWN_MEMBER_ID),
    ("a consumer group's member needs v9", "consumer", lambda s: {"version": 8}, E.UNSUPPORTED_VERSION),
    ("an unknown member before the version", "consumer", lambda s: {"member": "ghost", "version": 8},
     E.UNKNOWN_MEMBER_ID),
    ("a stale member epoch", "consumer", lambda s: {"generation": s.generation - 1, "version": 9},
     E.STALE_MEMBER_EPOCH),
    ("a consumer group member's commit", "consumer", lambda s: {"version": 9}, 0),
]


@pytest.mark.parametrize(("state", "fields", "expected"), [r[1:] for r in COMMIT], ids=[r[0] for r in COMMIT])
def test_offset_commit(states: GroupStates, state: str, fields: Callable[[Setup], dict[str, Any]],
                       expected: int | list[int]) -> None:
    s = states.build(state, "o")
    f = {"group": s.group, "member": s.member, "generation": s.generation, "instance": s.instance, "version": 8,
         "metadata": "", "topics": [(TOPIC, 0)], "coordinator": True} | fields(s)
    m = R[8]
    body = m.OffsetCommitRequest(
        group_id=f["group"], generation_id_or_member_epoch=f["generation"], member_id=f["member"],
        group_instance_id=f["instance"],
        topics=[m.OffsetCommitRequestTopic(name=t, partitions=[m.OffsetCommitRequestPartition(
            partition_index=p, committed_offset=5, committed_metadata=f["metadata"])]) for t, p in f["topics"]])
    answer = states.client(f["group"], f["coordinator"]).call(8, f["version"], body)
    got = [p.error_code for t in answer.topics for p in t.partitions]
    assert got == expected_codes(expected, len(f["topics"]))
    committed = states.cluster.state.groups.committed(f["group"], TOPIC, 0)[0]
    assert committed == (5 if got[0] == 0 else -1)  # stored exactly when accepted


# -- TxnOffsetCommit ----------------------------------------------------------------------------------------
TXN: list[Row] = [
    ("empty group id", "stable", lambda s: {"group": ""}, E.INVALID_GROUP_ID),
    ("not the coordinator, after the topic checks", "stable",
     lambda s: {"coordinator": False, "topics": TWO_BAD},
     [E.NOT_COORDINATOR, E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_TOPIC_OR_PARTITION]),
    ("the producer before the group", "stable", lambda s: {"producer": 999, "member": "ghost"},
     E.INVALID_PRODUCER_ID_MAPPING),
    ("a commit without member into a live group", "stable", lambda s: ADMIN, 0),
    ("v2 has no member fields", "stable", lambda s: {"version": 2}, 0),
    ("no rebalance check while the group completes a rebalance", "completing", lambda s: {}, 0),
    ("the previous generation while the group completes a rebalance", "completing",
     lambda s: {"generation": s.generation - 1}, E.ILLEGAL_GENERATION),
    ("a generation for a group that does not exist", "none", lambda s: {"member": "ghost", "generation": 1},
     E.ILLEGAL_GENERATION),
    ("generation -1 makes a simple group", "none", lambda s: ADMIN, 0),
    ("fencing before the generation", "static", lambda s: {"member": "ghost", "generation": 9},
     E.FENCED_INSTANCE_ID),
    ("an instance id nobody holds", "stable", lambda s: {"instance": "nobody"}, E.UNKNOWN_MEMBER_ID),
    ("the group before the metadata size", "stable", lambda s: {"generation": 9, "metadata": BIG},
     E.ILLEGAL_GENERATION),
    ("metadata too large", "stable", lambda s: {"metadata": BIG}, E.OFFSET_METADATA_TOO_LARGE),
    ("unknown topics and partitions keep their code", "stable", lambda s: {"generation": 9, "topics": TWO_BAD},
     [E.ILLEGAL_GENERATION, E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_TOPIC_OR_PARTITION]),
    ("a consumer group member's stale epoch", "consumer", lambda s: {"generation": s.generation - 1},
     E.ILLEGAL_GENERATION),
    ("an unknown consumer group member", "consumer", lambda s: {"member": "ghost"}, E.UNKNOWN_MEMBER_ID),
    ("a consumer group member", "consumer", lambda s: {}, 0),
    ("a member's commit", "stable", lambda s: {}, 0),
]


@pytest.mark.parametrize(("state", "fields", "expected"), [r[1:] for r in TXN], ids=[r[0] for r in TXN])
def test_txn_offset_commit(states: GroupStates, state: str, fields: Callable[[Setup], dict[str, Any]],
                           expected: int | list[int]) -> None:
    s = states.build(state, "o")
    txn_id = f"tx-{s.group}"
    producer, epoch = states.producer(txn_id, s.group)
    f = {"group": s.group, "member": s.member, "generation": s.generation, "instance": s.instance, "version": 3,
         "metadata": "", "topics": [(TOPIC, 0)], "coordinator": True, "producer": producer} | fields(s)
    m = R[28]
    body = m.TxnOffsetCommitRequest(
        transactional_id=txn_id, group_id=f["group"], producer_id=f["producer"], producer_epoch=epoch,
        generation_id=f["generation"], member_id=f["member"], group_instance_id=f["instance"],
        topics=[m.TxnOffsetCommitRequestTopic(name=t, partitions=[m.TxnOffsetCommitRequestPartition(
            partition_index=p, committed_offset=5, committed_metadata=f["metadata"])]) for t, p in f["topics"]])
    answer = states.client(f["group"] or s.group, f["coordinator"]).call(28, f["version"], body)
    got = [p.error_code for t in answer.topics for p in t.partitions]
    assert got == expected_codes(expected, len(f["topics"]))
    assert states.cluster.state.groups.unstable(f["group"], TOPIC, 0) == (got[0] == 0)  # held exactly when accepted


# -- OffsetFetch --------------------------------------------------------------------------------------------
FETCH: list[Row] = [
    ("the empty group id is a group", "none", lambda s: {"group": ""}, 0),
    ("v1: the empty group id is a group", "none", lambda s: {"group": "", "version": 1}, 0),
    ("not the coordinator", "stable", lambda s: {"coordinator": False}, E.NOT_COORDINATOR),
    ("a classic group checks no member", "stable", lambda s: {"member": "ghost", "epoch": 9}, 0),
    ("a group that does not exist checks no member", "none", lambda s: {"member": "ghost", "epoch": 3}, 0),
    ("an admin's fetch from a live consumer group", "consumer", lambda s: {"member": None, "epoch": -1}, 0),
    ("an empty member id is a member id", "consumer", lambda s: {"member": "", "epoch": -1}, E.UNKNOWN_MEMBER_ID),
    ("an unknown member", "consumer", lambda s: {"member": "ghost"}, E.UNKNOWN_MEMBER_ID),
    ("a stale member epoch", "consumer", lambda s: {"epoch": s.generation - 1}, E.STALE_MEMBER_EPOCH),
    ("v8 has no member to check", "consumer", lambda s: {"member": "ghost", "version": 8}, 0),
    ("the member", "consumer", lambda s: {}, 0),
]


@pytest.mark.parametrize(("state", "fields", "expected"), [r[1:] for r in FETCH], ids=[r[0] for r in FETCH])
def test_offset_fetch(states: GroupStates, state: str, fields: Callable[[Setup], dict[str, Any]],
                      expected: int) -> None:
    s = states.build(state, "o")
    f = {"group": s.group, "member": s.member, "epoch": s.generation, "version": 9, "coordinator": True} | fields(s)
    m = R[9]
    w = states.client(f["group"], f["coordinator"])
    if f["version"] < 8:
        answer = w.call(9, f["version"], m.OffsetFetchRequest(group_id=f["group"], topics=[
            m.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0])]))
        got, parts = answer.error_code, answer.topics[0].partitions
        if f["version"] < 2:  # no top-level code before v2: the partitions carry it
            got = got or parts[0].error_code
    else:
        answer = w.call(9, f["version"], m.OffsetFetchRequest(groups=[m.OffsetFetchRequestGroup(
            group_id=f["group"], member_id=f["member"], member_epoch=f["epoch"],
            topics=[m.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0])])]))
        got, parts = answer.groups[0].error_code, (answer.groups[0].topics or [None])[0]
        parts = parts.partitions if parts is not None else []
    assert got == expected
    if expected == 0:  # the offsets are answered (the "" group may hold one from test_offset_commit)
        stored = states.cluster.state.groups.committed(f["group"], TOPIC, 0)[0]
        assert [(p.partition_index, p.committed_offset) for p in parts] == [(0, stored)]
