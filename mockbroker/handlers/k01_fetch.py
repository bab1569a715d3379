"""Fetch: v0-18.

Behavior (which partitions a fetch reads, and who may serve them: handlers/fetch_partitions.py):
- Whole stored batches from the one holding fetch_offset, within partition_max_bytes and the
  request's max_bytes capped by the broker's `fetch.max.bytes` (v3+, as Kafka); the first batch of
  the first non-empty partition is returned even when larger, as Kafka does. Stored batches go to the
  socket as they are (a list of buffers).
- min_bytes / max_wait_ms long-poll: the answer waits until enough bytes arrive (woken by appends)
  or the wait ends; a leader change or epoch bump of a partition answers at once (its error, as
  Kafka completes delayed fetches when leadership changes); so does the log start moving (DeleteRecords,
  retention): a fetch now below it answers OFFSET_OUT_OF_RANGE.
- Errors per partition: UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID (v13+), NOT_LEADER_OR_FOLLOWER,
  OFFSET_OUT_OF_RANGE, FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (current_leader_epoch, v9+).
  With ACLs on: partitions of topics without READ -> TOPIC_AUTHORIZATION_FAILED (before the
  existence check for names, after it for ids, as Kafka); each distinct topic is authorized once,
  however often the request names it (Kafka's filterByAuthorized over the set of names).
- Fetch from follower (KIP-392, mockbroker.state.replica_selector): a consumer's fetch (v11+) is answered
  by any replica (capped at the high watermark, from the one shared log); with the rack-aware
  replica.selector.class the leader answers a consumer in a follower's rack at once with
  preferred_read_replica and no records.  A fetch begun at the leader still answers
  NOT_LEADER_OR_FOLLOWER when the leader moves while it waits.
- Incremental fetch sessions (KIP-227, v7+): see mockbroker.state.fetch_sessions; a partition whose fetch
  offset moved (it answered records) goes to the end of the session's list, Kafka's round robin.
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

Where the Fetch lane's "usual" is decided: broker and connection state in :func:`usual_for`, declared
as data (``NOT_USUAL_ON_CONNECTION``, ``NOT_USUAL_WHILE``, ``NOT_USUAL_WITH_CONFIG``: SASL, a network
partition, fault rules, client quotas, ACLs, a rack-aware replica selector); the request's shape (v4+,
no session, no tagged fields) and its partitions' state (known, led here, epoch current, offset in
range) in C as it reads the frame (fetch_lane.h, fetch_from_logs.h), answering None for anything else.
To add a condition of broker state or config, add it to the declaration (an attribute path or a config
name, blocking while truthy); tests/broker/test_lane_usual.py shows how to prove the lane then declines.

Version notes: v0-1 are served magic 0 and v2-3 magic 1, down-converted from the stored magic-2
batches (headers dropped); v4 adds isolation level, last stable offset and aborted transactions;
v5 log start offset; v7 sessions; v11 rack / preferred replica; v12 flexible; v13 topic ids.
"""

from __future__ import annotations

import asyncio
import logging
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from mockbroker.batches import down_convert
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.faults.journal import PRODUCE_ABOUT
from mockbroker.handlers.context import RequestContext, encoded_answer, journal_answer
from mockbroker.handlers.fetch_partitions import WANTED_READER as _WANTED
from mockbroker.handlers.fetch_partitions import Wanted
from mockbroker.handlers.fetch_partitions import from_any_replica as _from_any_replica
from mockbroker.handlers.fetch_partitions import resolve as _resolve
from mockbroker.handlers.fetch_partitions import steered_rack as _steered_rack
from mockbroker.handlers.lane_state import (
    EVERY_LANE_ON_CONNECTION,
    EVERY_LANE_WHILE,
    EVERY_LANE_WITH_CONFIG,
    usual_function,
)
from mockbroker.handlers.pending import Pending
from mockbroker.handlers.registry import LANES, Encoded, register
from mockbroker.protocol import api, fast_fetch
from mockbroker.state import replica_selector as replicas
from mockbroker.state.fetch_sessions import FetchSession
from mockbroker.state.log import PartitionLog

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.fetch_request import FetchRequest
    from mockbroker.server.broker import BrokerServer
    from mockbroker.server.connection import Connection

