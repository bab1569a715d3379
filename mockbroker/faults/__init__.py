"""Failure injection and observation: fault rules, the request journal, and what a request is about."""

from mockbroker.faults.journal import Journal, JournalEntry
from mockbroker.faults.rules import ACTIONS, FaultRule, FaultSet, rule_from_dict

__all__ = ["ACTIONS", "FaultRule", "FaultSet", "Journal", "JournalEntry", "rule_from_dict"]
