"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup refuse in Kafka's order, over the wire.

One table per request: each row puts a fresh group into a state with real requests (tests/broker/group_wire.py),
sends one request with the given fields and expects the code Kafka's group coordinator answers (Kafka 4.x:
KafkaApis, GroupCoordinatorService, GroupMetadataManager.classicGroupJoin/Sync/Heartbeat/Leave and
ClassicGroup.validateMember).  Where two checks fail at once the row says which Kafka makes first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mockbroker.errors import ErrorCode
from tests.broker.group_wire import PROTOCOL, GroupStates, R, Setup

E = ErrorCode
Row = tuple[str, str, Callable[[Setup], dict[str, Any]], int]


@pytest.fixture(scope="module")
def states() -> Iterator[GroupStates]:
    with GroupStates.on_a_cluster() as gs:
        yield gs


# -- JoinGroup ------------------------------------------------------------------------------------------
JOIN: list[Row] = [
    ("empty group id", "none", lambda s: {"group": ""}, E.INVALID_GROUP_ID),
    ("empty group id before the session timeout", "none", lambda s: {"group": "", "session_ms": 1},
     E.INVALID_GROUP_ID),
    ("session timeout before the coordinator", "none", lambda s: {"session_ms": 1, "coordinator": False},
     E.INVALID_SESSION_TIMEOUT),
    ("not the coordinator", "none", lambda s: {"coordinator": False}, E.NOT_COORDINATOR),
    ("a member id for a group that does not exist, before the protocols", "none",
     lambda s: {"member": "ghost", "protocols": ()}, E.UNKNOWN_MEMBER_ID),
    ("a member id for a group that does not exist", "none", lambda s: {"member": "ghost"}, E.UNKNOWN_MEMBER_ID),
    ("protocols before the member", "stable", lambda s: {"member": "ghost", "protocol_type": "connect"},
     E.INCONSISTENT_GROUP_PROTOCOL),
    ("an unknown member", "stable", lambda s: {"member": "ghost"}, E.UNKNOWN_MEMBER_ID),
    ("an instance id nobody holds, with a member's id", "stable",
     lambda s: {"member": s.member, "instance": "nobody"}, E.UNKNOWN_MEMBER_ID),
    ("an instance id held by another member id", "static", lambda s: {"member": "ghost", "instance": s.instance},
     E.FENCED_INSTANCE_ID),
    ("protocols before fencing", "static",
     lambda s: {"member": "ghost", "instance": s.instance, "protocol_type": "connect"}, E.INCONSISTENT_GROUP_PROTOCOL),
    ("the member rejoins", "stable", lambda s: {"member": s.member}, 0),
]


@pytest.mark.parametrize(("state", "fields", "expected"), [r[1:] for r in JOIN], ids=[r[0] for r in JOIN])
def test_join_group(states: GroupStates, state: str, fields: Callable[[Setup], dict[str, Any]], expected: int) -> None:
    s = states.build(state)
    f = {"group": s.group, "member": "", "instance": None, "coordinator": True} | fields(s)
    body = GroupStates.join_body(f["group"], f["member"], f["instance"], **{
        k: f[k] for k in ("session_ms", "protocol_type", "protocols") if k in f})
    answer = states.client(s.group, f["coordinator"]).call(11, 5, body)
    assert answer.error_code == expected


# -- SyncGroup --------------------------------------------------------------------------------------------
SYNC: list[Row] = [
    ("v5 without a protocol type, before the coordinator", "none",
     lambda s: {"protocol_type": None, "coordinator": False}, E.INCONSISTENT_GROUP_PROTOCOL),
    ("empty group id", "none", lambda s: {"group": ""}, E.INVALID_GROUP_ID),
    ("not the coordinator", "stable", lambda s: {"coordinator": False}, E.NOT_COORDINATOR),
    ("a group that does not exist", "none", lambda s: {"member": "ghost", "generation": 1}, E.UNKNOWN_MEMBER_ID),
    ("a group whose members left", "emptied", lambda s: {}, E.UNKNOWN_MEMBER_ID),
    ("an unknown member before the generation", "stable", lambda s: {"member": "ghost", "generation": 9},
     E.UNKNOWN_MEMBER_ID),
    ("an instance id nobody holds, with a member's id", "stable", lambda s: {"instance": "nobody"},
     E.UNKNOWN_MEMBER_ID),
    ("fencing before the generation", "static", lambda s: {"member": "ghost", "generation": 9}, E.FENCED_INSTANCE_ID),
    ("the generation before the protocol name", "completing",
     lambda s: {"generation": s.generation - 1, "protocol_name": "roundrobin"}, E.ILLEGAL_GENERATION),
    ("another protocol name", "completing", lambda s: {"protocol_name": "roundrobin"}, E.INCONSISTENT_GROUP_PROTOCOL),
    ("v5 without a protocol type", "completing", lambda s: {"protocol_type": None}, E.INCONSISTENT_GROUP_PROTOCOL),
    ("the generation before the rebalance", "preparing", lambda s: {"generation": s.generation - 1},
     E.ILLEGAL_GENERATION),
    ("a rebalance in progress", "preparing", lambda s: {}, E.REBALANCE_IN_PROGRESS),
    ("the leader's assignment", "completing", lambda s: {}, 0),
    ("v4 has no protocol to check", "completing", lambda s: {"version": 4, "protocol_name": "roundrobin"}, 0),
]