RESP = api.response_module(1)
logger = logging.getLogger("mockbroker.fetch")
MAX_WAIT_CAP_MS = 30_000
# the parts of a partition's answer a fetch never fills, made once and shared by every answer (nothing
# changes them; PartitionData would make three new ones for each)
_UNSET = RESP.EpochEndOffset(), RESP.LeaderIdAndEpoch(), RESP.SnapshotId()
# the usual fetch answered from the logs in C, frame and all (None: not built, or pure Python)
_FROM_LOGS = fast_fetch.answer_from_logs


def _redirected(log: PartitionLog, w: Wanted, preferred: int, isolation: int) -> Any:
    """A leader's answer naming the follower to read from: no records, the offsets as a read would give
    them (Kafka's readFromLog skips the read when a preferred read replica is chosen)."""
    diverging, leader, snapshot = _UNSET
    end = log.next_offset
    return RESP.PartitionData(partition_index=w.partition, error_code=0, high_watermark=end,
                              last_stable_offset=log.last_stable_offset if log.producers.open_txns else end,
                              log_start_offset=log.log_start_offset, diverging_epoch=diverging,
                              current_leader=leader, snapshot_id=snapshot,
                              aborted_transactions=[] if isolation else None, preferred_read_replica=preferred,
                              records=b"")


def _read(ctx: RequestContext, w: Wanted, budget: int, first: bool, isolation: int,
          follower_ok: bool = False) -> tuple[Any, int]:
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
    if not error and log.leader != ctx.broker_id and not (follower_ok and ctx.broker_id in log.replicas):
        error = ErrorCode.NOT_LEADER_OR_FOLLOWER  # the leader moved while the fetch waited (or left the replicas)
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


def _budget(ctx: RequestContext, req: FetchRequest) -> int:
    """What a fetch may read in all: Kafka caps the request's max_bytes (v3+) with the broker's
    fetch.max.bytes (KIP-541)."""
    return min(req.max_bytes, ctx.cluster.config["fetch.max.bytes"]) if ctx.api_version >= 3 else 2**31 - 1


def _collect(ctx: RequestContext, req: FetchRequest, wanted: list[Wanted],
             held: frozenset[tuple[str, int]] | None = None) -> tuple[list[tuple[Wanted, Any]], int, bool]:
    """The partitions' answers, their bytes and whether to answer now; ``held``: for a fetch that waited,
    the partitions it began reading as a follower (one that began at the leader answers
    NOT_LEADER_OR_FOLLOWER once the leader moves, so the client follows it at once)."""
    budget = _budget(ctx, req)
    isolation = req.isolation_level if ctx.api_version >= 4 else 0
    out = []
    total = 0
    errors = False
    broker_id, epochs = ctx.broker_id, ctx.api_version >= 9
    follower_ok = _from_any_replica(ctx, req)
    rack = _steered_rack(ctx, req)
    for w in wanted:
        log, offset = w.log, w.fetch_offset
        if rack and log is not None and log.leader == broker_id and not (epochs and log.epoch_error(w.leader_epoch)):
            preferred = replicas.preferred_read_replica(ctx.cluster, log, rack, offset)
            if preferred >= 0:  # (answered at once, as Kafka answers a fetch naming a preferred replica)
                out.append((w, _redirected(log, w, preferred, isolation)))
                errors = True
                continue
        if (log is not None and offset == log.next_offset and log.leader == broker_id and not log.producers.open_txns
                and (not epochs or w.leader_epoch < 0 or w.leader_epoch == log.leader_epoch)):
            # still at its end, led here, its epoch current, no open transaction: what _read would
            # answer, without its way there (most partitions of a long poll's answer), the kept
            # answer looked up in place (_at_the_end's first step) where it holds
            key = (offset, offset, log.log_start_offset, isolation)
            kept = log.answer_at_end
            out.append((w, kept[1] if kept is not None and kept[0] == key else _at_the_end(log, key)))
            continue
        part, size = _read(ctx, w, max(budget - total, 0), total == 0, isolation,
                           follower_ok and (held is None or (w.name, w.partition) in held))
        total += size
        errors = errors or part.error_code != 0
        out.append((w, part))
    return out, total, errors


