"""From a request frame to a response frame: decode, find the handler, run it, encode.

Handlers register with :func:`mockbroker.handlers.registry.register` and their version ranges make
up the ApiVersions answer.  Requests Kafka would refuse to parse close the connection with a log
line that says why; an ApiVersions request at a version we do not know gets a v0 answer with
UNSUPPORTED_VERSION and our supported list, as Kafka does.  A Produce is first offered to the produce
lane (mockbroker.handlers.produce_lane), which answers the usual one in a single C call and leaves any
other, untouched, to the Python path (:func:`_python_path`, the reference semantics), which fault
rules, client quotas and the journal wrap when they are on (:func:`_with_rules`, :func:`_journaled`).

On a SASL listener the connection's SaslSession (mockbroker.server.sasl) is asked first: before
authentication only ApiVersions, SaslHandshake and SaslAuthenticate pass (anything else closes the
connection), after a v0 handshake frames are bare SASL tokens answered without Kafka headers, and an
expired session (connections.max.reauth.ms) closes the connection.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import struct
import time
from collections.abc import Awaitable
from functools import partial
from typing import TYPE_CHECKING, Any

from mockbroker.codec_errors import CodecError
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.faults.facts import journal_about, request_facts
from mockbroker.handlers import produce_lane
from mockbroker.handlers.context import RequestContext, encoded_answer, journal_answer
from mockbroker.handlers.pending import Pending
from mockbroker.handlers.registry import HANDLERS, LANES, api_version_keys, handler_for
from mockbroker.protocol import api
from mockbroker.protocol.runtime import Struct
from mockbroker.server import fault_injection, throttle, warm_up
from mockbroker.server.connection import LARGE_FRAME, CloseConnection, Connection, _new_frame

if TYPE_CHECKING:
    from mockbroker.server.broker import BrokerServer

log = logging.getLogger("mockbroker.server")
_SIZE = struct.Struct(">i")
_LANE = produce_lane.available()
# Requests that only read (and Metadata's auto-creation, CreateTopics): nothing they do runs on the
# clock, so on an idle cluster they leave the ticker's one-second wait alone.  Any other request
# brings the next tick within 100 ms, for what it may have started (a group member's session, a
# transaction's timeout).  Each wake-up costs a few hundred microseconds of CPU on a small VM: for a
# client polling Metadata now and then, about as much as answering it.
CLOCK_FREE = frozenset((
    1,   # Fetch
    2,   # ListOffsets
    3,   # Metadata
    9,   # OffsetFetch
    10,  # FindCoordinator
    15,  # DescribeGroups
    16,  # ListGroups
    18,  # ApiVersions
    19,  # CreateTopics
    23,  # OffsetForLeaderEpoch
    29,  # DescribeAcls
    32,  # DescribeConfigs
    35,  # DescribeLogDirs
    46,  # ListPartitionReassignments
    48,  # DescribeClientQuotas
    50,  # DescribeUserScramCredentials
    55,  # DescribeQuorum
    60,  # DescribeCluster
    61,  # DescribeProducers
    65,  # DescribeTransactions
    66,  # ListTransactions
    75,  # DescribeTopicPartitions
))


def _kept_answer(*args: Any) -> tuple[Any, ...] | None:
    """kept_answers.answer for the produce lane's C, which calls it for a request with no current kept
    answer: the process's first request answered in Python starts the warm-up first, as in dispatch."""
    if warm_up.pending:
        warm_up.start()
    return kept_answers.answer(*args)


if _LANE:  # what the serving path hands the lane once: the kept answers' maker, the large frames' allocator
    from mockbroker.handlers import kept_answers

    produce_lane.wire(_kept_answer, _new_frame, LARGE_FRAME)


def _unsupported_api_versions(broker: BrokerServer, correlation_id: int) -> list[Any]:
    m = api.response_module(18)
    body = m.ApiVersionsResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        api_keys=api_version_keys(broker.cluster.config["mock.telemetry.receiver"]),
    )
    return api.encode_response(18, 0, correlation_id, body)


def _raw_sasl_token(broker: BrokerServer, conn: Connection, frame: memoryview) -> list[Any]:
    """The v0 SASL flow: a bare token in, a bare length-prefixed token out (Kafka closes on failure)."""
    from mockbroker.handlers.sasl_common import SaslFailure

    try:
        answer, done = conn.sasl.authenticate(bytes(frame), broker.cluster.clock.now_ms())
    except (SaslFailure, KafkaError) as exc:
        raise CloseConnection(f"SASL authentication (v0, raw tokens) failed: {exc}") from None
    if done:
        conn.principal = conn.sasl.principal
        log.info("broker %s: %s authenticated as %s (%s)", broker.node_id, conn.peer, conn.principal,
                 conn.sasl.mechanism)
    return [_SIZE.pack(len(answer)), answer]