@pytest.mark.parametrize(("state", "fields", "expected"), [r[1:] for r in SYNC], ids=[r[0] for r in SYNC])
def test_sync_group(states: GroupStates, state: str, fields: Callable[[Setup], dict[str, Any]], expected: int) -> None:
    s = states.build(state)
    f = {"group": s.group, "member": s.member, "generation": s.generation, "instance": s.instance,
         "protocol_type": PROTOCOL[0], "protocol_name": PROTOCOL[1], "version": 5, "coordinator": True} | fields(s)
    m = R[14]
    body = m.SyncGroupRequest(group_id=f["group"], generation_id=f["generation"], member_id=f["member"],
                              group_instance_id=f["instance"], protocol_type=f["protocol_type"],
                              protocol_name=f["protocol_name"], assignments=[])
    assert states.client(s.group, f["coordinator"]).call(14, f["version"], body).error_code == expected


# -- Heartbeat --------------------------------------------------------------------------------------------
HEARTBEAT: list[Row] = [
    ("empty group id", "none", lambda s: {"group": ""}, E.INVALID_GROUP_ID),
    ("not the coordinator", "stable", lambda s: {"coordinator": False}, E.NOT_COORDINATOR),
    ("a group that does not exist", "none", lambda s: {"member": "ghost", "generation": 1}, E.UNKNOWN_MEMBER_ID),
    ("a group whose members left", "emptied", lambda s: {}, E.UNKNOWN_MEMBER_ID),
    ("a pending member is not a member yet", "pending", lambda s: {"member": s.other}, E.UNKNOWN_MEMBER_ID),
    ("an unknown member before the generation", "stable", lambda s: {"member": "ghost", "generation": 9},
     E.UNKNOWN_MEMBER_ID),
    ("an instance id nobody holds, with a member's id", "stable", lambda s: {"instance": "nobody"},
     E.UNKNOWN_MEMBER_ID),
    ("fencing before the generation", "static", lambda s: {"member": "ghost", "generation": 9}, E.FENCED_INSTANCE_ID),
    ("the generation before the rebalance", "preparing", lambda s: {"generation": s.generation - 1},
     E.ILLEGAL_GENERATION),
    ("a rebalance in progress", "preparing", lambda s: {}, E.REBALANCE_IN_PROGRESS),
    ("a stale generation while the group completes its rebalance", "completing",
     lambda s: {"generation": s.generation - 1}, E.ILLEGAL_GENERATION),
    ("the new generation before its SyncGroup", "completing", lambda s: {}, 0),
    ("a static member", "static", lambda s: {}, 0),
]


@pytest.mark.parametrize(("state", "fields", "expected"), [r[1:] for r in HEARTBEAT], ids=[r[0] for r in HEARTBEAT])
def test_heartbeat(states: GroupStates, state: str, fields: Callable[[Setup], dict[str, Any]], expected: int) -> None:
    s = states.build(state)
    f = {"group": s.group, "member": s.member, "generation": s.generation, "instance": s.instance,
         "coordinator": True} | fields(s)
    body = R[12].HeartbeatRequest(group_id=f["group"], generation_id=f["generation"], member_id=f["member"],
                                  group_instance_id=f["instance"])
    assert states.client(s.group, f["coordinator"]).call(12, 4, body).error_code == expected


# -- LeaveGroup -------------------------------------------------------------------------------------------
LEAVE: list[Row] = [
    ("empty group id", "none", lambda s: {"group": ""}, E.INVALID_GROUP_ID),
    ("not the coordinator", "stable", lambda s: {"coordinator": False}, E.NOT_COORDINATOR),
    ("a group that does not exist", "none", lambda s: {"member": "ghost"}, E.UNKNOWN_MEMBER_ID),
    ("an unknown member", "stable", lambda s: {"member": "ghost"}, E.UNKNOWN_MEMBER_ID),
    ("neither member id nor instance id", "stable", lambda s: {"member": ""}, E.UNKNOWN_MEMBER_ID),
    ("an instance id nobody holds, without member id", "stable", lambda s: {"member": "", "instance": "nobody"},
     E.UNKNOWN_MEMBER_ID),
    ("an instance id nobody holds, with a member's id", "stable", lambda s: {"instance": "nobody"},
     E.UNKNOWN_MEMBER_ID),
    ("an instance id held by another member id", "static", lambda s: {"member": "ghost"}, E.FENCED_INSTANCE_ID),
    ("a static member by its instance id alone", "static", lambda s: {"member": ""}, 0),
    ("a pending member", "pending", lambda s: {"member": s.other}, 0),
    ("v1: a pending member", "pending", lambda s: {"member": s.other, "version": 1}, 0),
    ("v1: an unknown member", "stable", lambda s: {"member": "ghost", "version": 1}, E.UNKNOWN_MEMBER_ID),
    ("the member", "stable", lambda s: {}, 0),
]


@pytest.mark.parametrize(("state", "fields", "expected"), [r[1:] for r in LEAVE], ids=[r[0] for r in LEAVE])
def test_leave_group(states: GroupStates, state: str, fields: Callable[[Setup], dict[str, Any]], expected: int) -> None:
    s = states.build(state)
    f = {"group": s.group, "member": s.member, "instance": s.instance, "version": 3, "coordinator": True} | fields(s)
    m = R[13]
    w = states.client(s.group, f["coordinator"])
    if f["version"] < 3:
        answer = w.call(13, f["version"], m.LeaveGroupRequest(group_id=f["group"], member_id=f["member"]))
        assert answer.error_code == expected
        return
    answer = w.call(13, f["version"], m.LeaveGroupRequest(group_id=f["group"], members=[
        m.MemberIdentity(member_id=f["member"], group_instance_id=f["instance"])]))
    got = answer.error_code or answer.members[0].error_code  # a group-level refusal is top level, as Kafka's
    assert got == expected
    if expected == 0 and state == "pending":  # the pending member is gone: its join is refused now
        again = w.call(11, 5, GroupStates.join_body(s.group, s.other))
        assert again.error_code == E.UNKNOWN_MEMBER_ID
