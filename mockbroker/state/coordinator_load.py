"""Rebuilding the coordinators from their internal topics' records, as Kafka's coordinators load their
partitions on start: called once the partition logs hold what a data directory or a snapshot kept.

Each coordinator contributes one loader (a function of the ClusterState) to ``LOADERS``; they run in
that order.  With empty internal topics every loader does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _groups(state: Any) -> None:
    """The group coordinator from ``__consumer_offsets`` (mockbroker.state.offsets_replay; imported here
    only when run, so importing this module stays cheap)."""
    from mockbroker.state.offsets_replay import load

    load(state)


LOADERS: list[Callable[[Any], None]] = [_groups]


def load_all(state: Any) -> None:
    """Run every coordinator's loader over ``state``'s internal topics."""
    for load in LOADERS:
        load(state)
