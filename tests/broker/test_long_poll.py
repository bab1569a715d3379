"""Long-polling Fetch over a real socket: what answers at once, what waits, min_bytes over several
partitions, quotas on a waiting answer, and that no waiting fetch is left listening to a log."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.handlers import k01_fetch
from mockbroker.protocol import api

from .wire import WireClient, fetch_body, produce_body

NOW = int(time.time() * 1000)


@pytest.fixture
def one() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, topics={"t": 2}) as c:
        yield c


def batch(n: int = 1) -> bytes:
    return rec.build_batch([(b"k", b"v" * 100, [], NOW) for _ in range(n)])


def produce_later(port: int, partition: int, delay_s: float) -> threading.Thread:
    def run() -> None:
        time.sleep(delay_s)
        with WireClient(port) as p:
            answer = p.call(0, 9, produce_body(9, "t", partition, batch()))
            assert answer.responses[0].partition_responses[0].error_code == 0

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def listeners(cluster: MockCluster) -> int:
    return sum(len(cluster.state.partition("t", p).listeners) for p in (0, 1))


def test_a_fetch_at_the_end_with_a_bad_epoch_or_offset_is_answered_at_once(one: MockCluster) -> None:
    """Everything a read would refuse answers without waiting, even where the offset is the log's end."""
    with WireClient(one.brokers[0].port) as c:
        c.call(0, 9, produce_body(9, "t", 0, batch(2)))
        one.call(one.state.partition("t", 0).bump_leader_epoch)
        cases = [(2, 0, ErrorCode.FENCED_LEADER_EPOCH), (2, 5, ErrorCode.UNKNOWN_LEADER_EPOCH),
                 (3, -1, ErrorCode.OFFSET_OUT_OF_RANGE)]
        for offset, epoch, code in cases:
            start = time.monotonic()
            part = c.call(1, 12, fetch_body("t", 0, offset, max_wait_ms=10_000, leader_epoch=epoch))
            assert part.responses[0].partitions[0].error_code == code
            assert time.monotonic() - start < 3, code
        start = time.monotonic()
        unknown = c.call(1, 12, fetch_body("t", 7, 0, max_wait_ms=10_000)).responses[0].partitions[0]
        assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and time.monotonic() - start < 3
        at_end = c.call(1, 12, fetch_body("t", 0, 2, max_wait_ms=0)).responses[0].partitions[0]
        assert (at_end.error_code, at_end.high_watermark, at_end.records) == (0, 2, b"")
    assert listeners(one) == 0


def test_a_long_poll_over_two_partitions_answers_when_min_bytes_are_there(one: MockCluster) -> None:
    """The first append is below min_bytes: the fetch waits on; the second brings both batches."""
    port = one.brokers[0].port
    size = len(batch())
    m = api.request_module(1)
    body = fetch_body("t", 0, 0, max_wait_ms=10_000, min_bytes=size + 1)
    body.topics[0].partitions.append(m.FetchPartition(partition=1, fetch_offset=0, partition_max_bytes=1 << 20,
                                                      current_leader_epoch=-1))
    with WireClient(port) as c:
        first, second = produce_later(port, 0, 0.2), produce_later(port, 1, 0.6)
        start = time.monotonic()
        answer = c.call(1, 12, body)
        waited = time.monotonic() - start
        first.join(5)
        second.join(5)
    parts = {p.partition_index: p for p in answer.responses[0].partitions}
    assert 0.5 < waited < 5
    assert [(parts[i].high_watermark, len(parts[i].records)) for i in (0, 1)] == [(1, size), (1, size)]
    assert listeners(one) == 0


def test_several_long_polls_on_one_partition_are_all_answered_by_one_append(one: MockCluster) -> None:
    port = one.brokers[0].port
    clients = [WireClient(port) for _ in range(5)]
    try:
        for c in clients:
            c.send(1, 12, fetch_body("t", 1, 0, max_wait_ms=10_000))
        time.sleep(0.2)
        assert listeners(one) == 5
        produce_later(port, 1, 0).join(5)
        for c in clients:
            part = c.receive(1, 12)[1].responses[0].partitions[0]
            assert (part.high_watermark, len(part.records)) == (1, len(batch()))
    finally:
        for c in clients:
            c.sock.close()
    assert listeners(one) == 0


