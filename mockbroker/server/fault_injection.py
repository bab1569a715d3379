"""Carrying out fired fault rules around one request, on the serving path (the rules and their actions are
data: mockbroker.faults.rules).

:func:`run` is called by dispatch instead of the handler when rules fired.  It returns what the
connection expects from dispatch: the response body to encode (possibly via an awaitable), the
NO_RESPONSE marker, or it raises CloseConnection.  ``finish(body)`` encodes a body into buffers and
records it in the journal; ``handle(body)`` runs the real handler.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mockbroker.errors import CloseConnection
from mockbroker.faults.facts import Facts
from mockbroker.faults.responses import PARTITIONED, error_response, supports
from mockbroker.handlers.registry import NO_RESPONSE
from mockbroker.server.throttle import CLIENT_THROTTLING_FROM, Finish, throttled

if TYPE_CHECKING:
    from mockbroker.faults.rules import FaultRule
    from mockbroker.handlers.context import RequestContext

__all__ = ["CLIENT_THROTTLING_FROM", "run"]

log = logging.getLogger("mockbroker.faults")
CRC_AT = 17  # byte offset of a v2 batch's CRC


async def _hang(ctx: RequestContext) -> Any:
    """Never answer: wait until the connection is gone (the client times out and reconnects)."""
    while not ctx.connection.closed:
        await asyncio.sleep(0.05)
    return NO_RESPONSE


def _first(rules: list[FaultRule], action: str) -> FaultRule | None:
    return next((r for r in rules if r.action == action), None)


def _corrupt_first_batch(body: Any) -> bool:
    for topic in getattr(body, "responses", []):
        for part in topic.partitions:
            records = part.records
            if not records:
                continue
            data = bytearray(b"".join(bytes(b) for b in records) if isinstance(records, list) else records)
            if len(data) > CRC_AT + 4:
                data[CRC_AT] ^= 0x01
                part.records = bytes(data)
                return True
    return False


def _produce_without(body: Any, only: dict[str, set[int]]) -> Any:
    """A copy of a Produce request without the partitions in ``only`` (they get the injected error)."""
    import copy

    rest = copy.copy(body)
    rest.topic_data = []
    for t in body.topic_data:
        parts = [p for p in t.partition_data
                 if t.name not in only or (only[t.name] and p.index not in only[t.name])]
        if parts:
            keep = copy.copy(t)
            keep.partition_data = parts
            rest.topic_data.append(keep)
    return rest


def _merge_produce(errors: Any, handled: Any) -> Any:
    by_name = {t.name: t for t in handled.responses}
    for t in errors.responses:
        done = by_name.get(t.name)
        answered = {p.index: p for p in done.partition_responses} if done else {}
        t.partition_responses = [answered.get(p.index, p) for p in t.partition_responses]
    errors.node_endpoints = getattr(handled, "node_endpoints", [])
    return errors


def run(ctx: RequestContext, body: Any, rules: list[FaultRule], facts: Facts | None, handle: Callable[[Any], Any],
        finish: Finish) -> list[Any] | Awaitable[list[Any] | None] | None:
    ids = ", ".join(f"#{r.id}{' ' + r.name if r.name else ''}" for r in rules)
    if _first(rules, "drop_before"):
        raise CloseConnection(f"fault rule {ids}: connection dropped before handling")
    if _first(rules, "no_reply"):
        log.info("broker %s: fault rule %s: no reply to %s", ctx.broker_id, ids, ctx.api_key)
        return _finish_async(_hang(ctx), rules, ctx, finish)
    error = _first(rules, "error")
    if error is not None and supports(ctx.api_key):
        only = None
        if error.scope == "partition" and ctx.api_key in PARTITIONED and facts is not None:  # (facts: set when fired)
            only = error.partitions_hit(facts)
        answer = error_response(ctx, body, error.error, only)
        if ctx.api_key == 0 and only is not None:
            rest = _produce_without(body, only)
            if rest.topic_data:
                handled = handle(rest)
                if handled is not NO_RESPONSE and not inspect.isawaitable(handled):
                    answer = _merge_produce(answer, handled)
        if ctx.api_key == 0 and body.acks == 0:
            answer = NO_RESPONSE
    else:
        if error is not None:
            log.warning("broker %s: fault rule #%s: %s answers carry no error code; handled normally",
                        ctx.broker_id, error.id, ctx.api_key)
        answer = handle(body)
    if inspect.isawaitable(answer):
        return _finish_async(answer, rules, ctx, finish)
    return _after(answer, rules, ctx, finish)


async def _finish_async(pending: Awaitable[Any], rules: list[FaultRule], ctx: RequestContext,
                        finish: Finish) -> list[Any] | None:
    answer = await pending
    result = _after(answer, rules, ctx, finish)
    if inspect.isawaitable(result):
        return await result
    return result


def _after(answer: Any, rules: list[FaultRule], ctx: RequestContext,
           finish: Finish) -> list[Any] | Awaitable[list[Any] | None] | None:
    dropped = _first(rules, "drop_after")
    if dropped:
        raise CloseConnection(f"fault rule #{dropped.id}: handled, connection dropped before the answer")
    if answer is NO_RESPONSE:
        return finish(answer)
    corrupt = _first(rules, "corrupt_crc")
    if corrupt is not None and ctx.api_key == 1 and not _corrupt_first_batch(answer):
        log.info("broker %s: fault rule #%s: no record batch to corrupt in this answer", ctx.broker_id, corrupt.id)
    throttle = _first(rules, "throttle")
    delays = [r for r in rules if r.action == "delay"]  # several add up (a latency preset's and a test's own)
    truncate = _first(rules, "truncate")
    if throttle is not None:
        ctx.throttle_ms = max(ctx.throttle_ms, throttle.throttle_ms)
        if hasattr(answer, "throttle_time_ms"):
            answer.throttle_time_ms = throttle.throttle_ms
    if throttle is None and not delays and truncate is None:
        return finish(answer)
    return _timed(ctx, answer, finish, throttle, sum(r.delay_ms for r in delays), truncate)


async def _timed(ctx: RequestContext, answer: Any, finish: Finish,
                 throttle: FaultRule | None, delay_ms: int, truncate: FaultRule | None) -> list[Any] | None:
    if delay_ms:
        await asyncio.sleep(delay_ms / 1000)
    buffers = finish(answer)  # after the delay, so the journal's latency includes it
    if inspect.isawaitable(buffers):  # throttled by a client quota as well
        buffers = await buffers
    if truncate is not None and buffers:
        data = b"".join(bytes(b) for b in buffers)
        ctx.connection.write([data[: max(len(data) // 2, 5)]])
        raise CloseConnection(f"fault rule #{truncate.id}: answer truncated to half its bytes")
    if throttle is not None:
        buffers = await throttled(ctx, buffers, throttle.throttle_ms)
    return buffers
