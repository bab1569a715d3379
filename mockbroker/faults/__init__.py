"""Failure injection and observation as data: fault rules, the request journal, and what a request is about.
The serving path carries fired rules out (mockbroker.server.fault_injection); nothing here imports it.

``FaultRule``, ``rule_from_dict`` and ``ACTIONS`` load on first use (:mod:`mockbroker.faults.rules`
imports ``random`` and dataclasses, which a broker without rules never needs).
"""

from typing import Any

from mockbroker.faults.fault_set import FaultSet
from mockbroker.faults.journal import Journal, JournalEntry

__all__ = ["ACTIONS", "FaultRule", "FaultSet", "Journal", "JournalEntry", "rule_from_dict"]


def __getattr__(name: str) -> Any:
    if name in ("ACTIONS", "FaultRule", "rule_from_dict"):
        from mockbroker.faults import rules

        return getattr(rules, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
