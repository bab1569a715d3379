"""Pure state tests for racks and the rack-aware replica selector (mockbroker.state.replica_selector)."""

from __future__ import annotations

import pytest

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state import broker_actions
from mockbroker.state.cluster import ClusterState
from mockbroker.state.replica_selector import (
    LEADER_ONLY,
    RACK_AWARE,
    check_selector,
    in_sync,
    parse_racks,
    preferred_read_replica,
    rack_aware,
    serves_consumers,
)


def _cluster(racks: list[str | None], selector: str = RACK_AWARE) -> ClusterState:
    state = ClusterState({"replica.selector.class": selector})
    for node, rack in enumerate(racks):
        state.add_broker(node, "127.0.0.1", 9092 + node, rack)
    return state


def test_parse_racks_forms() -> None:
    assert parse_racks(None, 3) == {}
    assert parse_racks(["a", "b", "c"], 3) == {0: "a", 1: "b", 2: "c"}
    assert parse_racks("a, b ,c", 3) == {0: "a", 1: "b", 2: "c"}
    assert parse_racks({2: "z"}, 3) == {2: "z"}


@pytest.mark.parametrize(("racks", "message"), [
    (["a", "b"], "2 rack name(s) given for 3 broker(s)"),
    ("a,,c", "the rack of broker 1 is empty"),
    ({0: ""}, "the rack of broker 0 is empty"),
    ({3: "a"}, "node id 3 is not one of the brokers 0-2"),
    ({"1": "a"}, "node id '1' is not one of the brokers 0-2"),
])
def test_parse_racks_refuses_bad_input_in_one_line(racks: object, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_racks(racks, 3)  # type: ignore[arg-type]
    assert message in str(info.value) and "\n" not in str(info.value)


def test_selector_names() -> None:
    check_selector("")
    check_selector(RACK_AWARE)
    check_selector(LEADER_ONLY)
    with pytest.raises(KafkaError) as info:
        check_selector("org.apache.kafka.common.replica.LeaderSelecter")
    assert info.value.code == ErrorCode.INVALID_CONFIG
    assert f"did you mean {LEADER_ONLY}?" in info.value.message
    assert rack_aware(_cluster([None]))
    assert not rack_aware(_cluster([None], LEADER_ONLY))
    assert not rack_aware(ClusterState())


def test_the_preferred_read_replica_follows_kafkas_rule() -> None:
    state = _cluster(["a", "b", "c", "b"])
    log = state.create_topic("t", 1, 3, assignment=[[0, 3, 1]]).partitions[0]
    log.next_offset = 10
    assert preferred_read_replica(state, log, "b", 0) == 1  # two in rack b: the lowest id (all caught up)
    assert preferred_read_replica(state, log, "b", 10) == 1  # the log end is readable there too
    assert preferred_read_replica(state, log, "b", 11) == -1  # beyond every replica's log end
    assert preferred_read_replica(state, log, "a", 0) == -1  # the leader's own rack: the leader
    assert preferred_read_replica(state, log, "c", 0) == -1  # broker 2 holds no replica
    assert preferred_read_replica(state, log, "", 0) == -1
    log.log_start_offset = 5
    assert preferred_read_replica(state, log, "b", 4) == -1  # below every replica's log start
    broker_actions.take_down(state, 1)  # out of the ISR
    assert in_sync(state, log) == [0, 3]
    assert preferred_read_replica(state, log, "b", 6) == 3


def test_who_serves_consumers() -> None:
    state = _cluster(["a", "b", "c"])
    log = state.create_topic("t", 1, 2, assignment=[[0, 1]]).partitions[0]
    assert serves_consumers(log, 0) and serves_consumers(log, 1) and not serves_consumers(log, 2)
