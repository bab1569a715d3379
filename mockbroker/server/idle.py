"""Closing idle connections: Kafka's ``connections.max.idle.ms`` (default 600000, 10 minutes).

Kafka's Selector keeps, per connection, the time of its last socket activity (any read or write
the selector saw) and on every poll closes a connection idle longer than the limit, logging it.
There is no separate timeout for a request that starts but never completes: a client that sends
half a frame and stops is idle from its last byte and closed by the same rule, while one that
trickles a byte now and then stays open (as in Kafka).  A negative limit turns expiry off.

Here one sweep task per broker wakes a few times per limit (at least every 50 ms; at most once a
second for limits up to two minutes, and for longer ones 120 times per limit: every 5 s for the
default, so an idle broker is not woken each second for a limit of ten minutes) and closes every
connection whose ``last_active`` (set on each read and each write) is older than the limit: a
connection is closed at most a quarter of the limit late, and at most a second or a 120th of the
limit late, whichever is longer.  The hot path pays one ``time.monotonic()`` per read and per write,
nothing more.
Two mock choices: a connection whose request is still being answered (a long poll, a delayed or
throttled answer) is not idle, and one whose queued response bytes are still draining to the client
counts as active (asyncio writes in the background, so the sweep watches the write buffer shrink).
An expired connection is aborted: responses a client never read are dropped with it, not kept
until it reads them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable

from mockbroker.server.connection import Connection

log = logging.getLogger("mockbroker.server")

MIN_SWEEP_S = 0.05
SWEEP_S = 1.0  # the longest interval for limits up to two minutes
SWEEPS_PER_LIMIT = 120  # longer limits: this many sweeps per limit (every 5 s for the default 600000)


def sweep_interval(max_idle_ms: int) -> float:
    """How often the sweep runs for a limit: a quarter of it, but at most SWEEP_S or a 120th of the
    limit (whichever is longer), and at least every 50 ms."""
    limit_s = max_idle_ms / 1000
    return max(MIN_SWEEP_S, min(limit_s / 4, max(SWEEP_S, limit_s / SWEEPS_PER_LIMIT)))


def expire(connections: Iterable[Connection], max_idle_ms: int, now: float | None = None,
           draining: dict[Connection, int] | None = None) -> int:
    """Close the connections idle longer than ``max_idle_ms``; return how many were closed.

    ``draining`` remembers each connection's write-buffer size between sweeps: a shrinking buffer
    means the client is reading its responses, which is activity.
    """
    now = time.monotonic() if now is None else now
    limit = max_idle_ms / 1000
    closed = 0
    if draining:  # forget connections that closed since the last sweep
        for gone in [c for c in draining if c.closed]:
            del draining[gone]
    for conn in list(connections):
        if conn.closed or conn.busy:
            continue
        transport = conn.transport
        if draining is not None and transport is not None:
            pending = transport.get_write_buffer_size()
            before = draining.pop(conn, None)
            if pending:
                draining[conn] = pending
                if before is None or pending < before:
                    conn.last_active = now
        idle = now - conn.last_active
        if idle <= limit:
            continue
        partial = conn.partial_request()
        what = "no request in progress" if partial is None else (
            f"a request frame stalled after {partial[0]} of {partial[1] if partial[1] >= 0 else '?'} bytes")
        # abort: answers the client never took are dropped, not kept until it reads (Kafka drops them too)
        conn.close(f"idle for {int(idle * 1000)} ms, over connections.max.idle.ms={max_idle_ms} ({what})",
                   abort=True)
        if draining is not None:
            draining.pop(conn, None)
        closed += 1
    return closed


async def sweep_forever(connections: set[Connection], max_idle_ms: int, broker_id: int) -> None:
    """The broker's sweep task: runs until cancelled (BrokerServer.stop)."""
    interval = sweep_interval(max_idle_ms)
    draining: dict[Connection, int] = {}
    while True:
        await asyncio.sleep(interval)
        try:
            expire(connections, max_idle_ms, draining=draining)
        except Exception:  # never let one bad sweep stop the next ones
            log.exception("broker %s: idle connection sweep failed", broker_id)
