"""Rebuilding the coordinators from their internal topics' records, as Kafka's coordinators load their
partitions on start: called once the partition logs hold what a data directory or a snapshot kept.

Each coordinator contributes one loader (a function of the ClusterState) to ``LOADERS``; they run in
that order.  With empty internal topics every loader does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mockbroker.state.share_state_log import load_share_state
from mockbroker.state.txn_log import load_transactions

LOADERS: list[Callable[[Any], None]] = [
    load_transactions,  # __transaction_state: the transaction coordinator
    load_share_state,  # __share_group_state: the share coordinator's share-partitions
]


def load_all(state: Any) -> None:
    """Run every coordinator's loader over ``state``'s internal topics."""
    for load in LOADERS:
        load(state)
