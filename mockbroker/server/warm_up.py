"""Loading, after a process's first answered request, what the usual requests would load on first use.

A broker imports each API's handler and codec modules when a request first needs them, so that
`mockbroker serve` answers its first Metadata sooner (README, "Start"). A fresh broker's first Produce
then waited ~9 ms for its imports (the handler, the record checks, CRC-32C's extension, the stored
batch classes) and its first Fetch ~10 ms (the handler, its codec, fetch sessions) -- time on the
path of the first answers a one-broker-per-test user or a benchmark on a fresh process measures.

Once the process's first request has been answered, the event loop imports them in small steps, one
module per loop iteration (``call_soon`` between steps), so a request that arrives meanwhile waits
for one step, not all of them. Nothing else changes: a step only imports what the first request of
its kind would import, and a step that fails is logged and skipped. ``MOCKBROKER_WARM_UP=0`` turns
it off (tests/broker/test_start_imports.py checks what the first answers alone load).  When the last
step is done, a broker that owns its process freezes what the warm-up made for the cycle collector
(mockbroker/server/collector.py).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
from collections.abc import Callable
from functools import partial

from mockbroker.handlers.registry import handler_for
from mockbroker.protocol import api
from mockbroker.server import collector

log = logging.getLogger("mockbroker.server")

# Produce, Fetch, ListOffsets, Metadata, CreateTopics, FindCoordinator, OffsetCommit, OffsetFetch,
# InitProducerId: what producers, consumers and admin clients send first
APIS = (0, 1, 2, 3, 19, 10, 8, 9, 22)
MODULES = ("mockbroker.batches", "mockbroker.records.check", "mockbroker.state.fetch_sessions",
           "mockbroker.protocol.fast_produce")  # Produce's decoder (the produce lane imports it; pure Python does not)

pending = os.environ.get("MOCKBROKER_WARM_UP", "") != "0"  # dispatch starts the warm-up while this is set


def _load_crc32c() -> None:
    from mockbroker.records.batch import crc32c_function

    crc32c_function()


def steps() -> list[Callable[[], object]]:
    """The warm-up's steps, in order: each a call that imports one module (or loads one extension)."""
    out: list[Callable[[], object]] = []
    for key in APIS:
        out += [partial(handler_for, key), partial(api.request_module, key), partial(api.response_module, key)]
    out += [partial(importlib.import_module, name) for name in MODULES]
    out.append(_load_crc32c)
    return out


def start() -> None:
    """Begin the warm-up on the running loop (once per process): its first step runs after the callback
    that called this, so the answer being made goes out first.  Called with no loop running (a request
    handed to dispatch or the staging lane directly, as the fuzz targets do), it waits for a call that
    has one."""
    global pending
    if not pending:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    pending = False
    loop.call_soon(_run, steps())


def _run(todo: list[Callable[[], object]]) -> None:
    step = todo.pop(0)
    try:
        step()
    except Exception:  # a warm-up never stops a broker: the request that needs it loads it (or says why)
        log.debug("warm-up step failed", exc_info=True)
    if todo:
        asyncio.get_running_loop().call_soon(_run, todo)
    else:  # what the warm-up made lives as long as the process: no young collection need walk it
        collector.freeze_warmed_up()