def dispatch(broker: BrokerServer, conn: Connection, frame: memoryview) -> list[Any] | Awaitable[Any] | None:
    """One request frame to its answer: the lanes first (a Produce or Fetch they may take now), else
    :func:`_python_path`."""
    if warm_up.pending:  # the process's first request: load the usual requests' modules after its answer
        warm_up.start()
    sasl = conn.sasl
    if sasl is not None and sasl.raw_tokens:
        return _raw_sasl_token(broker, conn, frame)
    try:
        prefix = api.peek_header(frame)
    except CodecError as exc:
        raise CloseConnection(f"unreadable request header: {exc}") from None
    api_key, version, correlation_id = prefix
    # the lanes: each decides in its usual_for whether it may take a request now (SASL, faults, quotas, ...)
    if api_key == 0 and _LANE:  # the usual Produce (v3-12), frame to answer in C
        if frame is conn.lane_declined:  # the lane refused it already (Connection.borrow)
            conn.lane_declined = None
        else:
            answer = produce_lane.serve(broker, conn, frame, version, correlation_id)
            if answer is not None:
                return answer  # else nothing changed: the usual path below
    elif api_key in LANES:  # the usual Fetch, frame to answer (k01_fetch.serve)
        answer = LANES[api_key](broker, conn, frame, version, correlation_id)
        if answer is not None:
            return answer
    after = broker.cluster.after_request
    if after is not None:  # a data directory (mockbroker.store): the metadata saved before the answer leaves
        return after(api_key, _python_path(broker, conn, frame, prefix))
    return _python_path(broker, conn, frame, prefix)


def _python_path(broker: BrokerServer, conn: Connection, frame: memoryview,
                 prefix: tuple[int, int, int]) -> list[Any] | Awaitable[Any] | None:
    """The reference path: check the API and version, decode, run the handler, encode; fault rules,
    client quotas and the journal wrap the handler when they are on."""
    api_key, version, correlation_id = prefix
    handler = HANDLERS.get(api_key) or handler_for(api_key)
    if handler is None:
        raise CloseConnection(f"unknown or unsupported api key {api_key} (correlation id {correlation_id})")
    name = api.api_name(api_key)
    sasl = conn.sasl
    if sasl is not None:
        refusal = sasl.refusal(api_key, name, broker.cluster.clock.now_ms())
        if refusal is not None:
            raise CloseConnection(refusal)
    if not handler.min_version <= version <= handler.max_version:
        return _unsupported_version(broker, conn, handler, name, prefix)
    request = _decoded(broker, conn, frame, prefix, name)
    cluster = broker.cluster
    if cluster.ticker_idle and api_key not in CLOCK_FREE:  # the ticker waits a whole second: what this
        cluster.wake_ticker()  # request starts ticks sooner
    ctx = RequestContext(broker, conn, api_key, version, correlation_id, request.client_id, cluster, broker.node_id)
    if broker.partitioned:  # a network partition: nothing comes back
        return _hang(conn)
    if cluster.faults.rules or cluster.quotas.enabled:
        return _with_rules(ctx, handler.fn, request, name, len(frame))
    if cluster.journal.enabled:
        return _journaled(ctx, handler.fn, request, name)
    return _answer(ctx, _call(ctx, handler.fn, request.body), None)


def _unsupported_version(broker: BrokerServer, conn: Connection, handler: Any, name: str,
                         prefix: tuple[int, int, int]) -> list[Any]:
    """A version we do not speak: ApiVersions gets a v0 answer listing ours (as Kafka), anything else a close."""
    api_key, version, correlation_id = prefix
    if api_key == 18:
        log.info("broker %s: ApiVersions v%s from %s is newer than we speak; answering v0",
                 broker.node_id, version, conn.peer)
        return _unsupported_api_versions(broker, correlation_id)
    raise CloseConnection(f"{name} v{version} is not supported (we speak v{handler.min_version}-{handler.max_version})")


def _decoded(broker: BrokerServer, conn: Connection, frame: memoryview, prefix: tuple[int, int, int],
             name: str) -> Any:
    """The request decoded, or a close naming what Kafka would refuse to parse."""
    try:
        request = api.decode_request(frame, True, prefix)
    except CodecError as exc:
        raise CloseConnection(f"malformed {name} v{prefix[1]} request: {exc}") from None
    if request.trailing_bytes:
        log.debug("broker %s: %s v%s from %s has %d bytes after its body (ignored, as Kafka does)",
                  broker.node_id, name, prefix[1], conn.peer, request.trailing_bytes)
    return request


