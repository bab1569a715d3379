"""Pure state tests for KIP-932 share groups: the simple assignor, ShareGroupHeartbeat membership on a
manual clock, and the share-session cache of ShareFetch / ShareAcknowledge."""

from __future__ import annotations

from typing import Any

import pytest

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state.clock import ManualClock
from mockbroker.state.share_groups import ShareGroups, ShareGroupSettings, simple_assign
from mockbroker.state.share_sessions import INT32_MAX, SHARE_SESSION_LIMIT_REACHED, ShareSessions, next_epoch

T_ID, U_ID = b"t" * 16, b"u" * 16


def code(fn: Any) -> int:
    with pytest.raises(KafkaError) as exc:
        fn()
    return exc.value.code


# -- assignor -------------------------------------------------------------------------------------------
def test_fewer_members_than_partitions_spread_without_sharing() -> None:
    out = simple_assign({"a": {"t"}, "b": {"t"}}, {"t": 4})
    assert out == {"a": {"t": {0, 2}}, "b": {"t": {1, 3}}}


def test_more_members_than_partitions_share_every_partition() -> None:
    out = simple_assign({"a": {"t"}, "b": {"t"}, "c": {"t"}}, {"t": 2})
    holders = {p: sorted(m for m, parts in out.items() if p in parts.get("t", set())) for p in (0, 1)}
    assert all(len(h) == 2 for h in holders.values())  # ceil(3 / 2) members on each partition
    assert sorted(len(parts["t"]) for parts in out.values()) == [1, 1, 2]
    assert out == {"a": {"t": {0, 1}}, "b": {"t": {0}}, "c": {"t": {1}}}


