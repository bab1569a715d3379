"""The cluster's fault rules as a set: adding, removing, and which rules act on a request.

Removed rules are kept, with their hits, in a bounded history (``removed``, the newest ``REMOVED_KEPT``), so
a report written after a ``with cluster.fault(...)`` block still shows what the rule did (:meth:`FaultSet.ran`).

A broker without rules (the usual case) asks this set one question per request, ``rules`` empty or
not; what a rule is and how it matches (:mod:`mockbroker.faults.rules`, with ``random`` and
dataclasses) loads with the first rule added, not at start.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mockbroker.faults.facts import Facts

if TYPE_CHECKING:
    from mockbroker.faults.rules import FaultRule

REMOVED_KEPT = 1000  # removed rules remembered for ran()


class FaultSet:
    """The cluster's rules, in the order added; safe to call from any thread."""

    # what the C produce lane reads on every request are slots (native/lanes/member_sites.h); the rest stays in __dict__
    __slots__ = ("__dict__", "__weakref__", "rules")

    def __init__(self, clock: Any) -> None:
        self.clock = clock
        self.rules: list[FaultRule] = []
        self.removed: deque[FaultRule] = deque(maxlen=REMOVED_KEPT)  # removed rules, oldest first
        self._next_id = 1
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)

    def add(self, rule: FaultRule | dict[str, Any] | None = None, **spec: Any) -> FaultRule:
        from mockbroker.faults.rules import FaultRule, rule_from_dict  # loaded with the first rule

        if not isinstance(rule, FaultRule):
            rule = rule_from_dict({**(rule or {}), **spec})
        with self._lock:
            rule.id = self._next_id
            self._next_id += 1
            rule.added_ms = self.clock.now_ms()
            self.rules.append(rule)
        return rule

    def remove(self, rule_id: int) -> bool:
        with self._lock:
            gone = [r for r in self.rules if r.id == rule_id]
            if not gone:
                return False
            self.rules = [r for r in self.rules if r.id != rule_id]
            self.removed.extend(gone)
            return True

    def clear(self) -> None:
        with self._lock:
            self.removed.extend(self.rules)
            self.rules = []

    def get(self, rule_id: int) -> FaultRule | None:
        return next((r for r in self.rules if r.id == rule_id), None)

    def fire(self, api_key: int, version: int, broker: int, client_id: str | None, facts: Facts) -> list[FaultRule]:
        """The rules that act on this request (counting matches and hits as they go)."""
        if not self.rules:
            return []
        now = self.clock.now_ms()
        fired = []
        with self._lock:
            for rule in self.rules:
                if not rule.active or not rule.matches(api_key, version, broker, client_id, facts, now):
                    continue
                rule.matched += 1
                if rule.matched < rule.nth:
                    continue
                if rule.probability < 1.0 and rule._rng.random() >= rule.probability:
                    continue
                rule.hits += 1
                fired.append(rule)
            if fired:
                self._changed.notify_all()
        return fired

    def wait_for_hits(self, rule_id: int, hits: int, timeout: float = 10.0) -> bool:
        """Block (from a thread other than the cluster's loop) until the rule has ``hits`` hits."""
        with self._changed:
            return self._changed.wait_for(lambda: (r := self.get(rule_id)) is not None and r.hits >= hits, timeout)

    def listed(self) -> Iterable[FaultRule]:
        return list(self.rules)

    def ran(self) -> list[FaultRule]:
        """Every rule this set has held: the listed ones and the removed ones still remembered, by id."""
        with self._lock:
            kept = {r.id: r for r in self.removed}
            kept.update((r.id, r) for r in self.rules)
        return [kept[i] for i in sorted(kept)]