def _with_rules(ctx: RequestContext, fn: Any, request: Any, name: str,
                size: int) -> list[Any] | Awaitable[Any] | None:
    """The handler under fault rules and/or client quotas (and the journal, when on)."""
    cluster, api_key, conn = ctx.cluster, ctx.api_key, ctx.connection
    faults, journal = cluster.faults, cluster.journal
    fired: list[Any] = []
    facts = None
    if faults.rules:
        facts = request_facts(api_key, request.body, cluster.topics_by_id)
        fired = faults.fire(api_key, ctx.api_version, ctx.broker_id, request.client_id, facts)
    entry = None
    if journal.enabled:
        about = facts.frozen() if facts is not None else journal_about(api_key, request.body, cluster.topics_by_id)
        entry = journal.start(cluster.clock.now_ms(), ctx.broker_id, conn.peer, request.client_id,
                              conn.client_software, name, api_key, ctx.api_version, ctx.correlation_id, about,
                              tuple([r.id for r in fired]) if fired else ())
    started = time.perf_counter()

    def finish(body: Any) -> list[Any] | None:
        if entry is not None:
            return journal_answer(ctx, entry, started, body)
        return encoded_answer(ctx, body)

    def handle(body: Any) -> Any:
        return _call(ctx, fn, body)

    try:
        if cluster.quotas.enabled:  # client quotas: measure the request and throttle it (mockbroker.server.throttle)
            measured, quota_finish = throttle.with_quotas(ctx, size, handle, finish)
            if fired:
                return fault_injection.run(ctx, request.body, fired, facts, measured, quota_finish)
            return _answer(ctx, measured(request.body), quota_finish)
        if fired:
            return fault_injection.run(ctx, request.body, fired, facts, handle, finish)
        return _answer(ctx, handle(request.body), finish)
    except CloseConnection:
        if entry is not None:
            journal.finish(entry, (time.perf_counter() - started) * 1000, "closed")
        raise


def _journaled(ctx: RequestContext, fn: Any, request: Any, name: str) -> list[Any] | Awaitable[Any] | None:
    """The usual path (the journal on, no fault rules, no client quotas) without the closures the
    others need: a Produce costs ~2 us less in the journal this way."""
    conn, cluster, api_key = ctx.connection, ctx.cluster, ctx.api_key
    journal = cluster.journal
    entry = journal.start(cluster.clock.now_ms(), ctx.broker_id, conn.peer, request.client_id, conn.client_software,
                          name, api_key, ctx.api_version, ctx.correlation_id,
                          journal_about(api_key, request.body, cluster.topics_by_id), ())
    started = time.perf_counter()
    try:
        body = _call(ctx, fn, request.body)
    except CloseConnection:
        journal.finish(entry, (time.perf_counter() - started) * 1000, "closed")
        raise
    if type(body) is Pending:  # a long poll: journaled and encoded in the call that settles it
        return body.then(partial(journal_answer, ctx, entry, started))
    if _pending(body):
        return _finish(ctx, body, partial(journal_answer, ctx, entry, started))
    return journal_answer(ctx, entry, started, body)


def _call(ctx: RequestContext, fn: Any, body: Any) -> Any:
    try:
        return fn(ctx, body)
    except KafkaError as exc:
        raise CloseConnection(f"{api.api_name(ctx.api_key)} v{ctx.api_version} failed: {exc}") from None


def _pending(body: Any) -> bool:
    """A handler's answer still to come (a coroutine or future); an answer body (a generated Struct,
    the usual case) is told apart first, without inspect.isawaitable's ABC check."""
    return not isinstance(body, Struct) and inspect.isawaitable(body)


def _answer(ctx: RequestContext, body: Any, finish: Any) -> list[Any] | Awaitable[Any] | None:
    if finish is None and type(body) is Pending:  # a long poll: encoded in the call that settles it
        return body.then(partial(encoded_answer, ctx))
    if _pending(body):  # (a Pending under client quotas or fault rules too: their finish may take time)
        return _finish(ctx, body, finish)
    if finish is not None:
        return finish(body)
    return encoded_answer(ctx, body)


async def _finish(ctx: RequestContext, pending: Awaitable[Any], finish: Any) -> list[Any] | None:
    try:
        body = await pending
    except KafkaError as exc:
        raise CloseConnection(f"{api.api_name(ctx.api_key)} v{ctx.api_version} failed: {exc}") from None
    if finish is not None:
        result = finish(body)
        if inspect.isawaitable(result):  # a throttled answer (client quotas)
            return await result
        return result
    return encoded_answer(ctx, body)


async def _hang(conn: Connection) -> None:
    while not conn.closed:
        await asyncio.sleep(0.05)
