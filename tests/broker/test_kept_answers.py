"""Metadata and FindCoordinator answered by the staging lane from kept answers (native/lanes/kept_answers.h
and kept_answers.py) against dispatch and the handlers they stand in for: the same answer bytes and
journal entries at every version, after every kind of change to what the answers say, and everything
the lane must leave to dispatch left there."""

from __future__ import annotations

import random
import socket
import struct
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.handlers import kept_answers, produce_lane
from mockbroker.protocol import api
from mockbroker.state import broker_actions, internal_topics
from mockbroker.state.internal_topics import CONSUMER_OFFSETS, TRANSACTION_STATE

from .wire import JOURNAL_FIELDS, exchange

pytestmark = pytest.mark.skipif(not produce_lane.available(),
                                reason="the C extension is not built (or MOCKBROKER_PURE_PYTHON is set)")

MD, FC = api.request_module(3), api.request_module(10)


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, topics={"t": 4}) as c:
        # made up front: the first group or transactional FindCoordinator would make them part-way through
        # a test, and all-topics Metadata answers would differ between its runs
        for name in (CONSUMER_OFFSETS, TRANSACTION_STATE):
            c.call(internal_topics.ensure, c.state, name)
        yield c
    produce_lane._lane.enable_staging(True)


def _frame(api_key: int, version: int, body: Any, correlation_id: int = 5, client_id: str | None = "kept") -> bytes:
    return api.to_bytes(api.encode_request(api_key, version, correlation_id, body, client_id))[4:]


def _metadata(version: int, names: list[str] | None, correlation_id: int = 5, **fields: Any) -> bytes:
    topics = None if names is None else [MD.MetadataRequestTopic(name=n) for n in names]
    return _frame(3, version, MD.MetadataRequest(topics=topics, **fields), correlation_id)


def _run(cluster: MockCluster, on: bool, frames: list[bytes], node: int = 0) -> tuple[list[bytes], list[Any], int]:
    """(answers, journal entries of the requests, requests the lane answered from kept answers)."""
    lane = produce_lane._lane
    lane.enable_staging(on)
    before = lane.kept_taken()[0]
    seq = cluster.journal.entries()[-1].seq if cluster.journal.entries() else 0
    answers = exchange(cluster.brokers[node].port, frames)
    entries = [tuple(getattr(e, f) for f in JOURNAL_FIELDS) for e in cluster.journal.entries(since_seq=seq)]
    return answers, entries, lane.kept_taken()[0] - before


def _frames(cluster: MockCluster) -> list[bytes]:
    """Metadata at every version (named topics, all topics, by id, with authorized operations) and
    FindCoordinator at every version, each correlation id its own."""
    names = sorted(cluster.state.topics)
    out = [_metadata(v, names, 100 + v) for v in range(14)]
    out += [_metadata(v, None if v else [], 200 + v) for v in range(14)]
    ids = [MD.MetadataRequestTopic(name=None, topic_id=cluster.state.topics[n].topic_id) for n in names]
    out += [_frame(3, v, MD.MetadataRequest(topics=ids), 300 + v) for v in (12, 13)]
    out += [_metadata(v, names, 400 + v, include_topic_authorized_operations=True,
                      include_cluster_authorized_operations=v <= 10) for v in (8, 10, 11)]
    out += [_frame(10, v, FC.FindCoordinatorRequest(key="g", key_type=0), 500 + v) for v in range(4)]
    out += [_frame(10, v, FC.FindCoordinatorRequest(key="tx", key_type=1), 600 + v) for v in range(1, 4)]
    out += [_frame(10, v, FC.FindCoordinatorRequest(key_type=0, coordinator_keys=["g", "h"]), 700 + v)
            for v in range(4, 7)]
    return out


def _same_both_ways(cluster: MockCluster, frames: list[bytes], node: int = 0) -> int:
    """Asserts the lane (asked twice: made, then kept) answers and journals as dispatch does; how many
    the lane answered."""
    made, made_entries, taken_first = _run(cluster, True, frames, node)
    kept, kept_entries, taken_again = _run(cluster, True, frames, node)
    usual, usual_entries, none = _run(cluster, False, frames, node)
    assert none == 0
    for i, frame in enumerate(frames):
        assert made[i] == usual[i] and kept[i] == usual[i], (i, frame)
    assert made_entries == usual_entries and kept_entries == usual_entries
    return taken_first + taken_again


def test_the_lane_answers_every_version_as_dispatch_does(cluster: MockCluster) -> None:
    frames = _frames(cluster)
    assert _same_both_ways(cluster, frames) == 2 * len(frames)


def _change(cluster: MockCluster, fn: Callable[..., Any], *args: Any) -> None:
    cluster.call(fn, *args)


