"""MockCluster's fault rules and request journal (mockbroker.faults): add and remove rules, one for the length
of a ``with`` block, and wait for a rule's hits or the journal's requests, from sync or async code.

    with cluster.fault(api="Fetch", action="delay", delay_ms=500, times=None) as rule:
        ...
    cluster.wait_for_requests("Produce", 3, broker=0)
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mockbroker.faults import FaultSet, Journal
    from mockbroker.faults.rules import FaultRule
    from mockbroker.state.cluster import ClusterState

POLL_SECONDS = 0.01


class FaultsMixin:
    """The faults half of MockCluster (which provides state)."""

    state: ClusterState

    @property
    def faults(self) -> FaultSet:
        return self.state.faults

    @property
    def journal(self) -> Journal:
        return self.state.journal

    def add_fault(self, rule: FaultRule | dict[str, Any] | None = None, **spec: Any) -> FaultRule:
        """Add a fault rule, e.g. ``add_fault(api="Produce", error="NOT_LEADER_OR_FOLLOWER", times=3)``."""
        return self.state.faults.add(rule, **spec)

    def remove_fault(self, rule_id: int) -> bool:
        return self.state.faults.remove(rule_id)

    @contextlib.contextmanager
    def fault(self, rule: FaultRule | dict[str, Any] | None = None, **spec: Any) -> Iterator[FaultRule]:
        """A fault rule for the length of a ``with`` block: ``with cluster.fault(api="Fetch", action="delay",
        delay_ms=500, times=None) as rule: ...`` (``rule.hits`` counts what it did)."""
        added = self.add_fault(rule, **spec)
        try:
            yield added
        finally:
            self.remove_fault(added.id)

    def wait_for_hits(self, rule: FaultRule | int, hits: int = 1, timeout: float = 10.0) -> bool:
        """Block until a rule has acted ``hits`` times (from sync code; see :meth:`wait_for_hits_async`)."""
        rule_id = rule if isinstance(rule, int) else rule.id
        return self.state.faults.wait_for_hits(rule_id, hits, timeout)

    async def wait_for_hits_async(self, rule: FaultRule | int, hits: int = 1, timeout: float = 10.0) -> bool:
        rule_id = rule if isinstance(rule, int) else rule.id
        return await _poll(lambda: (r := self.state.faults.get(rule_id)) is not None and r.hits >= hits, timeout)

    def wait_for_requests(self, api: str | int, count: int = 1, timeout: float = 10.0, **filters: Any) -> bool:
        """Block until the journal holds ``count`` requests of ``api`` (filters as :meth:`Journal.entries`)."""
        deadline = time.monotonic() + timeout
        while len(self.journal.entries(api=api, **filters)) < count:
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_SECONDS)
        return True

    async def wait_for_requests_async(self, api: str | int, count: int = 1, timeout: float = 10.0,
                                      **filters: Any) -> bool:
        return await _poll(lambda: len(self.journal.entries(api=api, **filters)) >= count, timeout)


async def _poll(done: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(POLL_SECONDS)
    return True
