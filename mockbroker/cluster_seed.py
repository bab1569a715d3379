"""MockCluster's seed data and dump (mockbroker.seed, mockbroker.dump): the seed files are read and checked when the
cluster is made, their schemas registered and their records written as it starts (and again after a reset);
``dump`` writes a topic out in the same JSON Lines format, over the wire.

    with MockCluster(seed={"orders": "orders.jsonl"}) as cluster:
        cluster.dump("orders", "orders-again.jsonl")
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mockbroker.registry.server import SchemaRegistry
    from mockbroker.state.cluster import ClusterState

log = logging.getLogger("mockbroker.cluster")


def seed_plan(seed: Mapping[str, Any] | None, state: ClusterState, topics: Mapping[str, int | None],
              registry: bool) -> list[Any]:
    """The seed's sources, read and checked (SeedError, one line, on the first problem); [] without a seed."""
    if not seed:
        return []
    from mockbroker import seed as seed_data  # (only when seeding: the client's partitioner, JSON, schemas)

    return seed_data.plan(seed, state, topics, registry)


class SeedMixin:
    """The seed half of MockCluster (which provides state, schema_registry, bootstrap_servers, _loop, _thread)."""

    _seed: list[Any]
    state: ClusterState
    schema_registry: SchemaRegistry | None
    _loop: asyncio.AbstractEventLoop | None
    _thread: threading.Thread | None

    if TYPE_CHECKING:
        @property
        def bootstrap_servers(self) -> str: ...

    async def _load_seed(self) -> None:
        """Register the seed's schemas and write its records (mockbroker.seed); not into a cluster that came
        from a data directory holding one or from a snapshot (the records would be there twice)."""
        if self._seed and getattr(self, "store_loaded", False):
            log.info("seed data not loaded: the cluster came from %s, which holds its records already",
                     "a snapshot" if getattr(self, "_snapshot", None) is not None else "its data directory")
        elif self._seed:
            from mockbroker import seed

            if self.schema_registry is not None:
                await seed.register(self._seed, self.schema_registry)
            seed.load(self._seed, self.state)

    def dump(self, topic: str, path: str) -> int:
        """Write ``topic``'s records to ``path`` as ``mockbroker dump`` does, over the wire (not from the
        cluster's own loop); returns how many."""
        from mockbroker.dump import dump_topic

        if self._loop is not None and (threading.current_thread() is self._thread or _running_loop() is self._loop):
            raise RuntimeError("dump reads over the wire and blocks: call it from another thread than the cluster's")
        with open(path, "w", encoding="utf-8") as out:
            return dump_topic(self.bootstrap_servers, topic, out)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
