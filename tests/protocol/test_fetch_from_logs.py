"""A Fetch answered straight from the logs in C (fast_fetch.answer_from_logs, fetch_from_logs.h) against
the handler's Python path (k01_fetch._collect, _build and api.encode_response): for random logs,
fetches and every version it takes (4-18), the same frame bytes and the same record byte count, stored
buffers over the hole threshold not copied; and where a partition is not the usual one (an error, an
open or aborted transaction, a topic named twice apart) it declines, so the Python path answers."""

from __future__ import annotations

import random
from typing import Any

import pytest

from mockbroker.handlers import fetch_partitions, k01_fetch
from mockbroker.handlers.fetch_partitions import Wanted
from mockbroker.protocol import api, fast_fetch
from mockbroker.protocol.runtime import HOLE_THRESHOLD
from mockbroker.state.fetch_sessions import FetchSession, SessionPartition
from mockbroker.state.log import PartitionLog, StoredBatch

pytestmark = pytest.mark.skipif(fast_fetch.answer_from_logs is None,
                                reason="the C extension is not built (or MOCKBROKER_PURE_PYTHON is set)")

BROKER = 1
Q = api.request_module(1)


class _Cluster:
    """What _collect reads from the cluster: the broker's config."""

    def __init__(self, fetch_max_bytes: int) -> None:
        self.config = {"fetch.max.bytes": fetch_max_bytes}


class _Context:
    """What _collect and _build read from a request's context (a unit test of the two paths' output)."""

    def __init__(self, version: int, fetch_max_bytes: int) -> None:
        self.api_version = version
        self.broker_id = BROKER
        self.cluster = _Cluster(fetch_max_bytes)


def _log(rng: random.Random, topic: str, index: int) -> PartitionLog:
    log = PartitionLog(topic, index, BROKER, [BROKER])
    log.leader_epoch = rng.randrange(3)
    offset = 0
    for _ in range(rng.randrange(6)):
        count = rng.randrange(1, 5)
        sizes = [rng.choice((1, 61, HOLE_THRESHOLD, HOLE_THRESHOLD + 1, 3000)) for _ in range(rng.randrange(1, 3))]
        buffers = tuple(rng.choice((bytes, memoryview))(rng.randbytes(n)) for n in sizes)
        log.append(StoredBatch(offset, offset + count - 1, 0, sum(sizes), buffers))
        offset += count
    if log.batches and rng.random() < 0.2:
        log.advance_log_start(rng.randrange(log.next_offset + 1))
    return log


def _wanted(rng: random.Random, names: list[str], logs: dict[tuple[str, int], PartitionLog]) -> list[Wanted]:
    out = []
    for name in names:
        for index in rng.sample(range(3), rng.randrange(1, 4)):
            log = logs[(name, index)]
            offset = rng.choice((log.log_start_offset, log.next_offset, rng.randrange(log.log_start_offset,
                                                                                    log.next_offset + 1)))
            epoch = rng.choice((-1, log.leader_epoch))
            out.append(Wanted(name, name.encode().ljust(16, b"-"), index, offset,
                              rng.choice((0, 100, 3000, 1 << 20)), epoch, log))
    return out


def _python_frame(ctx: _Context, req: Any, wanted: list[Wanted], correlation_id: int) -> tuple[bytes, int]:
    parts, total, errors = k01_fetch._collect(ctx, req, wanted)
    assert not errors
    body = k01_fetch._build(ctx, parts, None, False)
    return b"".join(bytes(b) for b in api.encode_response(1, ctx.api_version, correlation_id, body)), total


def _request(rng: random.Random, version: int) -> Any:
    return Q.FetchRequest(max_bytes=rng.choice((1, 500, 5000, 1 << 20)),
                          isolation_level=rng.choice((0, 1)) if version >= 4 else 0)


def _setup(rng: random.Random) -> tuple[list[str], dict[tuple[str, int], PartitionLog]]:
    names = [f"topic-{i}" for i in range(rng.randrange(1, 4))]
    return names, {(n, i): _log(rng, n, i) for n in names for i in range(3)}


def test_usual_fetches_get_the_python_paths_frame() -> None:
    rng = random.Random(7)
    answered_holes = 0
    for case in range(600):
        version = rng.randrange(4, 19)
        names, logs = _setup(rng)
        wanted = _wanted(rng, names, logs)
        ctx = _Context(version, rng.choice((1000, 1 << 26)))
        req = _request(rng, version)
        budget = min(req.max_bytes, ctx.cluster.config["fetch.max.bytes"])
        got = fast_fetch.answer_from_logs(wanted, version, case, BROKER, budget, req.isolation_level)
        assert got is not None, f"case {case}: declined a usual fetch"
        frame, total = got
        answered_holes += sum(1 for b in frame if isinstance(b, memoryview | bytes) and len(b) > HOLE_THRESHOLD)
        assert (b"".join(bytes(b) for b in frame), total) == _python_frame(ctx, req, wanted, case), f"case {case}"
    assert answered_holes, "no answer left a stored buffer uncopied"


