"""Fetch: v0-18.

Behavior:
- Whole stored batches from the one holding fetch_offset, within partition_max_bytes and the
  request's max_bytes capped by the broker's `fetch.max.bytes` (v3+, as Kafka); the first batch of
  the first non-empty partition is returned even when larger, as Kafka does. Stored batches go to the
  socket as they are (a list of buffers).
- min_bytes / max_wait_ms long-poll: the answer waits until enough bytes arrive (woken by appends)
  or the wait ends; a leader change or epoch bump of a partition answers at once (its error, as
  Kafka completes delayed fetches when leadership changes).
- Errors per partition: UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID (v13+), NOT_LEADER_OR_FOLLOWER,
  OFFSET_OUT_OF_RANGE, FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (current_leader_epoch, v9+).
  With ACLs on: partitions of topics without READ -> TOPIC_AUTHORIZATION_FAILED (before the
  existence check for names, after it for ids, as Kafka).
- Incremental fetch sessions (KIP-227, v7+): see mockbroker.state.fetch_sessions.
- isolation_level read_committed (v4+): only batches below the last stable offset (the first
  offset of the oldest open transaction), and the aborted transactions overlapping the returned
  offsets so the client can drop their records. Every answer (v4+) carries the last stable offset.

The usual fetch -- every partition known, led here, its epoch current, no open transaction, the
offset within its log -- is read and encoded frame and all in C (fast_fetch.answer_from_logs: the same
bytes as _collect, _build and the encoder make, a session's states set as _build sets them), its
partitions made into Wanted in C too while ACLs are off, and a long poll's wake answers the same way
(without a session the long poll itself waits in C, fetch_wait.h); with fault rules or client quotas
(which see or measure the answer), or anything else, the Python below answers.  Without a session,
dispatch offers the frame to :func:`serve` (the Fetch lane) before any of this.

Version notes: v0-1 are served magic 0 and v2-3 magic 1, down-converted from the stored magic-2
batches (headers dropped); v4 adds isolation level, last stable offset and aborted transactions;
v5 log start offset; v7 sessions; v11 rack / preferred replica; v12 flexible; v13 topic ids.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from mockbroker.batches import down_convert
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.faults.journal import PRODUCE_ABOUT
from mockbroker.handlers import authz
from mockbroker.handlers.registry import LANES, Encoded, register
from mockbroker.protocol import api, fast_fetch
from mockbroker.server.dispatch import RequestContext, encoded_answer, journal_answer
from mockbroker.server.pending import Pending
from mockbroker.state.fetch_sessions import FINAL_EPOCH, INITIAL_EPOCH, FetchSession, SessionPartition
from mockbroker.state.log import PartitionLog

RESP = api.response_module(1)
logger = logging.getLogger("mockbroker.fetch")
MAX_WAIT_CAP_MS = 30_000
# the parts of a partition's answer a fetch never fills, made once and shared by every answer (nothing
# changes them; PartitionData would make three new ones for each)
_UNSET = RESP.EpochEndOffset(), RESP.LeaderIdAndEpoch(), RESP.SnapshotId()
# the usual fetch answered from the logs in C, frame and all (None: not built, or pure Python)
_FROM_LOGS = fast_fetch.answer_from_logs


@dataclass(slots=True)
class Wanted:
    name: str
    topic_id: bytes
    partition: int
    fetch_offset: int
    max_bytes: int
    leader_epoch: int
    log: PartitionLog | None = None
    error: int = 0


# a request's partitions made into Wanted in C when every one is known and led here (None: not built)
_WANTED = fast_fetch.wanted_reader(Wanted)


def _sessions(ctx: Any) -> Any:
    return ctx.broker.fetch_sessions


def _topic(ctx: Any, name: str, topic_id: bytes, use_ids: bool) -> tuple[str, bytes, Any, int]:
    """A fetched topic, READ checked once for all its partitions (as Kafka authorizes the distinct
    topics of a fetch): (name, topic id, the Topic or None, the error for its partitions)."""
    if not use_ids and not authz.authorize(ctx, authz.READ, authz.TOPIC, name):
        return name, topic_id, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    try:
        topic = ctx.cluster.topic_by_id(topic_id) if use_ids else ctx.cluster.topic(name)
    except KafkaError as exc:
        return name, topic_id, None, exc.code
    if use_ids and not authz.authorize(ctx, authz.READ, authz.TOPIC, topic.name):
        return topic.name, topic.topic_id, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return topic.name, topic.topic_id, topic, 0


def _partition(ctx: Any, found: tuple[str, bytes, Any, int], index: int) -> tuple[PartitionLog | None, int]:
    """The log of partition ``index`` of a topic :func:`_topic` found, led here: (log, 0) or (None, error).
    (:func:`_resolve` finds the usual partition, led here, without it.)"""
    name, _topic_id, topic, error = found
    if topic is None:
        return None, error
    try:
        return ctx.cluster.leader_partition(name, index, ctx.broker_id, topic), 0
    except KafkaError as exc:
        return None, exc.code


def _resolve(ctx: Any, req: Any) -> tuple[list[Wanted], FetchSession | None, bool]:
    """The partitions this fetch covers, the session (if any) and whether it is incremental."""
    use_ids = ctx.api_version >= 13
    cluster = ctx.cluster
    requested = None
    if _WANTED is not None and not cluster.acls.enabled:  # every partition known and led here: made in C
        requested = _WANTED(req.topics, cluster.topics_by_id if use_ids else cluster.topics, ctx.broker_id, use_ids)
    if requested is None:
        requested = _requested(ctx, req, use_ids)
    if ctx.api_version < 7 or (req.session_id == 0 and req.session_epoch == FINAL_EPOCH):
        return requested, None, False
    cache = _sessions(ctx)
    if req.session_epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if req.session_id:
            cache.close(req.session_id)
        session = cache.open() if req.session_epoch == INITIAL_EPOCH else None
        if session is not None:
            for w in requested:
                session.partitions[(w.name, w.partition)] = SessionPartition(
                    w.topic_id, w.fetch_offset, w.max_bytes, w.leader_epoch)
        return requested, session, False
    session = cache.resume(req.session_id, req.session_epoch)
    for w in requested:
        session.partitions[(w.name, w.partition)] = SessionPartition(
            w.topic_id, w.fetch_offset, w.max_bytes, w.leader_epoch,
            session.partitions.get((w.name, w.partition), SessionPartition(b"", 0, 0)).last_sent)
    for f in req.forgotten_topics_data or []:
        name = f.topic
        if use_ids:
            topic = ctx.cluster.topics_by_id.get(f.topic_id)
            name = topic.name if topic else name
        for index in f.partitions:
            session.partitions.pop((name, index), None)
    wanted = []
    topics: dict[str, tuple[str, bytes, Any, int]] = {}
    for (name, index), sp in session.partitions.items():
        found = topics.get(name)
        if found is None:
            found = topics[name] = _topic(ctx, name, sp.topic_id, False)
        log, err = _partition(ctx, found, index)
        wanted.append(Wanted(found[0], found[1] or sp.topic_id, index, sp.fetch_offset, sp.max_bytes,
                             sp.current_leader_epoch, log, err))
    return wanted, session, True


def _requested(ctx: Any, req: Any, use_ids: bool) -> list[Wanted]:
    """The partitions a fetch names, each found (its log) or with its error."""
    requested = []
    broker_id = ctx.broker_id
    for t in req.topics:
        found = _topic(ctx, t.topic, t.topic_id, use_ids)
        name, tid, topic = found[0], found[1], found[2]
        logs = topic.partitions if topic is not None else ()
        for p in t.partitions:
            index = p.partition
            if 0 <= index < len(logs) and logs[index].leader == broker_id:  # the usual partition: led here
                log, err = logs[index], 0
            else:
                log, err = _partition(ctx, found, index)
            requested.append(Wanted(name, tid, index, p.fetch_offset, p.partition_max_bytes,
                                    p.current_leader_epoch, log, err))
    return requested


def _read(ctx: Any, w: Wanted, budget: int, first: bool, isolation: int) -> tuple[Any, int]:
    version = ctx.api_version
    log = w.log
    diverging, leader, snapshot = _UNSET
    if log is None:
        return RESP.PartitionData(partition_index=w.partition, error_code=w.error, high_watermark=-1,
                                  last_stable_offset=-1, log_start_offset=-1, diverging_epoch=diverging,
                                  current_leader=leader, snapshot_id=snapshot,
                                  aborted_transactions=[] if isolation else None, records=b""), 0
    epoch = w.leader_epoch if version >= 9 else -1
    error = log.epoch_error(epoch) if epoch >= 0 and epoch != log.leader_epoch else 0
    if not error and log.leader != ctx.broker_id:  # the leader moved while the fetch waited
        error = ErrorCode.NOT_LEADER_OR_FOLLOWER
    end = log.next_offset
    stable = log.last_stable_offset if log.producers.open_txns else end  # (no open transaction: the end)
    if w.fetch_offset == end and not error:  # at the end (the usual ones take _collect's shorter way)
        return _at_the_end(log, (end, stable, log.log_start_offset, isolation)), 0
    part = RESP.PartitionData(partition_index=w.partition, error_code=error, high_watermark=log.next_offset,
                              last_stable_offset=stable, log_start_offset=log.log_start_offset,
                              diverging_epoch=diverging, current_leader=leader, snapshot_id=snapshot,
                              aborted_transactions=[] if isolation else None, records=b"")
    if error:
        return part, 0
    try:
        result = log.read(w.fetch_offset, min(w.max_bytes, budget), first_always=first or version < 3,
                          end_offset=stable if isolation else None)
    except KafkaError as exc:
        part.error_code = exc.code
        return part, 0
    if not result.buffers:  # (records stay empty: Kafka never answers null records)
        return part, 0
    if isolation:
        aborted = log.producers.aborted_between(w.fetch_offset, result.batches[-1].last_offset + 1)
        part.aborted_transactions = [RESP.AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                                     for a in aborted]
    if version < 4:
        try:
            part.records = down_convert(result.buffers, 0 if version < 2 else 1)
        except KafkaError as exc:
            logger.warning("broker %s: fetch v%s of %s-%s from %s: %s", ctx.broker_id, version, w.name,
                           w.partition, ctx.client_id, exc.message)
            part.error_code, part.records = exc.code, b""
            return part, 0
        return part, len(part.records)
    part.records = result.buffers
    return part, result.size


def _at_the_end(log: PartitionLog, key: tuple[int, int, int, int]) -> Any:
    """The answer of a partition read at its log's end: nothing to read, and the same answer until the
    log moves, so it is kept on the log (with ``key``: its end, last stable offset, start, isolation
    level) and shared (answers never change a partition's answer once made; a fault rule corrupting a
    batch skips empty ones).  :func:`_collect` looks for the kept one itself before calling this."""
    kept = log.answer_at_end
    if kept is not None and kept[0] == key:
        return kept[1]
    end, stable, start, isolation = key
    diverging, leader, snapshot = _UNSET
    part = RESP.PartitionData(partition_index=log.index, error_code=0, high_watermark=end,
                              last_stable_offset=stable, log_start_offset=start,
                              diverging_epoch=diverging, current_leader=leader, snapshot_id=snapshot,
                              aborted_transactions=[] if isolation else None, records=b"")
    log.answer_at_end = (key, part)
    return part


def _budget(ctx: Any, req: Any) -> int:
    """What a fetch may read in all: Kafka caps the request's max_bytes (v3+) with the broker's
    fetch.max.bytes (KIP-541)."""
    return min(req.max_bytes, ctx.cluster.config["fetch.max.bytes"]) if ctx.api_version >= 3 else 2**31 - 1


def _collect(ctx: Any, req: Any, wanted: list[Wanted]) -> tuple[list[tuple[Wanted, Any]], int, bool]:
    budget = _budget(ctx, req)
    isolation = req.isolation_level if ctx.api_version >= 4 else 0
    out = []
    total = 0
    errors = False
    broker_id, epochs = ctx.broker_id, ctx.api_version >= 9
    for w in wanted:
        log, offset = w.log, w.fetch_offset
        if (log is not None and offset == log.next_offset and log.leader == broker_id and not log.producers.open_txns
                and (not epochs or w.leader_epoch < 0 or w.leader_epoch == log.leader_epoch)):
            # still at its end, led here, its epoch current, no open transaction: what _read would
            # answer, without its way there (most partitions of a long poll's answer), the kept
            # answer looked up in place (_at_the_end's first step) where it holds
            key = (offset, offset, log.log_start_offset, isolation)
            kept = log.answer_at_end
            out.append((w, kept[1] if kept is not None and kept[0] == key else _at_the_end(log, key)))
            continue
        part, size = _read(ctx, w, max(budget - total, 0), total == 0, isolation)
        total += size
        errors = errors or part.error_code != 0
        out.append((w, part))
    return out, total, errors


def _build(ctx: Any, parts: list[tuple[Wanted, Any]], session: FetchSession | None, incremental: bool) -> Any:
    topics: dict[str, Any] = {}
    for w, part in parts:
        if session is not None:
            sp = session.partitions.get((w.name, w.partition))
            state = (part.high_watermark, part.last_stable_offset, part.log_start_offset, part.error_code)
            changed = sp is None or sp.last_sent != state or bool(part.records)
            if sp is not None:
                sp.last_sent = state
            if incremental and not changed:
                continue
        topic = topics.get(w.name)
        if topic is None:
            topic = topics[w.name] = RESP.FetchableTopicResponse(topic=w.name, topic_id=w.topic_id, partitions=[])
        topic.partitions.append(part)
    return RESP.FetchResponse(error_code=0, session_id=session.session_id if session else 0,
                              responses=list(topics.values()))


@register(1, 0, 18)
def handle(ctx: Any, req: Any) -> Any:
    try:
        wanted, session, incremental = _resolve(ctx, req)
    except KafkaError as exc:
        return RESP.FetchResponse(error_code=exc.code, session_id=0, responses=[])
    fast = _FROM_LOGS is not None and _unwatched(ctx)
    if fast:
        waits = req.min_bytes > 0 and req.max_wait_ms > 0 and not ctx.connection.closed
        got = _from_logs(ctx, req, wanted, session, incremental, req.min_bytes if waits else 0)
        if got is not None:  # every partition the usual one
            if got[0] is not None:
                return Encoded(got[0])
            if session is not None:  # (fewer than min_bytes yet) a session's long poll waits in Python
                return _LongPoll(ctx, req, wanted, session, incremental, [w.log for w in wanted], fast).answer  # type: ignore[misc]
            return _parked(ctx, req, wanted, Pending(), _budget(ctx, req))
    if req.min_bytes > 0 and req.max_wait_ms > 0 and _all_at_the_end(wanted, ctx.api_version) \
            and not ctx.connection.closed:  # the usual long poll: no partition has anything to answer
        return _LongPoll(ctx, req, wanted, session, incremental, [w.log for w in wanted], fast).answer  # type: ignore[arg-type]
    parts, total, errors = _collect(ctx, req, wanted)
    logs = [w.log for w in wanted if w.log is not None]
    if total >= req.min_bytes or req.max_wait_ms <= 0 or errors or not logs or ctx.connection.closed:
        return _build(ctx, parts, session, incremental)
    return _LongPoll(ctx, req, wanted, session, incremental, logs, fast).answer


def _unwatched(ctx: Any) -> bool:
    """Whether nothing but dispatch will see this fetch's answer (no fault rule, which may change it,
    and no client quota, which measures it): then it may be an :class:`Encoded` frame.  Decided when
    the request comes, as dispatch decides how to answer it."""
    cluster = ctx.cluster
    return ctx.api_version >= 4 and not cluster.faults.rules and not cluster.quotas.enabled


def _from_logs(ctx: Any, req: Any, wanted: list[Wanted], session: FetchSession | None, incremental: bool,
               min_bytes: int) -> tuple[list[Any] | None, int] | None:
    """The answer's frame and record bytes when every partition is the usual one, read and encoded in C
    (fast_fetch.answer_from_logs), with the session's states set as :func:`_build` sets them; (None,
    bytes) while fewer than ``min_bytes`` are there (nothing changed); None, and the Python path answers."""
    budget = _budget(ctx, req)  # (as _collect; the fast path is v4+)
    if session is None:
        return _FROM_LOGS(wanted, ctx.api_version, ctx.correlation_id, ctx.broker_id, budget,  # type: ignore[misc]
                          req.isolation_level, min_bytes)
    kept = session.partitions
    return _FROM_LOGS(wanted, ctx.api_version, ctx.correlation_id, ctx.broker_id, budget,  # type: ignore[misc]
                      req.isolation_level, min_bytes, session.session_id,
                      [kept.get((w.name, w.partition)) for w in wanted], incremental)


def _answer_in_python(ctx: Any, req: Any, wanted: list[Wanted], answer: Pending, expired: bool) -> None:
    """A C long poll's check (fetch_wait.h) once its partitions stopped being the usual ones (a leader or
    epoch moved, a transaction opened): _LongPoll's check and expiry, for a fetch without a session."""
    parts, total, errors = _collect(ctx, req, wanted)
    if expired or total >= req.min_bytes or errors or ctx.connection.closed:
        answer.settle(_build(ctx, parts, None, False))