CHANGES: list[tuple[str, Callable[[MockCluster], Any]]] = [
    ("topic created", lambda c: c.create_topic("u", 2, replication_factor=2)),
    ("partitions added", lambda c: _change(c, c.state.create_partitions, "t", 6)),
    ("leader moved", lambda c: c.move_leader("t", 0, 2)),
    ("broker down", lambda c: c.broker_down(2)),
    ("broker up", lambda c: c.broker_up(2)),
    ("broker added", lambda c: c.add_broker()),
    ("a broker that leads nothing down", lambda c: c.broker_down(3)),
    ("coordinator moved", lambda c: c.move_coordinator("g")),  # to the next live broker
    ("transaction coordinator moved", lambda c: _change(c, broker_actions.move_coordinator, c.state, "tx")),
    ("cluster id changed", lambda c: _change(c, c.state.config.set, "cluster.id", "another-id")),
    ("topic deleted", lambda c: _change(c, c.state.delete_topic, "u")),
]


def test_every_change_to_what_the_answers_say_is_seen(cluster: MockCluster) -> None:
    for what, change in CHANGES:
        before = _run(cluster, False, _frames(cluster))[0]
        change(cluster)
        frames = _frames(cluster)
        assert _same_both_ways(cluster, frames) == 2 * len(frames), what
        after = _run(cluster, False, frames)[0]
        assert after != before or what == "broker up", what  # each change shows in some answer


def _random_change(cluster: MockCluster, rng: random.Random) -> None:
    """One change a test or scenario could make, chosen at random among those the cluster allows now."""
    state = cluster.state
    live, down = sorted(state.brokers), sorted(state.down_brokers)
    names = sorted(state.topics)
    user_topics = [n for n in names if not internal_topics.is_internal(n)]
    choice = rng.randrange(8)
    if choice == 0 or not names:
        cluster.create_topic(f"r{rng.randrange(10**6)}", rng.randrange(1, 4),
                             replication_factor=rng.randrange(1, min(len(live), 2) + 1))
    elif choice == 1 and len(user_topics) > 1:
        # not an internal topic: a FindCoordinator answered from a kept answer does not make it again
        _change(cluster, state.delete_topic, rng.choice(user_topics))
    elif choice == 2:
        name = rng.choice(names)
        _change(cluster, state.create_partitions, name, len(state.topics[name].partitions) + 1)
    elif choice == 3:
        name = rng.choice(names)
        cluster.move_leader(name, rng.randrange(len(state.topics[name].partitions)))
    elif choice == 4 and len(live) > 1:
        cluster.broker_down(rng.choice(live))
    elif choice == 5 and down:
        cluster.broker_up(rng.choice(down))
    elif choice == 6:
        cluster.move_coordinator(rng.choice(("g", "h", "tx")))
    else:
        _change(cluster, state.config.set, "auto.create.topics.enable", rng.random() < 0.5)


def _random_frames(cluster: MockCluster, rng: random.Random) -> list[bytes]:
    """Metadata and FindCoordinator requests over topics that exist, that were deleted or never were
    (without auto-creation, so that asking twice changes nothing), each asked twice in a row."""
    names = [*sorted(cluster.state.topics), "gone", "never"]
    out = []
    for _ in range(12):
        if rng.random() < 0.7:
            version = rng.randrange(4, 14)
            wanted = rng.sample(names, rng.randrange(0, min(4, len(names)) + 1))
            frame = _metadata(version, None if rng.random() < 0.2 else wanted, rng.randrange(1 << 20),
                              allow_auto_topic_creation=False)
        else:
            version = rng.randrange(0, 7)
            key = rng.choice(("g", "h", "tx", ""))
            body = (FC.FindCoordinatorRequest(key_type=rng.randrange(2), coordinator_keys=[key]) if version >= 4
                    else FC.FindCoordinatorRequest(key=key, key_type=rng.randrange(2) if version else 0))
            frame = _frame(10, version, body, rng.randrange(1 << 20))
        out += [frame, frame]
    return out


@pytest.mark.parametrize("seed", range(4))
def test_random_changes_and_requests_answer_as_dispatch_does(cluster: MockCluster, seed: int) -> None:
    """Random changes between rounds of random requests, each round asked with the lane and without
    it: the same answers and journal entries every time (a kept answer never outlives what it says)."""
    rng = random.Random(seed)
    answered = 0
    for _ in range(12):
        _random_change(cluster, rng)
        frames = _random_frames(cluster, rng)
        node = rng.choice(sorted(cluster.state.brokers))  # a live one (node ids are the brokers' places)
        lane, lane_entries, taken = _run(cluster, True, frames, node)
        answered += taken
        usual, usual_entries, _none = _run(cluster, False, frames, node)
        for i, frame in enumerate(frames):
            assert lane[i] == usual[i], (i, frame)
        assert lane_entries == usual_entries
    assert answered > 12 * 24 // 3  # most of them from kept answers (the rest: unknown topics, empty keys)


def test_each_broker_and_listener_answers_as_itself(cluster: MockCluster) -> None:
    frames = _frames(cluster)
    for node in range(3):
        _same_both_ways(cluster, frames, node)