def test_a_long_poll_whose_client_goes_away_stops_listening(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        c.send(1, 12, fetch_body("t", 0, 0, max_wait_ms=30_000))
        time.sleep(0.2)
        assert listeners(one) == 1
        c.sock.shutdown(socket.SHUT_RDWR)
    deadline = time.monotonic() + 5
    while listeners(one) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert listeners(one) == 0
    with WireClient(one.brokers[0].port) as c:  # the broker serves on
        assert c.call(0, 9, produce_body(9, "t", 0, batch())).responses[0].partition_responses[0].error_code == 0


@pytest.mark.parametrize("rate", [10_000_000, 1])
def test_a_long_poll_answered_under_a_fetch_quota(one: MockCluster, rate: int) -> None:
    """With a quota set, the waiting answer goes through quota accounting and the journal in callbacks:
    within the quota it brings the record; over it (a batch is more than 1 B a second over the quota's
    window), Kafka's throttled fetch: no partitions, the throttle time in the answer, the connection muted."""
    one.set_quota({"client-id": "wire-test"}, consumer_byte_rate=rate)
    port = one.brokers[0].port
    with WireClient(port) as c:
        produce_later(port, 0, 0.3)
        start = time.monotonic()
        answer = c.call(1, 12, fetch_body("t", 0, 0, max_wait_ms=10_000))
        assert 0.2 < time.monotonic() - start < 5  # woken by the append
    fetch = one.journal.entries(api="Fetch")[-1]
    assert fetch.outcome == "answered" and fetch.about == {"topics": {"t": [0]}}
    if rate > 1000:
        part = answer.responses[0].partitions[0]
        assert (part.high_watermark, len(part.records)) == (1, len(batch()))
        assert answer.throttle_time_ms == 0 == fetch.throttle_ms
    else:
        assert answer.responses == [] and answer.throttle_time_ms > 0 and fetch.throttle_ms > 0
    assert listeners(one) == 0


def test_a_long_poll_under_a_delay_rule_answers_after_the_append_and_the_delay(one: MockCluster) -> None:
    """A fault rule awaits the waiting answer (the rule's own delay comes after it)."""
    one.add_fault(api="Fetch", action="delay", delay_ms=400)
    port = one.brokers[0].port
    with WireClient(port) as c:
        produce_later(port, 0, 0.3)
        start = time.monotonic()
        part = c.call(1, 12, fetch_body("t", 0, 0, max_wait_ms=10_000)).responses[0].partitions[0]
        assert 0.65 < time.monotonic() - start < 5
    assert (part.high_watermark, len(part.records)) == (1, len(batch()))
    fetch = one.journal.entries(api="Fetch")[-1]
    assert fetch.outcome == "answered" and fetch.latency_ms >= 400 and fetch.faults
    assert listeners(one) == 0


def test_stopping_the_cluster_ends_a_waiting_long_poll() -> None:
    cluster = MockCluster(brokers=1, topics={"t": 2}).start_background()
    try:
        with WireClient(cluster.brokers[0].port) as c:
            c.send(1, 12, fetch_body("t", 0, 0, max_wait_ms=30_000))
            time.sleep(0.2)
            assert listeners(cluster) == 1
            start = time.monotonic()
            cluster.stop_background()
            assert time.monotonic() - start < 5
            c.sock.settimeout(5)
            assert c.sock.recv(4) == b""  # closed, not answered
        assert listeners(cluster) == 0
    finally:
        cluster.stop_background()


def test_a_partition_read_at_its_end_answers_the_log_as_it_is_now(one: MockCluster) -> None:
    """The answer for a read at the end is kept on the log and shared: it must follow the log start
    (DeleteRecords moves it without an append), appends and the isolation level."""
    port = one.brokers[0].port

    def at_end(offset: int, isolation: int = 0) -> Any:
        body = fetch_body("t", 0, offset)
        body.isolation_level = isolation
        return c.call(1, 12, body).responses[0].partitions[0]

    with WireClient(port) as c:
        c.call(0, 9, produce_body(9, "t", 0, batch(2)))
        first = at_end(2)
        assert (first.high_watermark, first.log_start_offset, first.records) == (2, 0, b"")
        assert at_end(2).log_start_offset == 0
        one.call(one.state.partition("t", 0).advance_log_start, 1)
        moved = at_end(2)
        assert (moved.high_watermark, moved.log_start_offset) == (2, 1)
        committed, uncommitted = at_end(2, isolation=1), at_end(2, isolation=0)
        assert (committed.aborted_transactions, uncommitted.aborted_transactions) == ([], None)
        assert (committed.last_stable_offset, committed.high_watermark) == (2, 2)
        c.call(0, 9, produce_body(9, "t", 0, batch(1)))
        grown = at_end(3)
        assert (grown.high_watermark, grown.last_stable_offset, grown.log_start_offset) == (3, 3, 1)


def test_a_leader_move_or_epoch_bump_answers_a_waiting_fetch_at_once() -> None:
    """Kafka completes delayed fetches when a partition's leadership changes: the leader moving away
    answers NOT_LEADER_OR_FOLLOWER, a new epoch under the same leader FENCED_LEADER_EPOCH (the fetch
    named the old one); neither waits for max_wait_ms."""
    with MockCluster(brokers=2, topics={"t": 1}) as cluster:
        log = cluster.state.partition("t", 0)
        leader, other = log.leader, 1 - log.leader

        def waited(port: int, epoch: int, change: Any) -> tuple[int, float]:
            with WireClient(port) as c:
                c.send(1, 12, fetch_body("t", 0, 0, max_wait_ms=20_000, leader_epoch=epoch))
                time.sleep(0.3)
                assert len(log.listeners) == 1
                start = time.monotonic()
                change()
                part = c.receive(1, 12)[1].responses[0].partitions[0]
                return part.error_code, time.monotonic() - start

        code, took = waited(cluster.brokers[leader].port, -1, lambda: cluster.move_leader("t", 0, other))
        assert code == ErrorCode.NOT_LEADER_OR_FOLLOWER and took < 3
        code, took = waited(cluster.brokers[other].port, log.leader_epoch,
                            lambda: cluster.call(log.bump_leader_epoch))
        assert code == ErrorCode.FENCED_LEADER_EPOCH and took < 3
        assert not log.listeners


def _waiter_kinds(cluster: MockCluster) -> set[str]:
    return {type(w).__name__ for p in (0, 1) for w in cluster.state.partition("t", p).listeners}


@pytest.mark.skipif(k01_fetch._PARK is None, reason="the C extension is not built (or MOCKBROKER_PURE_PYTHON is set)")
def test_the_usual_long_poll_waits_in_c_and_answers_as_the_python_path_does(one: MockCluster) -> None:
    """A fetch without a session whose partitions are the usual ones waits in C (fetch_wait.h): woken by
    an append it answers the batch, at max_wait_ms it answers the log as it is, and either way it leaves
    the logs' listeners; a fault rule (which sees the answer) makes the same fetch wait in Python, with
    the same answer."""
    port = one.brokers[0].port
    with WireClient(port) as c:
        c.send(1, 12, fetch_body("t", 0, 0, max_wait_ms=10_000))
        time.sleep(0.2)
        assert _waiter_kinds(one) == {"FetchWait"}
        produce_later(port, 0, 0).join(5)
        woken = c.receive(1, 12)[1]
        start = time.monotonic()
        expired = c.call(1, 13, fetch_body("t", 0, 1, max_wait_ms=300, topic_id=one.state.topics["t"].topic_id))
        waited = time.monotonic() - start
    assert listeners(one) == 0
    part = woken.responses[0].partitions[0]
    assert (part.error_code, part.high_watermark, part.last_stable_offset, len(part.records)) == (0, 1, 1, len(batch()))
    late = expired.responses[0].partitions[0]
    assert (late.error_code, late.high_watermark, late.records) == (0, 1, b"") and 0.25 < waited < 5
    one.faults.add({"api": "Metadata", "error": "UNKNOWN_SERVER_ERROR", "times": 1})  # a rule, never fired here
    with WireClient(port) as c:
        c.send(1, 12, fetch_body("t", 0, 1, max_wait_ms=10_000))
        time.sleep(0.2)
        assert _waiter_kinds(one) == {"_LongPoll"}
        produce_later(port, 0, 0).join(5)
        python = c.receive(1, 12)[1].responses[0].partitions[0]
    assert (python.error_code, python.high_watermark, len(python.records)) == (0, 2, len(batch()))
    assert listeners(one) == 0
