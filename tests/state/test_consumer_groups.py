"""Pure state tests for KIP-848 groups: the assignors and the heartbeat state machine on a manual clock."""

from __future__ import annotations

from typing import Any

import pytest

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state.assignors import range_assign, uniform_assign
from mockbroker.state.clock import ManualClock
from mockbroker.state.consumer_groups import ConsumerGroupLogic, ConsumerGroupState

CONFIG = {"group.consumer.session.timeout.ms": 1000}


def test_range_gives_contiguous_ranges_in_member_order() -> None:
    out = range_assign({"b": {"t"}, "a": {"t"}, "c": {"u"}}, {"t": 5, "u": 2})
    assert out == {"a": {"t": {0, 1, 2}}, "b": {"t": {3, 4}}, "c": {"u": {0, 1}}}


def test_uniform_is_balanced_sticky_and_respects_subscriptions() -> None:
    members = {"a": {"t"}, "b": {"t"}, "c": {"t", "u"}}
    first = uniform_assign(members, {"t": 6, "u": 3})
    sizes = sorted(sum(len(p) for p in parts.values()) for parts in first.values())
    assert sizes == [3, 3, 3]
    assert all(set(parts) <= members[m] for m, parts in first.items())
    members["d"] = {"t"}
    second = uniform_assign(members, {"t": 6, "u": 3}, first)
    moved = sum(len(p - second[m].get(t, set())) for m, parts in first.items() for t, p in parts.items())
    assert moved <= 3  # only what the newcomer needs moves
    assert sorted(sum(len(p) for p in parts.values()) for parts in second.values()) == [2, 2, 2, 3]


class Cluster:
    def __init__(self, topics: dict[str, int]) -> None:
        self.topics = topics
        self.clock = ManualClock(0)
        self.logic = ConsumerGroupLogic(self.clock, lambda: self.topics, CONFIG)
        self.group = ConsumerGroupState()

    def beat(self, member_id: str, epoch: int, owned: dict[str, set[int]] | None = None, **kw: Any) -> Any:
        args: dict[str, Any] = {"instance_id": None, "rack_id": None, "rebalance_timeout_ms": -1, "subscribed": None,
                                "regex": None, "assignor": None, "client_id": "c", "client_host": "h",
                                "generate_id": False}
        if epoch == 0:
            args.update(rebalance_timeout_ms=5000, subscribed=["t"], owned={})
        args.update(kw)
        return self.logic.heartbeat(self.group, member_id, epoch, owned=owned if epoch else args.pop("owned"),
                                    **{k: v for k, v in args.items() if k != "owned"})


def code(fn: Any) -> int:
    with pytest.raises(KafkaError) as exc:
        fn()
    return exc.value.code


def test_join_reconcile_revoke_then_reassign() -> None:
    c = Cluster({"t": 4})
    a = c.beat("a", 0)
    assert a.epoch == 1 and a.assignment == {"t": {0, 1, 2, 3}}
    b = c.beat("b", 0)
    assert b.epoch == 2 and b.assignment == {}  # a still owns everything
    a2 = c.beat("a", 1, owned={"t": {0, 1, 2, 3}})
    assert a2.epoch == 1 and sum(len(p) for p in a2.assignment.values()) == 2  # told to give two up, epoch held
    assert c.beat("b", 2).assignment is None  # nothing released yet
    a3 = c.beat("a", 1, owned=a2.assignment)
    assert a3.epoch == 2
    b2 = c.beat("b", 2)
    assert b2.assignment and sorted(b2.assignment["t"] | a2.assignment["t"]) == [0, 1, 2, 3]
    assert c.group.state_name() == "Stable"


def test_errors() -> None:
    c = Cluster({"t": 2})
    assert code(lambda: c.beat("", 0)) == ErrorCode.INVALID_REQUEST  # v1: the client names itself
    assert code(lambda: c.beat("x", 0, rebalance_timeout_ms=-1)) == ErrorCode.INVALID_REQUEST
    assert code(lambda: c.beat("x", 0, subscribed=None)) == ErrorCode.INVALID_REQUEST
    assert code(lambda: c.beat("x", 0, assignor="sticky")) == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert code(lambda: c.beat("x", 0, regex="(")) == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert code(lambda: c.beat("ghost", 3)) == ErrorCode.UNKNOWN_MEMBER_ID
    c.beat("a", 0)
    assert code(lambda: c.beat("a", 7)) == ErrorCode.FENCED_MEMBER_EPOCH
    assert c.beat("", 0, generate_id=True).member_id  # v0: the coordinator names the member


def test_rebalance_timeout_and_session_timeout_remove_members() -> None:
    c = Cluster({"t": 2})
    c.beat("a", 0, rebalance_timeout_ms=300)
    c.beat("b", 0)
    for _ in range(2):  # "a" keeps heartbeating but never gives up the partition "b" needs
        c.beat("a", 1, owned={"t": {0, 1}})
        c.beat("b", 2)
        c.clock.advance(200)
        c.logic.tick(c.group)
    assert set(c.group.members) == {"b"}
    c.clock.advance(1001)  # and "b" stops heartbeating
    c.logic.tick(c.group)
    assert c.group.members == {} and c.group.state_name() == "Empty"


def test_static_member_rejoins_with_its_assignment() -> None:
    c = Cluster({"t": 2})
    first = c.beat("a", 0, instance_id="i1")
    epoch = c.group.group_epoch
    assert code(lambda: c.beat("b", 0, instance_id="i1")) == ErrorCode.UNRELEASED_INSTANCE_ID
    assert c.beat("a", -2).epoch == -2
    back = c.beat("a2", 0, instance_id="i1")
    assert back.assignment == first.assignment and c.group.group_epoch == epoch  # no rebalance
    assert set(c.group.members) == {"a2"}


def test_new_partitions_bump_the_group_epoch() -> None:
    c = Cluster({"t": 2})
    c.beat("a", 0)
    c.topics["t"] = 4
    r = c.beat("a", 1, owned={"t": {0, 1}})
    assert r.epoch == 2 and r.assignment == {"t": {0, 1, 2, 3}}


def test_commits_check_member_epoch() -> None:
    c = Cluster({"t": 2})
    c.beat("a", 0)
    c.logic.validate_commit(c.group, "a", 1)  # current: no KafkaError
    with pytest.raises(KafkaError) as stale:
        c.logic.validate_commit(c.group, "a", 0)
    assert stale.value.code == ErrorCode.STALE_MEMBER_EPOCH
    with pytest.raises(KafkaError) as unknown:
        c.logic.validate_commit(c.group, "zz", 1)
    assert unknown.value.code == ErrorCode.UNKNOWN_MEMBER_ID
    with pytest.raises(KafkaError) as admin:  # an admin's commit into a group with members, as Kafka
        c.logic.validate_commit(c.group, "", -1)
    assert admin.value.code == ErrorCode.UNKNOWN_MEMBER_ID
    c.beat("a", -1)  # the member leaves: now the admin's commit goes in
    c.logic.validate_commit(c.group, "", -1)