def test_what_the_lane_leaves_to_dispatch(cluster: MockCluster, caplog: pytest.LogCaptureFixture) -> None:
    """Unknown topics (auto-created once, or UNKNOWN_TOPIC_OR_PARTITION), ids before v12, empty group
    ids, header tagged fields, bytes after the body and unreadable bodies go through dispatch, as with
    the lane off."""
    good = _metadata(12, ["t"])
    tagged = good[:14] + b"\x01\x00\x01\x00" + good[15:]  # header tagged fields: one, tag 0, 1 byte
    by_id = MD.MetadataRequestTopic(name="t", topic_id=cluster.state.topics["t"].topic_id)
    cases = [
        _metadata(12, ["nope"], allow_auto_topic_creation=False),
        _frame(3, 11, MD.MetadataRequest(topics=[by_id])),
        _frame(10, 3, FC.FindCoordinatorRequest(key="", key_type=0)),
        _frame(10, 3, FC.FindCoordinatorRequest(key="g", key_type=2)),
        tagged,
        good + b"\x00\x00\x00",  # bytes after the body: dispatch logs that it ignores them
    ]
    for frame in cases:
        lane_answers, lane_entries, taken = _run(cluster, True, [frame, frame])
        usual_answers, usual_entries, _none = _run(cluster, False, [frame, frame])
        assert taken == 0, frame
        assert lane_answers == usual_answers and lane_entries == usual_entries, frame
    assert "Topic IDs are not supported" in caplog.text
    # a topic auto-created by the request is created once, by dispatch, and then answered from the lane
    create = _metadata(12, ["fresh"], allow_auto_topic_creation=True)
    first, entries, taken = _run(cluster, True, [create, create, create])
    assert "fresh" in cluster.state.topics
    assert taken == 2  # the second made by kept_answers.answer (and kept), the third from the kept one
    assert first[0] == first[1] == first[2] and [e[8] for e in entries] == [[], [], []]
    # a body that does not decode: dispatch closes the connection
    with socket.create_connection(("127.0.0.1", cluster.brokers[0].port), timeout=5) as s:
        bad = good[:-3] + b"\x05"  # the topic array says four topics, then ends
        s.sendall(struct.pack(">i", len(bad)) + bad)
        assert s.recv(4) == b""


def test_nothing_is_answered_from_kept_answers_while_fault_rules_or_acls_are_on(cluster: MockCluster) -> None:
    frames = [_metadata(12, ["t"]), _metadata(12, ["t"])]
    assert _run(cluster, True, frames)[2] == 2
    with cluster.fault(api="Metadata", error="NOT_CONTROLLER", times=None):
        answers, _entries, taken = _run(cluster, True, frames)
    assert taken == 0 and all(api.decode_response(3, 12, a)[1].topics[0].error_code == 41 for a in answers)
    assert _run(cluster, True, frames)[2] == 2
    cluster.create_topic("hidden", 1)
    assert _run(cluster, True, [_metadata(12, None), _metadata(12, None)])[2] == 2
    cluster.add_acl("TOPIC", "t", principal="User:ANONYMOUS", operation="DESCRIBE")
    cluster.call(cluster.state.config.set, "authorizer.class.name", "mock")  # ACLs on: t only is described
    answers, _entries, taken = _run(cluster, True, [_metadata(12, None), _metadata(12, None)])
    assert taken == 0 and all([t.name for t in api.decode_response(3, 12, a)[1].topics] == ["t"] for a in answers)
    cluster.call(cluster.state.config.reset, "authorizer.class.name")
    assert _run(cluster, True, frames)[2] == 2


def test_kept_answers_are_bounded(cluster: MockCluster) -> None:
    frames = [_frame(10, 3, FC.FindCoordinatorRequest(key=f"group-{i}", key_type=0)) for i in range(150)]
    assert _run(cluster, True, frames)[2] == 150
    assert 0 < len(cluster.state.kept_answers) <= kept_answers.KEPT_ENTRIES


def test_find_coordinator_answers_outlive_topic_changes_but_not_broker_ones(cluster: MockCluster) -> None:
    lane = produce_lane._lane
    find, meta = _frame(10, 3, FC.FindCoordinatorRequest(key="g", key_type=0)), _metadata(12, ["t"])
    assert _run(cluster, True, [find, meta])[2] == 2
    made = lane.kept_taken()[1]
    cluster.create_topic("another", 1)
    cluster.move_leader("t", 0, 1)
    assert _run(cluster, True, [find])[2] == 1 and lane.kept_taken()[1] == made  # the kept answer
    assert _run(cluster, True, [meta])[2] == 1 and lane.kept_taken()[1] == made + 1  # made again
    cluster.broker_down(2)
    assert _same_both_ways(cluster, [find, meta]) == 4 and lane.kept_taken()[1] == made + 3
