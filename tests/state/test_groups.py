"""The classic group coordinator on its own, driven by a manual clock."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state.clock import ManualClock
from mockbroker.state.groups import COMPLETING, EMPTY, PREPARING, STABLE, GroupCoordinator, JoinResult

PROTOCOLS = [("range", b"meta")]


def refused(call: Callable[..., object], *args: object) -> int:
    """The code of the KafkaError ``call(*args)`` raises (the coordinator raises its refusals)."""
    with pytest.raises(KafkaError) as exc:
        call(*args)
    return exc.value.code


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
    gc.heartbeat("g", first.member_id, 1)  # accepted: no KafkaError
    assert refused(gc.heartbeat, "g", first.member_id, 0) == ErrorCode.ILLEGAL_GENERATION
    assert refused(gc.heartbeat, "g", "nobody", 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_second_member_triggers_a_rebalance_that_waits_for_the_first() -> None:
    clock = ManualClock()
    gc = GroupCoordinator(clock)
    a = join(gc, require_known=False)[0].member_id
    gc.sync("g", a, 1, {a: b"x"}, lambda *r: None)
    waiting_b = join(gc, require_known=False)
    assert waiting_b == [] and gc.groups["g"].state == PREPARING
    assert refused(gc.heartbeat, "g", a, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    gc.commit("g", a, 1, [("t", 0, 5, -1, None)])  # commit on revoke is allowed (no KafkaError)
    assert gc.committed("g", "t", 0)[0] == 5
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
    gc.commit("solo", "", -1, [("t", 1, 7, 3, "m")])
    assert gc.committed("solo", "t", 1) == (7, 3, "m")
    join(gc, require_known=False)
    # Kafka (ClassicGroup.validateOffsetCommit): no member id and no generation into a live group
    assert refused(gc.commit, "g", "", -1, [("t", 0, 1, -1, None)]) == ErrorCode.UNKNOWN_MEMBER_ID
    assert gc.committed("g", "t", 0)[0] == -1


def test_protocol_is_chosen_by_vote_not_by_the_leader() -> None:
    gc = GroupCoordinator(ManualClock(), initial_delay_ms=100)
    results: list[JoinResult] = []
    prefs = [[("range", b""), ("roundrobin", b"")], [("roundrobin", b""), ("range", b"")],
             [("roundrobin", b""), ("range", b""), ("sticky", b"")]]
    for i, protocols in enumerate(prefs):
        gc.join("g", "", None, f"c{i}", 1000, 5000, "consumer", protocols, False, results.append)
    gc.clock.advance(200)
    gc.tick()
    assert {r.protocol_name for r in results} == {"roundrobin"} and len(results) == 3


def test_static_member_takes_over_and_fences_the_old_id() -> None:
    gc = GroupCoordinator(ManualClock())
    out: list[JoinResult] = []
    gc.join("g", "", None, "lead", 1000, 5000, "consumer", PROTOCOLS, False, out.append)
    lead = out[0].member_id
    gc.sync("g", lead, 1, {lead: b"L"}, lambda *r: None)
    gc.join("g", "", "inst", "c", 1000, 5000, "consumer", PROTOCOLS, True, out.append)  # no MEMBER_ID_REQUIRED
    gc.join("g", lead, None, "lead", 1000, 5000, "consumer", PROTOCOLS, True, out.append)
    static = next(r.member_id for r in out[1:] if r.member_id != lead)
    gen = gc.groups["g"].generation
    assert gen == 2 and gc.groups["g"].leader == lead
    gc.sync("g", lead, gen, {lead: b"L", static: b"S"}, lambda *r: None)
    assert gc.groups["g"].state == STABLE
    restarted: list[JoinResult] = []
    gc.join("g", "", "inst", "c", 1000, 5000, "consumer", PROTOCOLS, True, restarted.append)
    new = restarted[0].member_id
    assert new != static and (restarted[0].error, restarted[0].generation) == (0, gen)
    assert gc.groups["g"].state == STABLE and gc.groups["g"].generation == gen  # no rebalance
    got: list = []
    gc.sync("g", new, gen, {}, lambda *r: got.append(r), "inst")
    assert got == [(0, b"S")]  # the old assignment
    assert refused(gc.heartbeat, "g", static, gen, "inst") == ErrorCode.FENCED_INSTANCE_ID
    zombie: list[JoinResult] = []
    assert refused(gc.join, "g", static, "inst", "c", 1000, 5000, "consumer", PROTOCOLS, True,
                   zombie.append) == ErrorCode.FENCED_INSTANCE_ID
    assert zombie == []  # refused at once: nothing through the reply callback
    assert refused(gc.leave, "g", static, "inst") == ErrorCode.FENCED_INSTANCE_ID
    gc.leave("g", "", "inst")
    assert new not in gc.groups["g"].members


def _static_group(gc: GroupCoordinator) -> tuple[str, str, int]:
    """A stable group of two static members, "lead" (its leader) and "other"; their ids and generation."""
    out: list[JoinResult] = []
    gc.join("g", "", "lead", "c", 1000, 5000, "consumer", PROTOCOLS, True, out.append)
    lead = out[0].member_id
    gc.sync("g", lead, 1, {lead: b"L"}, lambda *r: None)
    gc.join("g", "", "other", "c", 1000, 5000, "consumer", PROTOCOLS, True, out.append)
    gc.join("g", lead, "lead", "c", 1000, 5000, "consumer", PROTOCOLS, True, out.append)
    other = next(r.member_id for r in out[1:] if r.member_id != lead)
    gen = gc.groups["g"].generation
    gc.sync("g", lead, gen, {lead: b"L", other: b"O"}, lambda *r: None)
    assert gc.groups["g"].state == STABLE and gc.groups["g"].leader == lead
    return lead, other, gen


def test_static_leader_rejoining_gets_skip_assignment_from_v9() -> None:
    gc = GroupCoordinator(ManualClock())
    _lead, other, gen = _static_group(gc)
    back: list[JoinResult] = []
    gc.join("g", "", "lead", "c", 1000, 5000, "consumer", PROTOCOLS, True, back.append, skip_ok=True)
    new = back[0].member_id
    assert (back[0].error, back[0].generation, back[0].leader, back[0].skip_assignment) == (0, gen, new, True)
    assert sorted(m[1] for m in back[0].members) == ["lead", "other"]  # the leader sees every member
    assert gc.groups["g"].state == STABLE and gc.groups["g"].leader == new
    got: list = []
    gc.sync("g", new, gen, {}, lambda *r: got.append(r), "lead")  # it assigns nothing: its old assignment
    assert got == [(0, b"L")]
    gc.heartbeat("g", other, gen, "other")  # the other member goes on undisturbed (no KafkaError)


def test_static_leader_rejoining_before_v9_is_told_its_old_id_and_acts_as_a_follower() -> None:
    gc = GroupCoordinator(ManualClock())
    lead, _other, gen = _static_group(gc)
    back: list[JoinResult] = []
    gc.join("g", "", "lead", "c", 1000, 5000, "consumer", PROTOCOLS, True, back.append)
    new = back[0].member_id
    assert (back[0].error, back[0].generation, back[0].leader, back[0].skip_assignment) == (0, gen, lead, False)
    assert back[0].members == [] and new != lead
    assert gc.groups["g"].state == STABLE and gc.groups["g"].leader == new
    got: list = []
    gc.sync("g", new, gen, {}, lambda *r: got.append(r), "lead")
    assert got == [(0, b"L")]


def test_static_member_rejoining_with_a_protocol_that_changes_the_vote_rebalances() -> None:
    gc = GroupCoordinator(ManualClock())
    _lead, _other, gen = _static_group(gc)
    back: list[JoinResult] = []
    gc.join("g", "", "other", "c", 1000, 5000, "consumer", [("range", b"meta")], True, back.append, skip_ok=True)
    assert back == [] or back[0].generation == gen  # same protocol chosen: no rebalance...
    assert gc.groups["g"].state == STABLE
    changed: list[JoinResult] = []
    gc.join("g", "", "lead", "c", 1000, 5000, "consumer", [("sticky", b"m"), ("range", b"meta")], True,
            changed.append, skip_ok=True)
    assert gc.groups["g"].state == STABLE  # "range" is still the only common protocol: still no rebalance
    sticky_first: list[JoinResult] = []
    gc.join("g", "", "other", "c", 1000, 5000, "consumer", [("sticky", b"m2"), ("range", b"meta")], True,
            sticky_first.append, skip_ok=True)
    assert gc.groups["g"].state == PREPARING and sticky_first == []  # both now vote "sticky": rebalance
