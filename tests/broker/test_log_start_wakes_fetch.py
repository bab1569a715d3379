"""A long-polling Fetch is answered when its partition's log start moves past its offset: by
DeleteRecords over the wire and by retention, in both waiters (the C one, fetch_wait.h, and the
Python one, k01_fetch._LongPoll, taken while a fault rule is set).  The fetch then answers
OFFSET_OUT_OF_RANGE with the new log start, where Kafka completes its delayed fetch; before, it
waited out max_wait_ms (so these fetches, waiting 30 s, would hit the client's 10 s socket timeout)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.handlers import k01_fetch
from mockbroker.protocol import api
from mockbroker.state.log import PartitionLog, StoredBatch

from .wire import WireClient, fetch_body, produce_body

NOW = int(time.time() * 1000)
WAITERS = ["c", "python"] if k01_fetch._PARK is not None else ["python"]


@pytest.fixture(params=WAITERS)
def cluster(request: pytest.FixtureRequest) -> Iterator[MockCluster]:
    with MockCluster(brokers=1, config={"log.retention.check.interval.ms": 3_600_000}) as c:
        c.create_topic("t", 1)
        if request.param == "python":  # a rule (never fired here) makes a fetch wait in Python
            c.faults.add({"api": "Metadata", "error": "UNKNOWN_SERVER_ERROR", "times": 1})
        c.expected_waiter = "FetchWait" if request.param == "c" else "_LongPoll"  # type: ignore[attr-defined]
        yield c


def _wait_below_start(cluster: MockCluster, move: Callable[[], None]) -> object:
    """Produce two batches, park a fetch of offset 0 wanting more bytes than there are, move the log
    start to 2 with ``move`` and return the fetch's partition answer."""
    port = cluster.brokers[0].port
    log = cluster.state.partition("t", 0)
    with WireClient(port) as c:
        for _ in range(2):
            data = rec.build_batch([(b"k", b"v" * 50, [], NOW - 60_000)])
            assert c.call(0, 9, produce_body(9, "t", 0, data)).responses[0].partition_responses[0].error_code == 0
        c.send(1, 12, fetch_body("t", 0, 0, max_wait_ms=30_000, min_bytes=1 << 20))
        deadline = time.monotonic() + 5
        while not log.listeners and time.monotonic() < deadline:
            time.sleep(0.02)
        assert {type(w).__name__ for w in log.listeners} == {cluster.expected_waiter}  # type: ignore[attr-defined]
        move()
        answer = c.receive(1, 12)[1].responses[0].partitions[0]
    assert not log.listeners
    return answer


def test_delete_records_answers_a_fetch_waiting_below_the_new_start(cluster: MockCluster) -> None:
    def delete() -> None:
        m = api.request_module(21)
        body = m.DeleteRecordsRequest(topics=[m.DeleteRecordsTopic(name="t", partitions=[
            m.DeleteRecordsPartition(partition_index=0, offset=-1)])], timeout_ms=1000)
        with WireClient(cluster.brokers[0].port) as admin:
            part = admin.call(21, 2, body).topics[0].partitions[0]
        assert (part.error_code, part.low_watermark) == (0, 2)

    part = _wait_below_start(cluster, delete)
    assert (part.error_code, part.log_start_offset, part.high_watermark) == (ErrorCode.OFFSET_OUT_OF_RANGE, 2, 2)


def test_retention_answers_a_fetch_waiting_below_the_new_start(cluster: MockCluster) -> None:
    cluster.call(cluster.state.topic("t").config.set, "retention.ms", "1000")
    part = _wait_below_start(cluster, lambda: cluster.run_retention() and None)
    assert (part.error_code, part.log_start_offset) == (ErrorCode.OFFSET_OUT_OF_RANGE, 2)


def test_a_log_start_move_calls_the_listeners_and_no_move_does_not() -> None:
    log = PartitionLog("t", 0, 0, [0])
    for base in (0, 1, 2):
        log.append(StoredBatch(base, base, NOW, 10, (b"x" * 10,)))
    seen: list[int] = []
    log.listeners.append(lambda lg: seen.append(lg.log_start_offset))
    assert log.advance_log_start(2) == 2 and seen == [2]
    assert log.advance_log_start(1) == 2 and seen == [2]  # backwards: nothing moves, no call
    assert log.advance_log_start(3) == 3 and seen == [2, 3]
