"""Throttling a connection as Kafka does, for fault rules and for client quotas.

From a request's KIP-219 version on, clients throttle themselves: Kafka answers at once (with the
throttle time in the answer) and mutes the connection, reading nothing from it until the time has
passed.  Before that version the answer itself is held back for the throttle time.  A connection
here handles one request at a time, so "muted" is the connection waiting before its next request.

:func:`with_quotas` is the client-quota hook dispatch uses when any quota is set (see
mockbroker.state.quotas): it records what a request used (produce request bytes, fetch answer bytes,
handler time as a percentage of one thread) against the quota that applies to the connection's user
and client id, sets the answer's throttle time (the larger of it and any already there) and applies
the delay.  A throttled fetch is answered with no data, and its bytes are not counted, as in Kafka;
a fetch's max_bytes is capped at what the quota allows in its window.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mockbroker.handlers.registry import NO_RESPONSE
from mockbroker.protocol import api
from mockbroker.state.quotas import FETCH, PRODUCE, REQUEST, user_name

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext

log = logging.getLogger("mockbroker.quotas")

# First request version whose clients apply throttling themselves (KIP-219): from here Kafka answers at
# once and mutes the connection; before, it holds the answer for the throttle time.  APIs not listed
# came after KIP-219 (every version is client-side throttled).
CLIENT_THROTTLING_FROM = {0: 6, 1: 8, 2: 3, 3: 6, 8: 4, 9: 4, 10: 2, 11: 3, 12: 2, 13: 2, 14: 2, 15: 2, 16: 2,
                          18: 2, 19: 3, 20: 2, 22: 1, 23: 3, 24: 1, 25: 1, 26: 1, 28: 1, 37: 1, 42: 1}
NANOS_TO_PERCENT = 100.0 / 1e9  # handler nanoseconds -> percent of one thread over one second
EXEMPT = frozenset((17, 36))  # SaslHandshake, SaslAuthenticate: Kafka handles them before quotas

Finish = Callable[[Any], "list[Any] | Awaitable[list[Any] | None] | None"]


def client_side(api_key: int, version: int) -> bool:
    return version >= CLIENT_THROTTLING_FROM.get(api_key, 0)


async def throttled(ctx: RequestContext, buffers: list[Any] | None, throttle_ms: float) -> list[Any] | None:
    """Deliver ``buffers`` throttled: at once then mute (KIP-219 versions), or held back."""
    if buffers and client_side(ctx.api_key, ctx.api_version):
        ctx.connection.write(buffers)  # answer now, then mute the connection for the throttle time
        buffers = None
    await asyncio.sleep(throttle_ms / 1000)
    return buffers


def with_quotas(ctx: RequestContext, request_size: int, handle: Callable[[Any], Any],
                finish: Callable[[Any], list[Any] | None]) -> tuple[Callable[[Any], Any], Finish]:
    """The handler and finish step of one request, measured against the connection's quotas."""
    quotas = ctx.cluster.quotas
    user, client_id = user_name(ctx.principal), ctx.client_id or ""
    spent = [0]

    def measured(body: Any) -> Any:
        if ctx.api_key == 1 and ctx.api_version >= 3:
            cap = quotas.max_value_in_window(FETCH, user, client_id)
            if cap is not None and body.max_bytes > cap:
                body.max_bytes = max(int(cap), 1)
        started = time.perf_counter_ns()
        try:
            return handle(body)
        finally:  # the handler's own time (a long-polling fetch's wait is not work, as in Kafka)
            spent[0] = time.perf_counter_ns() - started

    def finish_throttled(body: Any) -> list[Any] | Awaitable[list[Any] | None] | None:
        key = ctx.api_key
        request_ms = 0
        if key not in EXEMPT and not (key == 0 and body is NO_RESPONSE):
            request_ms = quotas.record(REQUEST, user, client_id, spent[0] * NANOS_TO_PERCENT)
        bytes_ms = 0
        if key == 0:
            bytes_ms = quotas.record(PRODUCE, user, client_id, request_size)
        elif key == 1 and quotas.resolve(FETCH, user, client_id) is not None:
            size = fetch_response_size(ctx.api_version, body)
            bytes_ms = quotas.record(FETCH, user, client_id, size)
            if bytes_ms or request_ms:
                quotas.unrecord(FETCH, user, client_id, size)
                body = _empty_fetch(ctx, body)
        throttle_ms = max(request_ms, bytes_ms)
        if throttle_ms <= 0:
            return finish(body)
        if body is not NO_RESPONSE and hasattr(body, "throttle_time_ms"):
            body.throttle_time_ms = max(body.throttle_time_ms, throttle_ms)
        ctx.throttle_ms = max(ctx.throttle_ms, throttle_ms)
        log.debug("broker %s: %s from %s (user %s, client id %r) throttled %d ms (%s)", ctx.broker_id,
                  api.api_name(key), ctx.connection.peer, user, client_id, throttle_ms,
                  "request time" if request_ms >= bytes_ms else "bytes")
        return throttled(ctx, finish(body), throttle_ms)

    return measured, finish_throttled


def fetch_response_size(version: int, body: Any) -> int:
    """What Kafka counts against consumer_byte_rate: the response body plus 4 (FetchResponse.sizeOf)."""
    framed = sum(len(b) for b in api.encode_response(1, version, 0, body))
    return framed - 4 - (1 if api.response_header_version(1, version) == 1 else 0)  # size + correlation id, tags


def _empty_fetch(ctx: RequestContext, body: Any) -> Any:
    """Kafka's answer to a throttled fetch: no partitions.  A new session is not kept (the answer says
    no session, as Kafka's does); an incremental one resends every partition's state next time."""
    sessions = getattr(ctx.broker, "fetch_sessions", None)
    session_id = body.session_id
    if session_id and sessions is not None:
        session = sessions.sessions.get(session_id)
        if session is not None and session.next_epoch == 1:  # opened by this very fetch
            sessions.close(session_id)
            session_id = 0
        elif session is not None:
            for part in session.partitions.values():
                part.last_sent = None
    return api.response_module(1).FetchResponse(throttle_time_ms=0, error_code=0, session_id=session_id,
                                                responses=[])
