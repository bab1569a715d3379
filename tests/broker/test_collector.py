"""The serve process's collector policy: survivors of a full collection are frozen, the freeze is
lifted again after its period, and the youngest generation is collected less often.  Runs in a fresh
interpreter so this test process's collector is untouched."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = r"""
import gc
from mockbroker.server import collector
older = gc.get_threshold()[1:]
gc.disable()                                            # as ``python -m mockbroker`` starts
policy = collector.install(full_every_s=3600)
assert gc.isenabled()                                   # on again once the broker listens
assert gc.get_threshold() == (collector.YOUNG_THRESHOLD, *older), gc.get_threshold()  # only the youngest moves
assert gc.get_freeze_count() > 0                       # start-up objects frozen at once
keep = [[i] for i in range(50_000)]                     # long-lived containers
gc.collect()                                            # a full collection ...
assert policy.freezes == 1 and gc.get_freeze_count() > 50_000, gc.get_freeze_count()  # ... freezes them
policy.full_every_s = 0
gc.collect()                                            # period over: the freeze is lifted
assert gc.get_freeze_count() == 0
a = []; a.append(a); del a                              # a cycle ...
assert gc.collect() >= 1                                # ... is collected by the next full pass
before = gc.get_stats()[0]["collections"]
junk = [[i] for i in range(collector.YOUNG_THRESHOLD // 2)]  # fewer new containers than the threshold ...
assert gc.get_stats()[0]["collections"] == before       # ... start no young collection (CPython's 700 would)
print("ok")
"""


def test_survivors_are_frozen_and_released_after_the_period() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


WARM_UP = r"""
import asyncio, gc, os, time
os.environ["MOCKBROKER_WARM_UP"] = "1"
from mockbroker.server import collector, warm_up
assert not collector.freeze_warmed_up()                 # no policy in this process yet: the collector is left alone
gc.disable()
collector.install(full_every_s=3600)
before = gc.get_freeze_count()

async def warm() -> None:
    warm_up.start()
    deadline = time.monotonic() + 30
    while gc.get_freeze_count() == before and time.monotonic() < deadline:
        await asyncio.sleep(0.001)

asyncio.run(warm())
grown = gc.get_freeze_count() - before
assert grown > 1000, grown                              # the warm-up's modules and classes were frozen ...
assert gc.get_count()[0] < 200, gc.get_count()          # ... so no young collection will walk them
print("ok")
"""


def test_what_the_warm_up_made_is_frozen_in_a_broker_that_owns_its_process() -> None:
    out = subprocess.run([sys.executable, "-c", WARM_UP], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