def test_stored_buffers_go_out_as_they_are() -> None:
    log = PartitionLog("t", 0, BROKER, [BROKER])
    big = memoryview(bytes(5000))
    log.append(StoredBatch(0, 9, 0, 5000, (big,)))
    got = fast_fetch.answer_from_logs([Wanted("t", b"t" * 16, 0, 0, 1 << 20, -1, log)], 12, 1, BROKER, 1 << 20, 0)
    assert got is not None
    frame, total = got
    assert total == 5000 and any(b is big for b in frame)


def _decline_cases(rng: random.Random) -> list[tuple[str, int, list[Wanted]]]:
    names, logs = _setup(rng)
    wanted = _wanted(rng, names, logs)
    first = wanted[0]
    log = first.log
    assert log is not None
    cases = []

    def case(why: str, change: Any, version: int = 12) -> None:
        copies = [Wanted(w.name, w.topic_id, w.partition, w.fetch_offset, w.max_bytes, w.leader_epoch, w.log, w.error)
                  for w in wanted]
        change(copies[0])
        cases.append((why, version, copies))

    case("unknown partition", lambda w: (setattr(w, "log", None), setattr(w, "error", 3)))
    case("led elsewhere", lambda w: setattr(w, "log", PartitionLog(w.name, w.partition, 2, [2])))
    case("stale epoch", lambda w: setattr(w, "leader_epoch", log.leader_epoch + 1))
    case("offset past the end", lambda w: setattr(w, "fetch_offset", log.next_offset + 1))
    case("offset below the start", lambda w: setattr(w, "fetch_offset", -1))
    fresh = [PartitionLog(n, 0, BROKER, [BROKER]) for n in ("a", "b", "a")]
    cases.append(("topic named twice apart", 12,
                  [Wanted(log.topic, log.topic.encode() * 16, i, 0, 100, -1, log) for i, log in enumerate(fresh)]))
    return cases


def test_unusual_partitions_are_left_to_the_python_path() -> None:
    rng = random.Random(3)
    for why, version, wanted in _decline_cases(rng):
        assert fast_fetch.answer_from_logs(wanted, version, 1, BROKER, 1 << 20, 0) is None, why


def test_transactions_are_left_to_the_python_path() -> None:
    log = PartitionLog("t", 0, BROKER, [BROKER])
    log.append(StoredBatch(0, 0, 0, 10, (b"x" * 10,)))
    wanted = [Wanted("t", b"t" * 16, 0, 0, 1000, -1, log)]
    log.producers.open_txns[5] = 0
    assert fast_fetch.answer_from_logs(wanted, 12, 1, BROKER, 1000, 0) is None  # its last stable offset
    log.producers.open_txns.clear()
    log.producers.aborted.append(object())  # (only its presence is read)
    assert fast_fetch.answer_from_logs(wanted, 12, 1, BROKER, 1000, 1) is None  # read_committed lists them
    assert fast_fetch.answer_from_logs(wanted, 12, 1, BROKER, 1000, 0) is not None  # read_uncommitted does not


def test_versions_it_does_not_write_are_declined() -> None:
    log = PartitionLog("t", 0, BROKER, [BROKER])
    wanted = [Wanted("t", b"t" * 16, 0, 0, 1000, -1, log)]
    for version in (0, 1, 2, 3, 19):
        assert fast_fetch.answer_from_logs(wanted, version, 1, BROKER, 1000, 0) is None
    assert fast_fetch.answer_from_logs([], 12, 1, BROKER, 1000, 0) is None