# the long poll of a fetch _FROM_LOGS answers, in C (None: not built)
_PARK = fast_fetch.waiter(Encoded, _answer_in_python)


def _parked(ctx: Any, req: Any, wanted: list[Wanted], answer: Pending, budget: int) -> Pending:
    """``answer``, left to the fetch's long poll in C (fetch_wait.h: _LongPoll's twin), which reads with
    ``budget`` (the request's max_bytes capped by fetch.max.bytes when it came)."""
    _PARK(ctx, req, wanted, answer, ctx.broker.loop or asyncio.get_running_loop(), ctx.connection,  # type: ignore[misc]
          ctx.api_version, ctx.correlation_id, ctx.broker_id, budget, req.isolation_level, req.min_bytes,
          min(req.max_wait_ms, MAX_WAIT_CAP_MS) / 1000)
    return answer


def _all_at_the_end(wanted: list[Wanted], version: int) -> bool:
    """Whether :func:`_collect` would find no bytes and no error: every partition found, its leader
    epoch current and the fetch offset at its log's end (where a read returns nothing).  Checked
    before reading so that a fetch that will wait builds no partition answers first."""
    if not wanted:
        return False
    for w in wanted:
        log = w.log
        if log is None or w.error or w.fetch_offset != log.next_offset:
            return False
        epoch = w.leader_epoch if version >= 9 else -1
        if epoch >= 0 and epoch != log.leader_epoch and log.epoch_error(epoch):
            return False
    return True