def _build(ctx: RequestContext, parts: list[tuple[Wanted, Any]], session: FetchSession | None,
           incremental: bool) -> Any:
    topics: dict[str, Any] = {}
    for w, part in parts:
        if session is not None:
            sp = session.partitions.get((w.name, w.partition))
            state = (part.high_watermark, part.last_stable_offset, part.log_start_offset, part.error_code)
            changed = sp is None or sp.last_sent != state or bool(part.records) or part.preferred_read_replica >= 0
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
def handle(ctx: RequestContext, req: FetchRequest) -> Any:
    try:
        wanted, session, incremental = _resolve(ctx, req)
    except KafkaError as exc:
        return RESP.FetchResponse(error_code=exc.code, session_id=0, responses=[])
    steered = bool(_steered_rack(ctx, req))  # the leader may name a follower: read in Python, answered at once
    fast = _FROM_LOGS is not None and _unwatched(ctx) and not steered
    if fast:
        waits = req.min_bytes > 0 and req.max_wait_ms > 0 and not ctx.connection.closed
        got = _from_logs(ctx, req, wanted, session, incremental, req.min_bytes if waits else 0)
        if got is not None:  # every partition the usual one
            if got[0] is not None:
                return Encoded(got[0])
            if session is not None:  # (fewer than min_bytes yet) a session's long poll waits in Python
                # (every w.log is set: _from_logs answers only when every partition is found)
                return _LongPoll(ctx, req, wanted, session, incremental, [w.log for w in wanted], fast).answer  # type: ignore[misc]
            return _parked(ctx, req, wanted, Pending(), _budget(ctx, req))
    if req.min_bytes > 0 and req.max_wait_ms > 0 and not steered and _all_at_the_end(wanted, ctx.api_version) \
            and not ctx.connection.closed:  # the usual long poll: no partition has anything to answer
        # (every w.log is set: _all_at_the_end checked it)
        return _LongPoll(ctx, req, wanted, session, incremental, [w.log for w in wanted], fast).answer  # type: ignore[misc]
    parts, total, errors = _collect(ctx, req, wanted)
    logs = [w.log for w in wanted if w.log is not None]
    if total >= req.min_bytes or req.max_wait_ms <= 0 or errors or not logs or ctx.connection.closed:
        return _build(ctx, parts, session, incremental)
    return _LongPoll(ctx, req, wanted, session, incremental, logs, fast).answer


def _unwatched(ctx: RequestContext) -> bool:
    """Whether nothing but dispatch will see this fetch's answer (no fault rule, which may change it,
    and no client quota, which measures it): then it may be an :class:`Encoded` frame.  Decided when
    the request comes, as dispatch decides how to answer it."""
    cluster = ctx.cluster
    return ctx.api_version >= 4 and not cluster.faults.rules and not cluster.quotas.enabled


def _from_logs(ctx: RequestContext, req: FetchRequest, wanted: list[Wanted], session: FetchSession | None,
               incremental: bool, min_bytes: int) -> tuple[list[Any] | None, int] | None:
    """The answer's frame and record bytes when every partition is the usual one, read and encoded in C
    (fast_fetch.answer_from_logs), with the session's states set as :func:`_build` sets them; (None,
    bytes) while fewer than ``min_bytes`` are there (nothing changed); None, and the Python path answers."""
    budget = _budget(ctx, req)  # (as _collect; the fast path is v4+)
    # (the type: ignores below: _FROM_LOGS may be None, but only where `fast` is set is this called)
    if session is None:
        return _FROM_LOGS(wanted, ctx.api_version, ctx.correlation_id, ctx.broker_id, budget,  # type: ignore[misc]
                          req.isolation_level, min_bytes)
    kept = session.partitions
    return _FROM_LOGS(wanted, ctx.api_version, ctx.correlation_id, ctx.broker_id, budget,  # type: ignore[misc]
                      req.isolation_level, min_bytes, session.session_id,
                      [kept.get((w.name, w.partition)) for w in wanted], incremental)


def _answer_in_python(ctx: RequestContext, req: FetchRequest, wanted: list[Wanted], answer: Pending,
                      expired: bool) -> None:
    """A C long poll's check (fetch_wait.h) once its partitions stopped being the usual ones (a leader or
    epoch moved, a transaction opened): _LongPoll's check and expiry, for a fetch without a session."""
    parts, total, errors = _collect(ctx, req, wanted, frozenset())  # (begun at the leader: the usual ones)
    if expired or total >= req.min_bytes or errors or ctx.connection.closed:
        answer.settle(_build(ctx, parts, None, False))


# the long poll of a fetch _FROM_LOGS answers, in C (None: not built)
_PARK = fast_fetch.waiter(Encoded, _answer_in_python)