@pytest.mark.parametrize(("members", "partitions"), [(1, 1), (2, 5), (3, 3), (4, 7), (5, 2), (7, 3), (9, 1)])
def test_balance_bounds_for_any_group_size(members: int, partitions: int) -> None:
    names = [f"m{i}" for i in range(members)]
    out = simple_assign({m: {"t"} for m in names}, {"t": partitions})
    sharing = -(-members // partitions)
    holders = [sum(p in out[m].get("t", set()) for m in names) for p in range(partitions)]
    assert holders == [sharing] * partitions
    sizes = [len(out[m].get("t", set())) for m in names]
    assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1


def test_assignor_is_sticky_when_a_member_joins() -> None:
    first = simple_assign({"a": {"t"}, "b": {"t"}}, {"t": 6})
    second = simple_assign({"a": {"t"}, "b": {"t"}, "c": {"t"}}, {"t": 6}, first)
    assert sorted(len(p["t"]) for p in second.values()) == [2, 2, 2]
    assert second["a"]["t"] <= first["a"]["t"] and second["b"]["t"] <= first["b"]["t"]
    assert set().union(*(p["t"] for p in second.values())) == set(range(6))


def test_heterogeneous_subscriptions_balance_topic_by_topic() -> None:
    out = simple_assign({"a": {"t"}, "b": {"u"}, "c": {"t", "u"}}, {"t": 2, "u": 2})
    assert set(out["a"]) == {"t"} and set(out["b"]) == {"u"}
    assert len(out["c"]["t"]) == 1 and len(out["c"]["u"]) == 1
    assert out["a"]["t"] | out["c"]["t"] == {0, 1} and out["b"]["u"] | out["c"]["u"] == {0, 1}


# -- heartbeats -----------------------------------------------------------------------------------------
class Coordinator:
    def __init__(self, topics: dict[str, tuple[bytes, int]] | None = None, **settings: int) -> None:
        self.topic_map = topics if topics is not None else {"t": (T_ID, 2)}
        self.clock = ManualClock(0)
        self.settings = ShareGroupSettings(**{"session_timeout_ms": 1000, **settings})
        self.groups = ShareGroups(self.clock, lambda: self.topic_map, lambda _g: self.settings)

    def beat(self, member: str, epoch: int, subscribed: list[str] | None = None, group: str = "g",
             rack: str | None = None) -> Any:
        if epoch == 0 and subscribed is None:
            subscribed = ["t"]
        return self.groups.heartbeat(group, member, epoch, rack, subscribed, "client", "/10.0.0.1")


def test_join_gets_every_partition_and_the_group_epoch() -> None:
    c = Coordinator()
    r = c.beat("m1", 0)
    assert (r.member_id, r.member_epoch, r.heartbeat_interval_ms) == ("m1", 1, 5000)
    assert r.assignment == {T_ID: {0, 1}}
    again = c.beat("m1", 1, None)
    assert again.assignment is None and again.member_epoch == 1  # unchanged: null assignment
    d = c.groups.describe("g")
    assert (d.state, d.group_epoch, d.assignment_epoch, d.assignor_name) == ("Stable", 1, 1, "simple")
    assert d.members[0].assignment == [(T_ID, "t", [0, 1])] and d.members[0].client_id == "client"
    assert [g.group_type for g in c.groups.listed()] == ["share"]


def test_two_members_split_partitions_without_revocation() -> None:
    c = Coordinator()
    c.beat("a", 0)
    r = c.beat("b", 0)
    assert r.member_epoch == 2 and r.assignment == {T_ID: {1}}
    ra = c.beat("a", 1)
    assert ra.member_epoch == 2 and ra.assignment == {T_ID: {0}}  # handed at once, epoch moves on


def test_three_members_on_two_partitions_share() -> None:
    c = Coordinator()
    epochs = {m: c.beat(m, 0).member_epoch for m in ("a", "b", "c")}
    assert epochs == {"a": 1, "b": 2, "c": 3}
    # the target went a {0} b {1} (epoch 2), then a {0, 1} b {1} c {0} (epoch 3): a and b never heard of epoch
    # 2's, so neither one's partitions changed: the epoch moves on, the assignment answer is null
    assert (c.beat("a", 1).member_epoch, c.beat("a", 3).assignment) == (3, None)
    assert (c.beat("b", 2).member_epoch, c.beat("b", 3).assignment) == (3, None)
    assert c.beat("c", 3).member_epoch == 3
    got = {m: c.groups.assignment("g", m)[T_ID] for m in ("a", "b", "c")}
    assert got == {"a": {0, 1}, "b": {1}, "c": {0}}  # each partition shared by ceil(3 / 2) members


def test_a_lost_join_answer_can_be_retried_with_epoch_zero() -> None:
    c = Coordinator()
    c.beat("a", 0)
    again = c.beat("a", 0)  # epoch 0 is a's previous epoch: accepted, the assignment answered again
    assert again.member_epoch == 1 and again.assignment == {T_ID: {0, 1}}
    assert c.groups.describe("g").group_epoch == 1


def test_deleted_topic_leaves_the_assignment() -> None:
    c = Coordinator({"t": (T_ID, 1), "u": (U_ID, 1)})
    c.beat("a", 0, ["t", "u"])
    del c.topic_map["u"]
    r = c.beat("a", 1)
    assert r.member_epoch == 2 and r.assignment == {T_ID: {0}}


def test_leave_answers_minus_one_and_others_take_over() -> None:
    c = Coordinator()
    c.beat("a", 0)
    c.beat("b", 0)
    c.beat("a", 1)
    left = c.beat("b", -1)
    assert (left.member_id, left.member_epoch, left.heartbeat_interval_ms, left.assignment) == ("b", -1, 0, None)
    r = c.beat("a", 2)
    assert r.member_epoch == 3 and r.assignment == {T_ID: {0, 1}}
    assert code(lambda: c.beat("b", 2)) == ErrorCode.UNKNOWN_MEMBER_ID
    assert code(lambda: c.beat("x", -1)) == ErrorCode.UNKNOWN_MEMBER_ID
    assert code(lambda: c.beat("x", -1, group="nope")) == ErrorCode.GROUP_ID_NOT_FOUND


def test_session_expiry_on_the_manual_clock() -> None:
    c = Coordinator()
    c.beat("a", 0)
    c.beat("b", 0)
    c.clock.advance(600)
    c.beat("a", 1)
    c.clock.advance(600)
    assert c.groups.tick() == [("g", "b")]  # a heartbeat 600 ms ago, b 1200 ms ago
    assert c.beat("a", 2).assignment == {T_ID: {0, 1}}
    c.clock.advance(1001)
    assert c.groups.tick() == [("g", "a")]
    assert c.groups.describe("g").state == "Empty" and not c.groups.timers_live()


def test_new_and_grown_topics_reach_members_on_their_next_heartbeat() -> None:
    c = Coordinator()
    c.beat("a", 0, ["t", "u"])
    c.topic_map["u"] = (U_ID, 1)
    r = c.beat("a", 1)
    assert r.member_epoch == 2 and r.assignment == {T_ID: {0, 1}, U_ID: {0}}
    c.topic_map["t"] = (T_ID, 3)
    assert c.beat("a", 2).assignment == {T_ID: {0, 1, 2}, U_ID: {0}}


def test_subscription_change_bumps_the_epoch_and_filters_the_assignment() -> None:
    c = Coordinator({"t": (T_ID, 1), "u": (U_ID, 1)})
    c.beat("a", 0, ["t", "u"])
    r = c.beat("a", 1, ["u"])
    assert r.member_epoch == 2 and r.assignment == {U_ID: {0}}


def test_request_validation_is_kafkas() -> None:
    c = Coordinator()
    assert code(lambda: c.beat("", 0)) == ErrorCode.INVALID_REQUEST
    assert code(lambda: c.beat("  ", 0)) == ErrorCode.INVALID_REQUEST
    assert code(lambda: c.beat("a", 0, [])) == ErrorCode.INVALID_REQUEST
    assert code(lambda: c.beat("a", 0, group="")) == ErrorCode.INVALID_REQUEST
    assert code(lambda: c.beat("a", 0, rack=" ")) == ErrorCode.INVALID_REQUEST
    assert code(lambda: c.beat("a", -2)) == ErrorCode.INVALID_REQUEST
    assert code(lambda: c.beat("a", 3)) == ErrorCode.GROUP_ID_NOT_FOUND  # no such group yet


def test_fencing_accepts_only_the_current_or_previous_epoch() -> None:
    c = Coordinator()
    c.beat("a", 0)
    c.beat("b", 0)
    assert c.beat("a", 1).member_epoch == 2
    assert code(lambda: c.beat("a", 5)) == ErrorCode.FENCED_MEMBER_EPOCH
    assert c.beat("a", 1).member_epoch == 2  # the previous epoch: the last answer may have been lost
    c.beat("b", -1)
    c.beat("a", 2)  # epoch 3 now, previous 2
    assert code(lambda: c.beat("a", 1)) == ErrorCode.FENCED_MEMBER_EPOCH
    assert code(lambda: c.beat("zz", 3)) == ErrorCode.UNKNOWN_MEMBER_ID


def test_group_max_size_and_a_group_of_another_type() -> None:
    c = Coordinator(max_size=2)
    c.beat("a", 0)
    c.beat("b", 0)
    assert code(lambda: c.beat("c", 0)) == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert c.beat("a", 1).member_epoch == 2  # members already in are fine
    other = ShareGroups(c.clock, lambda: c.topic_map, lambda _g: c.settings, foreign_group=lambda g: g == "classic")
    assert code(lambda: other.heartbeat("classic", "m", 0, None, ["t"])) == ErrorCode.GROUP_ID_NOT_FOUND


def test_describe_list_and_delete() -> None:
    c = Coordinator()
    assert code(lambda: c.groups.describe("g")) == ErrorCode.GROUP_ID_NOT_FOUND
    assert code(lambda: c.groups.delete("g")) == ErrorCode.GROUP_ID_NOT_FOUND
    c.beat("a", 0)
    assert code(lambda: c.groups.delete("g")) == ErrorCode.NON_EMPTY_GROUP
    c.beat("a", -1)
    assert [g.group_id for g in c.groups.listed()] == ["g"]  # an empty share group stays
    c.groups.delete("g")
    assert c.groups.listed() == []


# -- share sessions ----------------------------------------------------------------------------------------
P0, P1, P2 = (T_ID, 0), (T_ID, 1), (U_ID, 0)


def test_session_opens_moves_on_and_forgets() -> None:
    s = ShareSessions()
    up = s.accept("g", "m", 0, [P0, P1])
    assert up.session.epoch == 1 and up.added == [P0, P1]
    up = s.accept("g", "m", 1, [P2], forgotten=[P0])
    assert up.session.epoch == 2 and up.added == [P2] and up.removed == [P0]
    assert s.get("g", "m") is not None and s.get("g", "m").partition_list() == [P1, P2]  # type: ignore[union-attr]
    up = s.accept("g", "m", 2, [P1])  # already there: not added again
    assert up.added == [] and up.session.epoch == 3


def test_session_epoch_errors() -> None:
    s = ShareSessions()
    assert code(lambda: s.accept("g", "m", 1)) == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert code(lambda: s.accept("g", "m", -1)) == ErrorCode.SHARE_SESSION_NOT_FOUND
    s.accept("g", "m", 0, [P0])
    assert code(lambda: s.accept("g", "m", 2)) == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert code(lambda: s.accept("g", "m", 0, [P0], has_acknowledgements=True)) == ErrorCode.INVALID_REQUEST
    assert s.accept("g", "m", 1).session.epoch == 2  # the refused requests did not move it


def test_epoch_zero_replaces_and_minus_one_closes() -> None:
    s = ShareSessions()
    s.accept("g", "m", 0, [P0])
    s.accept("g", "m", 1)
    up = s.accept("g", "m", 0, [P1])
    assert up.replaced == [P0] and up.session.epoch == 1 and up.session.partition_list() == [P1]
    closed = s.accept("g", "m", -1)
    assert closed.closed and closed.session.partition_list() == [P1] and len(s) == 0


def test_share_acknowledge_session_rules() -> None:
    s = ShareSessions()
    assert code(lambda: s.acknowledge("g", "m", 0)) == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert code(lambda: s.acknowledge("g", "m", 1)) == ErrorCode.SHARE_SESSION_NOT_FOUND
    s.accept("g", "m", 0, [P0])
    assert s.acknowledge("g", "m", 1).session.epoch == 2
    assert code(lambda: s.acknowledge("g", "m", 1)) == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert s.acknowledge("g", "m", -1).closed and s.get("g", "m") is None


def test_session_limit_and_member_removal() -> None:
    s = ShareSessions(lambda: 2)
    s.accept("g", "a", 0, [P0])
    s.accept("g", "b", 0, [P1])
    assert code(lambda: s.accept("g", "c", 0)) == SHARE_SESSION_LIMIT_REACHED == 133
    s.accept("g", "a", 0, [P2])  # replacing its own session is not a new one
    assert s.drop_member("g", "a") == [P2] and s.close("g", "a") == []
    s.accept("g", "c", 0)
    assert sorted(s.drop_group("g")) == ["b", "c"] and len(s) == 0


def test_next_epoch_wraps_as_kafka() -> None:
    assert next_epoch(0) == 1 and next_epoch(41) == 42
    assert next_epoch(INT32_MAX) == 1 and next_epoch(-1) == -1