class _LongPoll:
    """A Fetch waiting for min_bytes: its answer is a Pending the appends to its partitions settle.

    It is its partitions' listener: an append calls it, and it asks the event loop for one
    :meth:`_check` (however many appends come before that runs), which reads the partitions and
    answers with what it read once min_bytes are there (or an error, or the connection closed).  A
    timer answers at max_wait_ms.  No coroutine and no Future: settling the Pending journals, encodes
    and writes the answer in the same call (mockbroker.server.pending), where a coroutine waiting on an
    Event with ``wait_for`` took two Tasks, and Futures a loop pass per callback (bench/NOTES.md "Long
    polls")."""

    __slots__ = ("answer", "ctx", "fast", "incremental", "logs", "loop", "req", "scheduled", "session", "timer",
                 "wanted")

    def __init__(self, ctx: Any, req: Any, wanted: list[Wanted], session: FetchSession | None, incremental: bool,
                 logs: list[PartitionLog], fast: bool) -> None:
        self.loop = loop = ctx.broker.loop or asyncio.get_running_loop()
        self.ctx, self.req, self.wanted, self.session, self.incremental, self.logs = (
            ctx, req, wanted, session, incremental, logs)
        self.fast = fast  # may be answered from the logs in C (_from_logs)
        self.scheduled = False
        self.answer = Pending()
        for log in logs:
            log.listeners.append(self)  # itself, not a bound method (which would hold a cycle to collect)
        self.timer = loop.call_later(min(req.max_wait_ms, MAX_WAIT_CAP_MS) / 1000, self._expire)
        self.answer.add_done_callback(self._done)  # answered, or cancelled (the connection went away)

    def __call__(self, _log: PartitionLog) -> None:
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self._check)

    def _check(self) -> None:
        self.scheduled = False
        if self.answer.state:  # answered or cancelled meanwhile
            return
        if self.fast:
            got = _from_logs(self.ctx, self.req, self.wanted, self.session, self.incremental,
                             0 if self.ctx.connection.closed else self.req.min_bytes)
            if got is not None:
                if got[0] is not None:
                    self.answer.settle(Encoded(got[0]))
                return
        parts, total, errors = _collect(self.ctx, self.req, self.wanted)
        if total >= self.req.min_bytes or errors or self.ctx.connection.closed:
            self.answer.settle(_build(self.ctx, parts, self.session, self.incremental))

    def _expire(self) -> None:
        if not self.answer.state:
            got = _from_logs(self.ctx, self.req, self.wanted, self.session, self.incremental, 0) if self.fast else None
            if got is not None:
                self.answer.settle(Encoded(got[0]))
                return
            parts, _total, _errors = _collect(self.ctx, self.req, self.wanted)
            self.answer.settle(_build(self.ctx, parts, self.session, self.incremental))

    def _done(self, _answer: Pending) -> None:
        for log in self.logs:
            if self in log.listeners:
                log.listeners.remove(self)
        self.timer.cancel()