def _parked(ctx: RequestContext, req: FetchRequest, wanted: list[Wanted], answer: Pending, budget: int) -> Pending:
    """``answer``, left to the fetch's long poll in C (fetch_wait.h: _LongPoll's twin), which reads with
    ``budget`` (the request's max_bytes capped by fetch.max.bytes when it came)."""
    # (type: ignore: _PARK may be None, but _parked runs only where _FROM_LOGS, built with it, answered)
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
    and writes the answer in the same call (mockbroker.handlers.pending), where a coroutine waiting on an
    Event with ``wait_for`` took two Tasks, and Futures a loop pass per callback (bench/NOTES.md "Long
    polls")."""

    __slots__ = ("answer", "ctx", "fast", "held", "incremental", "logs", "loop", "req", "scheduled", "session",
                 "timer", "wanted")

    def __init__(self, ctx: RequestContext, req: FetchRequest, wanted: list[Wanted], session: FetchSession | None,
                 incremental: bool, logs: list[PartitionLog], fast: bool) -> None:
        self.loop = loop = ctx.broker.loop or asyncio.get_running_loop()
        self.ctx, self.req, self.wanted, self.session, self.incremental, self.logs = (
            ctx, req, wanted, session, incremental, logs)
        self.fast = fast  # may be answered from the logs in C (_from_logs)
        self.held = frozenset((w.name, w.partition) for w in wanted  # read as a follower (see _collect)
                              if w.log is not None and w.log.leader != ctx.broker_id)
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
        parts, total, errors = _collect(self.ctx, self.req, self.wanted, self.held)
        if total >= self.req.min_bytes or errors or self.ctx.connection.closed:
            self.answer.settle(_build(self.ctx, parts, self.session, self.incremental))

    def _expire(self) -> None:
        if not self.answer.state:
            got = _from_logs(self.ctx, self.req, self.wanted, self.session, self.incremental, 0) if self.fast else None
            if got is not None:  # (min_bytes 0: got[0] is the frame, never None)
                self.answer.settle(Encoded(got[0]))  # type: ignore[arg-type]
                return
            parts, _total, _errors = _collect(self.ctx, self.req, self.wanted, self.held)
            self.answer.settle(_build(self.ctx, parts, self.session, self.incremental))

    def _done(self, _answer: Pending) -> None:
        for log in self.logs:
            if self in log.listeners:
                log.listeners.remove(self)
        self.timer.cancel()


# -- the Fetch lane's broker state: while any of these holds, every Fetch takes the usual way (usual_for;
# handlers/lane_state.py).  Each blocks while its value is truthy.
NOT_USUAL_ON_CONNECTION: tuple[str, ...] = EVERY_LANE_ON_CONNECTION
NOT_USUAL_WHILE: tuple[str, ...] = EVERY_LANE_WHILE
NOT_USUAL_WITH_CONFIG: tuple[str, ...] = (  # broker configs, in cluster.config.values
    *EVERY_LANE_WITH_CONFIG,
    replicas.SELECTOR_CONFIG,  # a rack-aware selector may send a consumer to a follower
)
# usual_for(broker, conn) -> bool: may the Fetch lane take a request on ``conn`` now, as far as broker and
# connection state go?  (The request's bytes and its partitions' state: fetch_lane.h, which answers None
# when they are not the usual ones.)
usual_for = usual_function(NOT_USUAL_ON_CONNECTION, NOT_USUAL_WHILE, NOT_USUAL_WITH_CONFIG)


def serve(broker: BrokerServer, conn: Connection, frame: memoryview, version: int, correlation_id: int) -> Any:
    """The usual Fetch from its frame (dispatch's lane for it, registry.LANES): read, found, answered
    or left waiting and journaled as dispatch and :func:`handle` would, with the request decoded, its
    partitions found and read and the answer encoded in one C call (fast_fetch.lane, fetch_lane.h).
    None (nothing done) when :func:`usual_for` says no (SASL, fault rules, client quotas, ACLs, a
    network partition, a rack-aware selector), or the request is not the usual one (a session, a
    partition not led here, ...: fetch_lane.h)."""
    if not usual_for(broker, conn):
        return None
    cluster = broker.cluster
    started = time.perf_counter()
    fetch_max_bytes = cluster.config.values["fetch.max.bytes"]  # (the dict itself: no __getitem__ call)
    # (type: ignore: _LANE may be None, but serve is registered as the lane only when it is built)
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
