"""Short cycle-collector pauses for a broker that owns its process (``mockbroker serve``).

CPython's full (generation 2) collections walk every container object; once a broker holds a few
hundred MB of batches and a full journal, one walk takes tens of milliseconds, and a producer sees
it as a p99 latency of 40-80 ms.  After each full collection the survivors are frozen
(:func:`gc.freeze`), so the next walk covers only what is new.  Frozen objects are still freed by
reference counting; only reference cycles among them would outlive their use, so every
``FULL_EVERY_S`` the freeze is lifted and the next full collection looks at everything again.

The youngest generation is collected after ``YOUNG_THRESHOLD`` net container allocations instead of
CPython's 700: a request's own objects are freed by reference counting as soon as it is answered, so
what a young collection walks is mostly stored batches and journal entries, which survive; walking
them in bigger, rarer rounds leaves out most middle-generation walks.  In the 1M x 100 B lz4 produce
load this halves the collector's time (about 16 -> 7 ms), and its longest pause stays about one
millisecond.  In-process clusters (``MockCluster`` in a test) leave the host's collector alone.

What the warm-up loads once the first answer is out (handler and codec modules, their classes: some
6,000 containers, mockbroker/server/warm_up.py) lives as long as the process, so it is frozen as the
start-up was (:func:`freeze_warmed_up`) instead of being walked by the first young collection, ~1.5 ms
in the middle of a client's requests.
"""

from __future__ import annotations

import gc
import time
from typing import Any

FULL_EVERY_S = 600.0
YOUNG_THRESHOLD = 10_000


class CollectorPolicy:
    def __init__(self, full_every_s: float = FULL_EVERY_S) -> None:
        self.full_every_s = full_every_s
        self.last_full = time.monotonic()
        self.freezes = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info.get("generation") != 2:
            return
        now = time.monotonic()
        if now - self.last_full >= self.full_every_s:
            gc.unfreeze()  # the next full collection sees every object again
            self.last_full = now
            return
        gc.freeze()
        self.freezes += 1


_installed: CollectorPolicy | None = None  # the policy install() set up in this process, if any


def install(full_every_s: float = FULL_EVERY_S) -> CollectorPolicy:
    """Freeze what survives each full collection, and collect the youngest generation less often,
    from now on, in this process; the collector is on afterwards (``python -m mockbroker`` starts
    with it off)."""
    global _installed
    policy = _installed = CollectorPolicy(full_every_s)
    gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    gc.freeze()  # what start-up made (modules, classes, generated codec) is never garbage
    gc.callbacks.append(policy)
    gc.enable()
    return policy


def freeze_warmed_up() -> bool:
    """Freeze what exists once the warm-up is done, in a process whose collector :func:`install` set
    up; elsewhere (an in-process cluster) leave the collector alone and answer False."""
    if _installed is None:
        return False
    gc.freeze()
    return True
