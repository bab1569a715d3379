"""The classic group coordinator on its own, driven by a manual clock."""

from __future__ import annotations

from mockbroker.errors import ErrorCode
from mockbroker.state.clock import ManualClock
from mockbroker.state.groups import COMPLETING, EMPTY, PREPARING, STABLE, GroupCoordinator, JoinResult

PROTOCOLS = [("range", b"meta")]


def join(gc: GroupCoordinator, member: str = "", require_known: bool = True) -> list[JoinResult]:
    out: list[JoinResult] = []
    gc.join("g", member, None, "client", 1000, 5000, "consumer", PROTOCOLS, require_known, out.append)
    return out


def test_member_id_required_then_join_sync_stable() -> None:
    gc = GroupCoordinator(ManualClock())
    first = join(gc)[0]
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED and first.member_id
    result = join(gc, first.member_id)[0]
    assert (result.error, result.generation, result.leader) == (0, 1, first.member_id)
    assert [m[0] for m in result.members] == [first.member_id]
    assert gc.groups["g"].state == COMPLETING
    synced: list = []
    gc.sync("g", first.member_id, 1, {first.member_id: b"assigned"}, lambda *r: synced.append(r))
    assert synced == [(0, b"assigned")] and gc.groups["g"].state == STABLE
    assert gc.heartbeat("g", first.member_id, 1) == 0
    assert gc.heartbeat("g", first.member_id, 0) == ErrorCode.ILLEGAL_GENERATION
    assert gc.heartbeat("g", "nobody", 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_second_member_triggers_a_rebalance_that_waits_for_the_first() -> None:
    clock = ManualClock()
    gc = GroupCoordinator(clock)
    a = join(gc, require_known=False)[0].member_id
    gc.sync("g", a, 1, {a: b"x"}, lambda *r: None)
    waiting_b = join(gc, require_known=False)
    assert waiting_b == [] and gc.groups["g"].state == PREPARING
    assert gc.heartbeat("g", a, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    assert gc.commit("g", a, 1, [("t", 0, 5, -1, None)]) == 0  # commit on revoke is allowed
    rejoin_a = join(gc, a)
    assert rejoin_a[0].generation == 2 and waiting_b[0].generation == 2
    assert len(rejoin_a[0].members) == 2 and waiting_b[0].members == []  # a stays leader


def test_session_expiry_removes_a_silent_member() -> None:
    clock = ManualClock()
    gc = GroupCoordinator(clock)
    a = join(gc, require_known=False)[0].member_id
    gc.sync("g", a, 1, {}, lambda *r: None)
    clock.advance(900)
    gc.tick()
    assert a in gc.groups["g"].members
    clock.advance(200)
    gc.tick()
    assert gc.groups["g"].members == {} and gc.groups["g"].state == EMPTY


def test_rebalance_timeout_drops_members_that_do_not_rejoin() -> None:
    clock = ManualClock()
    gc = GroupCoordinator(clock)
    a = join(gc, require_known=False)[0].member_id
    gc.sync("g", a, 1, {}, lambda *r: None)
    b = join(gc, require_known=False)
    clock.advance(5001)
    gc.tick()
    assert b[0].error == 0 and b[0].leader == b[0].member_id and a not in gc.groups["g"].members


def test_simple_commits_only_without_members() -> None:
    gc = GroupCoordinator(ManualClock())
    assert gc.commit("solo", "", -1, [("t", 1, 7, 3, "m")]) == 0
    assert gc.committed("solo", "t", 1) == (7, 3, "m")
    join(gc, require_known=False)
    assert gc.commit("g", "", -1, [("t", 0, 1, -1, None)]) == ErrorCode.ILLEGAL_GENERATION
