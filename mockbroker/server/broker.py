"""One mock broker: an asyncio listener on its own port, its connections, and graceful shutdown."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from mockbroker.server.connection import STAGING_BYTES, Connection
from mockbroker.server.dispatch import dispatch
from mockbroker.state.fetch_sessions import FetchSessionCache

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState

log = logging.getLogger("mockbroker.server")


class BrokerServer:
    def __init__(self, cluster: ClusterState, node_id: int, host: str, port: int) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.host = host
        self.port = port
        self.server: asyncio.base_events.Server | None = None
        self.connections: set[Connection] = set()
        self.tasks: set[asyncio.Future[Any]] = set()  # requests still being answered (long polls)
        self.partitioned = False  # a network partition: connections hang, nothing is answered
        self.fetch_sessions = FetchSessionCache(cluster.config["max.incremental.fetch.session.cache.slots"])

    def use_state(self, cluster: ClusterState) -> None:
        """Serve a fresh cluster state (MockCluster.reset): sessions of the old one are forgotten."""
        self.cluster = cluster
        self.fetch_sessions = FetchSessionCache(cluster.config["max.incremental.fetch.session.cache.slots"])

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        max_bytes = self.cluster.config["socket.request.max.bytes"]
        staging = memoryview(bytearray(STAGING_BYTES))  # shared by this broker's connections

        def track(task: asyncio.Future[Any]) -> None:
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

        def factory() -> Connection:
            conn = Connection(self.node_id, lambda c, f: dispatch(self, c, f), max_bytes, staging,
                              self.connections.discard, track)
            self.connections.add(conn)
            return conn

        self.server = await loop.create_server(factory, self.host, self.port, reuse_address=True)
        self.port = self.server.sockets[0].getsockname()[1]
        log.info("broker %s listening on %s:%s", self.node_id, self.host, self.port)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.close()
        pending = list(self.tasks)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        if self.server is not None:
            await self.server.wait_closed()
            self.server = None
