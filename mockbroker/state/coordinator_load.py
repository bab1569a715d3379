"""Rebuilding the coordinators from their internal topics' records, as Kafka's coordinators load their
partitions on start: called once the partition logs hold what a data directory or a snapshot kept.

Each coordinator contributes one loader (a function of the ClusterState) to ``LOADERS``; they run in
that order.  With empty internal topics every loader does nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy(module: str, name: str) -> Callable[[Any], None]:
    """A loader imported when it runs (the coordinators' modules stay out of a broker's start-up)."""
    def load(state: Any) -> None:
        getattr(importlib.import_module(module), name)(state)
    return load


LOADERS: list[Callable[[Any], None]] = [
    lazy("mockbroker.state.offsets_replay", "load"),  # __consumer_offsets: the group coordinator (first:
    # a loaded transaction ending settles its groups' pending offsets)
    lazy("mockbroker.state.txn_log", "load_transactions"),  # __transaction_state: the transaction coordinator
    lazy("mockbroker.state.share_state_log", "load_share_state"),  # __share_group_state: share-partitions
]


def load_all(state: Any) -> None:
    """Run every coordinator's loader over ``state``'s internal topics."""
    for load in LOADERS:
        load(state)