def serve(broker: Any, conn: Any, frame: memoryview, version: int, correlation_id: int) -> Any:
    """The usual Fetch from its frame (dispatch's lane for it, registry.LANES): read, found, answered
    or left waiting and journaled as dispatch and :func:`handle` would, with the request decoded, its
    partitions found and read and the answer encoded in one C call (fast_fetch.lane, fetch_lane.h).
    None (nothing done) when anything needs a word: fault rules, client quotas, ACLs, a network
    partition, a session, a partition not the usual one."""
    cluster = broker.cluster
    if broker.partitioned or cluster.faults.rules or cluster.quotas.enabled or cluster.acls.enabled:
        return None
    started = time.perf_counter()
    fetch_max_bytes = cluster.config.values["fetch.max.bytes"]  # (the dict itself: no __getitem__ call)
    got = _LANE(frame, version, correlation_id, cluster.topics, cluster.topics_by_id, broker.node_id,  # type: ignore[misc]
                fetch_max_bytes, PRODUCE_ABOUT)
    if got is None:
        return None
    req, client_id, about, wanted, frame_out, total = got
    journal = cluster.journal
    if frame_out is None and conn.closed:  # (at the end, and no one to wait for: the usual way answers)
        return None
    if total >= req.min_bytes or req.max_wait_ms <= 0 or conn.closed:
        if journal.enabled:
            journal.start(cluster.clock.now_ms(), broker.node_id, conn.peer, client_id, conn.client_software, "Fetch",
                          1, version, correlation_id, about, (), (time.perf_counter() - started) * 1000, "answered")
        return frame_out
    ctx = RequestContext(broker, conn, 1, version, correlation_id, client_id, cluster, broker.node_id)
    answer = Pending()
    if journal.enabled:
        entry = journal.start(cluster.clock.now_ms(), broker.node_id, conn.peer, client_id, conn.client_software,
                              "Fetch", 1, version, correlation_id, about, ())
        answer.then(partial(journal_answer, ctx, entry, started))
    else:
        answer.then(partial(encoded_answer, ctx))
    return _parked(ctx, req, wanted, answer, min(req.max_bytes, fetch_max_bytes))


_LANE = fast_fetch.lane
if _LANE is not None and _PARK is not None and _WANTED is not None:
    LANES[1] = serve
