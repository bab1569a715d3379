"""The Fetch lane (k01_fetch.serve, fetch_lane.h) against the usual way (dispatch, the generated reader,
the handler) over real sockets: the same answer bytes and the same journal entries for the usual
fetches of every version it takes, answered at once or after a long poll; and what it leaves to the
usual way (sessions, unknown or foreign partitions, versions before 4, ACLs) is answered there."""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.handlers import k01_fetch
from mockbroker.handlers.registry import LANES
from mockbroker.protocol import api

from .wire import WireClient, fetch_body, produce_body, read_frame

pytestmark = pytest.mark.skipif(k01_fetch._LANE is None or 1 not in LANES,
                                reason="the C extension is not built (or MOCKBROKER_PURE_PYTHON is set)")

Q = api.request_module(1)
NOW = int(time.time() * 1000)


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, topics={"t": 3, "u": 1}) as c:
        with WireClient(c.brokers[0].port) as p:
            for i in range(6):
                records = rec.build_batch([(b"k", bytes([i]) * (40 + 300 * i), [], NOW) for _ in range(1 + i % 3)])
                assert p.call(0, 9, produce_body(9, "t", i % 3, records)).responses[0].partition_responses[0]\
                    .error_code == 0
        yield c


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many Fetch requests the lane took (it wrapped as registered)."""
    taken = [0]
    serve = LANES[1]

    def counting(*args: Any) -> Any:
        answer = serve(*args)
        taken[0] += answer is not None
        return answer

    monkeypatch.setitem(LANES, 1, counting)
    return taken


def raw_call(port: int, version: int, body: Any, correlation_id: int = 7) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(api.to_bytes(api.encode_request(1, version, correlation_id, body, "lane-test")))
        return read_frame(sock)


def request(version: int, cluster: MockCluster, wanted: list[tuple[str, list[tuple[int, int]]]], max_wait_ms: int = 0,
            max_bytes: int = 1 << 20, partition_max: int = 1 << 20, isolation: int = 0) -> Any:
    topics = [Q.FetchTopic(topic=name, topic_id=cluster.state.topics[name].topic_id, partitions=[
        Q.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=partition_max, current_leader_epoch=-1)
        for p, o in parts]) for name, parts in wanted]
    return Q.FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes,
                          isolation_level=isolation, session_id=0, session_epoch=-1, topics=topics)


def journal_view(cluster: MockCluster) -> list[tuple[Any, ...]]:
    return [(e.api, e.version, e.correlation_id, e.client_id, e.about, e.errors, e.outcome, e.throttle_ms)
            for e in cluster.journal.entries(api="Fetch")]


def both_ways(cluster: MockCluster, send: Callable[[], Any]) -> tuple[Any, Any]:
    """What ``send`` gets through the lane, and again with a fault rule on (which never fires, but sends
    every request the usual way), with the journal entries each made."""
    cluster.journal.clear()
    lane = send(), journal_view(cluster)
    rule = cluster.faults.add({"api": "Metadata", "error": "UNKNOWN_SERVER_ERROR", "times": 1})
    cluster.journal.clear()
    usual = send(), journal_view(cluster)
    cluster.faults.remove(rule.id)
    return lane, usual


CASES = [
    (4, [("t", [(0, 0), (1, 1)])], {}),
    (7, [("t", [(2, 0)]), ("u", [(0, 0)])], {"isolation": 1}),
    (11, [("t", [(0, 0), (1, 0), (2, 0)])], {"max_bytes": 500}),
    (12, [("t", [(1, 0)]), ("u", [(0, 0)]), ("t", [(0, 2)])], {}),  # a topic named twice: the usual way
    (13, [("t", [(0, 0), (1, 2)])], {"partition_max": 100}),
    (15, [("t", [(2, 1)])], {"isolation": 1}),
    (17, [("u", [(0, 0)]), ("t", [(0, 0), (2, 0)])], {}),
    (18, [("t", [(0, 2), (1, 2), (2, 2)])], {}),  # all at the end, no wait
]


@pytest.mark.parametrize("version, wanted, options", CASES)
def test_the_lane_answers_and_journals_as_the_usual_way(cluster: MockCluster, counted: list[int], version: int,
                                                        wanted: list[tuple[str, list[tuple[int, int]]]],
                                                        options: dict[str, int]) -> None:
    port = cluster.brokers[0].port
    body = request(version, cluster, wanted, **options)
    (lane, lane_journal), (usual, usual_journal) = both_ways(cluster, lambda: raw_call(port, version, body))
    assert lane == usual
    assert lane_journal == usual_journal and len(lane_journal) == 1
    named_twice = len({name for name, _ in wanted}) < len(wanted)
    assert counted[0] == (0 if named_twice else 1)


def test_a_long_poll_through_the_lane_answers_and_journals_as_the_usual_way(cluster: MockCluster,
                                                                             counted: list[int]) -> None:
    port = cluster.brokers[0].port
    ends = {p: cluster.state.partition("t", p).next_offset for p in range(3)}

    def poll() -> bytes:
        body = request(12, cluster, [("t", [(p, cluster.state.partition("t", p).next_offset) for p in range(3)])],
                       max_wait_ms=10_000)
        out: list[bytes] = []
        waiter = threading.Thread(target=lambda: out.append(raw_call(port, 12, body)))
        waiter.start()
        time.sleep(0.2)
        with WireClient(port) as p:
            p.call(0, 9, produce_body(9, "t", 1, rec.build_batch([(b"k", b"v", [], NOW)])))
        waiter.join(10)
        return out[0]

    (lane, lane_journal), (usual, usual_journal) = both_ways(cluster, poll)
    assert counted[0] == 1
    lane_answer = api.decode_response(1, 12, lane[4:])[1].responses[0].partitions
    usual_answer = api.decode_response(1, 12, usual[4:])[1].responses[0].partitions
    assert [p.high_watermark for p in lane_answer] == [ends[0], ends[1] + 1, ends[2]]
    assert [p.high_watermark for p in usual_answer] == [ends[0], ends[1] + 2, ends[2]]
    assert [bool(p.records) for p in lane_answer] == [bool(p.records) for p in usual_answer] == [False, True, False]
    strip = [(*e[:6], e[6]) for e in lane_journal]
    assert strip == [(*e[:6], e[6]) for e in usual_journal] and lane_journal[0][6] == "answered"


def test_what_the_lane_leaves_is_answered_the_usual_way(cluster: MockCluster, counted: list[int]) -> None:
    port = cluster.brokers[0].port
    with WireClient(port) as c:
        session = c.call(1, 12, fetch_body("t", 0, 0, session_id=0, session_epoch=0))
        assert session.session_id != 0 and session.responses[0].partitions[0].records
        unknown = c.call(1, 12, fetch_body("nope", 0, 0)).responses[0].partitions[0]
        assert unknown.error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION
        beyond = c.call(1, 12, fetch_body("t", 7, 0)).responses[0].partitions[0]
        assert beyond.error_code == 3
        old = c.call(1, 3, fetch_body("t", 0, 0)).responses[0].partitions[0]  # v3: magic 1, down-converted
        assert old.error_code == 0 and old.records
        out_of_range = c.call(1, 12, fetch_body("t", 0, 99)).responses[0].partitions[0]
        assert out_of_range.error_code == 1  # OFFSET_OUT_OF_RANGE
    assert counted[0] == 0


def test_random_usual_fetches_are_answered_as_the_usual_way_answers(cluster: MockCluster, counted: list[int]) -> None:
    """Random fetches (versions, topics in any order, offsets anywhere in or at the end of the logs,
    budgets, isolation levels) over one connection, lane and usual way side by side."""
    rng = random.Random(11)
    port = cluster.brokers[0].port
    ends = {(name, p): cluster.state.partition(name, p).next_offset for name, count in (("t", 3), ("u", 1))
            for p in range(count)}
    for case in range(60):
        version = rng.randrange(4, 19)
        wanted = []
        for name in rng.sample(["t", "u"], rng.randrange(1, 3)):
            parts = rng.sample(range(3 if name == "t" else 1), rng.randrange(1, 4 if name == "t" else 2))
            wanted.append((name, [(p, rng.randrange(ends[(name, p)] + 1)) for p in parts]))
        body = request(version, cluster, wanted, max_bytes=rng.choice((1, 300, 3000, 1 << 20)),
                       partition_max=rng.choice((1, 200, 1 << 20)), isolation=rng.choice((0, 1)))
        (lane, lane_journal), (usual, usual_journal) = both_ways(cluster, partial(raw_call, port, version, body, case))
        assert (lane, lane_journal) == (usual, usual_journal), f"case {case}: v{version} {wanted}"
    assert counted[0] == 60