def test_a_requests_partitions_are_made_as_the_python_path_makes_them() -> None:
    from mockbroker.state.cluster import ClusterState

    wanted_from_request = fetch_partitions.WANTED_READER
    assert wanted_from_request is not None
    state = ClusterState()
    for node in (1, 2):
        state.add_broker(node, "127.0.0.1", 9092 + node)
    state.create_topic("here", 3, assignment=[[1], [1], [1]])
    state.create_topic("mixed", 2, assignment=[[1], [2]])
    here, mixed = state.topics["here"], state.topics["mixed"]

    def request(*topics: tuple[Any, list[int]]) -> Any:
        return Q.FetchRequest(topics=[Q.FetchTopic(topic=t.name, topic_id=t.topic_id, partitions=[
            Q.FetchPartition(partition=i, fetch_offset=10 * i, partition_max_bytes=100 + i, current_leader_epoch=i - 1)
            for i in parts]) for t, parts in topics])

    def fields(w: Wanted) -> tuple[Any, ...]:
        return (w.name, w.topic_id, w.partition, w.fetch_offset, w.max_bytes, w.leader_epoch, w.log, w.error)

    for use_ids in (False, True):
        version = 13 if use_ids else 12
        ctx = _Context(version, 1 << 20)
        ctx.cluster = state  # type: ignore[assignment]
        known = state.topics_by_id if use_ids else state.topics
        usual = request((here, [2, 0]), (mixed, [0]), (here, [1]))
        made = wanted_from_request(usual.topics, known, BROKER, use_ids)
        assert made is not None and all(type(w) is Wanted for w in made)
        assert [fields(w) for w in made] == [fields(w) for w in fetch_partitions.requested(ctx, usual, use_ids)]
        for unusual in (request((mixed, [1])), request((here, [3])), request((here, [-1])),
                        Q.FetchRequest(topics=[Q.FetchTopic(topic="nope", topic_id=b"n" * 16, partitions=[])])):
            assert wanted_from_request(unusual.topics, known, BROKER, use_ids) is None
            named = fetch_partitions.requested(ctx, unusual, use_ids)
            assert any(w.error for w in named) or not unusual.topics[0].partitions


def _session(rng: random.Random, wanted: list[Wanted]) -> FetchSession:
    """A session holding ``wanted``, each partition's last answer its state now, another, or none."""
    made = FetchSession(session_id=77, next_epoch=2)
    for w in wanted:
        log = w.log
        assert log is not None
        now = (log.next_offset, log.next_offset, log.log_start_offset, 0)
        made.partitions[(w.name, w.partition)] = SessionPartition(
            w.topic_id, w.fetch_offset, w.max_bytes, -1, rng.choice((None, now, (now[0] - 1, now[1], now[2], 0))))
    return made


def test_session_fetches_get_the_python_paths_frame_and_leave_the_same_states() -> None:
    """With a session: an incremental answer leaves out partitions with nothing new (their state what
    was sent last, nothing read), a full one answers all; either way every SessionPartition ends as
    _build leaves it."""
    rng = random.Random(5)
    included = left_out = 0
    for case in range(300):
        version = rng.randrange(7, 19)
        names, logs = _setup(rng)
        wanted = _wanted(rng, names, logs)
        ctx = _Context(version, 1 << 26)
        req = _request(rng, version)
        incremental = rng.random() < 0.7

        state = rng.getstate()
        ours = _session(rng, wanted)
        rng.setstate(state)
        theirs = _session(rng, wanted)
        states = [ours.partitions.get((w.name, w.partition)) for w in wanted]
        budget = min(req.max_bytes, ctx.cluster.config["fetch.max.bytes"])
        got = fast_fetch.answer_from_logs(wanted, version, case, BROKER, budget, req.isolation_level, 0, 77, states,
                                          incremental)
        assert got is not None, f"case {case}: declined a usual fetch"
        parts, total, errors = k01_fetch._collect(ctx, req, wanted)
        assert not errors
        body = k01_fetch._build(ctx, parts, theirs, incremental)
        expected = b"".join(bytes(b) for b in api.encode_response(1, version, case, body))
        assert (b"".join(bytes(b) for b in got[0]), got[1]) == (expected, total), f"case {case}"
        assert ours == theirs, f"case {case}: the session's states differ"
        answered = sum(len(t.partitions) for t in body.responses)
        included += answered
        left_out += len(wanted) - answered
    assert included and left_out, "the cases never left a partition out (or never kept one)"


def test_fewer_than_min_bytes_write_nothing_and_change_no_state() -> None:
    log = PartitionLog("t", 0, BROKER, [BROKER])
    log.append(StoredBatch(0, 0, 0, 10, (b"x" * 10,)))
    wanted = [Wanted("t", b"t" * 16, 0, 0, 1000, -1, log)]
    sp = SessionPartition(b"t" * 16, 0, 1000, -1, None)
    assert fast_fetch.answer_from_logs(wanted, 12, 1, BROKER, 1000, 0, 11, 5, [sp], True) == (None, 10)
    assert sp.last_sent is None
    frame, total = fast_fetch.answer_from_logs(wanted, 12, 1, BROKER, 1000, 0, 10, 5, [sp], True)
    assert frame is not None and total == 10 and sp.last_sent == (1, 1, 0, 0)
