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
