"""Classic groups off the happy path with real clients: a session timeout outside the broker's bounds
(INVALID_SESSION_TIMEOUT) and a static group's leader restarting without a rebalance (KIP-345/814)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from mockbroker.cluster import MockCluster
from mockbroker.protocol import api
from tests.broker.wire import WireClient

from .test_groups import consumer, poll_until

pytestmark = pytest.mark.clients


def _first_error(c: Consumer, timeout: float = 15) -> KafkaError | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = c.poll(0.1)
        if m is not None and m.error() is not None:
            return m.error()
    return None


def test_confluent_session_timeout_below_the_minimum_is_refused() -> None:
    with MockCluster(topics={"t": 1}) as cluster:
        c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "short",
                      "session.timeout.ms": 200, "heartbeat.interval.ms": 50})
        c.subscribe(["t"])
        try:
            err = _first_error(c)
        finally:
            c.close()
        assert err is not None and err.code() == KafkaError.INVALID_SESSION_TIMEOUT, err
        assert "short" not in cluster.state.groups.groups  # the group was never made


def test_confluent_session_timeout_above_a_lowered_maximum_is_refused_and_the_bounds_are_settable() -> None:
    config = {"group.min.session.timeout.ms": 100, "group.max.session.timeout.ms": 5000}
    with MockCluster(topics={"t": 1}, config=config) as cluster:
        short = consumer(cluster, "lowered", **{"session.timeout.ms": 200, "heartbeat.interval.ms": 50})
        long = consumer(cluster, "lowered-long", **{"session.timeout.ms": 6000})
        short.subscribe(["t"])
        long.subscribe(["t"])
        try:
            poll_until([short], lambda _: len(short.assignment()) == 1, timeout=15)
            assert [p.partition for p in short.assignment()] == [0]  # 200 ms is within the lowered bounds
            err = _first_error(long)
        finally:
            short.close()
            long.close()
        assert err is not None and err.code() == KafkaError.INVALID_SESSION_TIMEOUT, err


def test_kafka_python_session_timeout_below_the_minimum_raises() -> None:
    from kafka import KafkaConsumer
    from kafka.errors import InvalidSessionTimeoutError

    with MockCluster(topics={"t": 1}) as cluster:
        c = KafkaConsumer("t", bootstrap_servers=cluster.bootstrap_servers, group_id="short-kp",
                          session_timeout_ms=200, heartbeat_interval_ms=50, request_timeout_ms=10000)
        try:
            with pytest.raises(InvalidSessionTimeoutError):
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline:
                    c.poll(timeout_ms=100)
        finally:
            c.close()


def _join(client: WireClient, version: int, session_ms: int) -> Any:
    """One JoinGroup over a raw socket; returns the decoded answer."""
    m = api.request_module(11)
    return client.call(11, version, m.JoinGroupRequest(
        group_id="raw", session_timeout_ms=session_ms, rebalance_timeout_ms=10000, member_id="",
        group_instance_id=None, protocol_type="consumer",
        protocols=[m.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01")]))


@pytest.mark.parametrize("version", [0, 5, 9])
def test_raw_join_outside_the_bounds_answers_invalid_session_timeout(version: int) -> None:
    with MockCluster() as cluster:
        client = WireClient(int(cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)[1]))
        try:
            for session_ms in (5999, 1800001):
                answer = _join(client, version, session_ms)
                assert answer.error_code == 26  # INVALID_SESSION_TIMEOUT
                assert answer.generation_id == -1 and answer.members == []
            # then a valid one: joined (v0-3) or MEMBER_ID_REQUIRED (v4+)
            assert _join(client, version, 6000).error_code == (0 if version < 4 else 79)
        finally:
            client.sock.close()


def test_confluent_static_leader_restart_keeps_the_group_stable() -> None:
    """The leader of a static group closes (no LeaveGroup) and comes back with its group.instance.id: the
    group keeps its generation, the other member sees no revocation, the leader gets its partitions back."""
    with MockCluster(brokers=1, topics={"orders": 4}) as cluster:
        revoked: dict[str, list[list[int]]] = {"a": [], "b": []}

        def on_revoke(name: str) -> Any:
            return lambda _c, parts: revoked[name].append([p.partition for p in parts])

        static = {"session.timeout.ms": 6000}
        members = {name: consumer(cluster, "static-leader", **{"group.instance.id": name, **static})
                   for name in ("a", "b")}
        for name, c in members.items():
            c.subscribe(["orders"], on_revoke=on_revoke(name))
        poll_until(list(members.values()), lambda _: all(len(c.assignment()) == 2 for c in members.values()),
                   timeout=15)
        group = cluster.state.groups.groups["static-leader"]
        leader_name = group.members[group.leader].group_instance_id
        other_name = "b" if leader_name == "a" else "a"
        leader, other = members[leader_name], members[other_name]
        kept = sorted(p.partition for p in leader.assignment())
        other_kept = sorted(p.partition for p in other.assignment())
        generation = group.generation
        revoked_before = list(revoked[other_name])
        leader.close()  # a static member sends no LeaveGroup
        assert len(group.members) == 2
        back = consumer(cluster, "static-leader", **{"group.instance.id": leader_name, **static})
        back.subscribe(["orders"])
        poll_until([back, other], lambda _: len(back.assignment()) == 2, timeout=15)
        poll_until([other], lambda _: False, timeout=1.0)  # time for a rebalance to show, were there one
        try:
            assert sorted(p.partition for p in back.assignment()) == kept
            assert group.generation == generation  # no rebalance
            assert group.state == "Stable"
            assert group.members[group.leader].group_instance_id == leader_name  # it leads under its new id
            assert revoked[other_name] == revoked_before  # the other member lost nothing
            assert sorted(p.partition for p in other.assignment()) == other_kept
            assert other.committed([TopicPartition("orders", p) for p in other_kept]) is not None
        finally:
            back.close()
            other.close()
