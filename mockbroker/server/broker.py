"""One mock broker: an asyncio server per listener (each on its own port), its connections, and shutdown.

Without a Security (mockbroker.server.security) a broker has one PLAINTEXT listener on host:port.
Connections know their listener's name and security protocol; those of a SASL listener get a
SaslSession (mockbroker.server.sasl), those of an SSL listener run over asyncio's TLS transport.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
from functools import cached_property
from typing import TYPE_CHECKING, Any

from mockbroker.handlers import produce_lane
from mockbroker.server.connection import STAGING_BYTES, Connection
from mockbroker.server.dispatch import dispatch
from mockbroker.server.idle import sweep_forever
from mockbroker.server.listen import bound_socket
from mockbroker.server.listeners import ListenerSpec, broker_port

if TYPE_CHECKING:
    from mockbroker.handlers.pending import Pending
    from mockbroker.server.security import Security
    from mockbroker.state.cluster import ClusterState
    from mockbroker.state.fetch_sessions import FetchSessionCache

log = logging.getLogger("mockbroker.server")


class BrokerServer:

    # what the C produce lane reads on every request are slots (native/lanes/member_sites.h); the rest stays in __dict__
    __slots__ = ("__dict__", "__weakref__", "cluster", "node_id", "partitioned")
    def __init__(self, cluster: ClusterState, node_id: int, host: str, port: int,
                 security: Security | None = None) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.host = host
        self.port = port  # the first listener's port
        self.security = security
        self.listeners = security.listeners if security else [ListenerSpec("PLAINTEXT", "PLAINTEXT", host, port)]
        self.ports: dict[str, int] = {}  # listener name -> bound port (kept across broker down/up)
        self.server: asyncio.base_events.Server | None = None  # the first listener's server
        self.servers: list[asyncio.base_events.Server] = []
        self.connections: set[Connection] = set()
        self.tasks: set[asyncio.Future[Any] | Pending] = set()  # requests still being answered (long polls)
        self.partitioned = False  # a network partition: connections hang, nothing is answered
        self.idle_sweep: asyncio.Task[None] | None = None  # closes idle connections (mockbroker.server.idle)
        # the event loop serving it, from start() on (asyncio.get_running_loop() asks the OS for the pid)
        self.loop: asyncio.AbstractEventLoop | None = None

    @property
    def status(self) -> str:
        """"up", "partitioned" (listening, answering nothing) or "down": what the control API and the console show."""
        return "up" if self.node_id in self.cluster.brokers else "partitioned" if self.partitioned else "down"

    def use_state(self, cluster: ClusterState) -> None:
        """Serve a fresh cluster state (MockCluster.reset): sessions of the old one are forgotten."""
        self.cluster = cluster
        self.__dict__.pop("fetch_sessions", None)

    @cached_property
    def fetch_sessions(self) -> FetchSessionCache:
        """Incremental fetch sessions (KIP-227), made on the first Fetch that needs them."""
        from mockbroker.state.fetch_sessions import FetchSessionCache

        return FetchSessionCache(self.cluster.config["max.incremental.fetch.session.cache.slots"])

    async def start(self, announce: bool = True) -> None:
        """Listen on every listener; if one cannot, the ones already listening are closed again.
        ``announce``: log the ``listening on`` lines now (else :meth:`announce` does, once every broker
        of the cluster listens)."""
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise
        if announce:
            self.announce()

    def announce(self) -> None:
        """Log one ``listening on`` line per listener."""
        for spec in self.listeners:
            log.info("broker %s listening on %s:%s (listener %s, protocol %s)", self.node_id, spec.host,
                     self.ports[spec.name], spec.name, spec.protocol)

    async def _start(self) -> None:
        self.loop = loop = asyncio.get_running_loop()
        max_bytes = self.cluster.config["socket.request.max.bytes"]
        # Kafka's socket.listen.backlog.size (mock default 1024: 1,000 clients connecting at once are
        # all queued; the kernel caps it at net.core.somaxconn)
        backlog = self.cluster.config["socket.listen.backlog.size"]
        staging = memoryview(bytearray(STAGING_BYTES))  # shared by this broker's connections
        # Kafka's socket buffers: SO_RCVBUF on the listening socket (accepted sockets inherit it, and
        # the TCP window is sized from it), SO_SNDBUF on each accepted socket; -1 leaves the OS's
        send_buffer = int(self.cluster.config["socket.send.buffer.bytes"])
        receive_buffer = int(self.cluster.config["socket.receive.buffer.bytes"])

        def track(task: asyncio.Future[Any] | Pending) -> None:
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

        serve = functools.partial(dispatch, self)  # a C-level call per request, not a Python lambda frame
        # frames answered straight from the staging buffer (the C produce lane), when it is built
        borrow = produce_lane.borrow_function()
        lend = None if borrow is None else functools.partial(borrow, self)
        connections, cluster, node_id = self.connections, self.cluster, self.node_id

        def forget(conn: Connection) -> None:  # one function for every connection
            connections.discard(conn)
            if "share" in cluster.__dict__:  # share sessions opened on it close, as Kafka's on a disconnect
                cluster.share.connection_closed(node_id, conn)

        key_sets = await self.security.start_key_sets(self.cluster.config) if self.security is not None else None

        def factory(spec: ListenerSpec) -> Connection:
            conn = Connection(self.node_id, serve, max_bytes, staging, forget, track, spec.name, spec.protocol)
            conn.borrow = lend
            if spec.uses_sasl:
                from mockbroker.server.sasl import SaslSession, enabled_mechanisms  # SASL listeners only

                config = self.cluster.config
                conn.sasl = SaslSession(self.cluster.credentials, enabled_mechanisms(config),
                                        int(config.get("connections.max.reauth.ms", 0) or 0), config, spec.name,
                                        key_sets)
            conn.send_buffer_bytes = send_buffer
            self.connections.add(conn)
            return conn

        for i, spec in enumerate(self.listeners):
            port = self.ports.get(spec.name) or (self.port if i == 0 and self.security is None
                                                 else broker_port(spec, self.node_id))
            context = self.security.context_for(spec) if self.security is not None else None
            bound = bound_socket(spec.host, port, receive_buffer)  # a literal address: bound here
            if bound is not None:
                try:
                    server = await loop.create_server(lambda s=spec: factory(s), sock=bound, ssl=context,
                                                      backlog=backlog)
                except BaseException:
                    bound.close()
                    raise
            else:
                server = await loop.create_server(lambda s=spec: factory(s), spec.host, port, reuse_address=True,
                                                  ssl=context, backlog=backlog)
                if receive_buffer > 0:
                    for sock in server.sockets:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
            self.servers.append(server)
            self.ports[spec.name] = server.sockets[0].getsockname()[1]
        self.server = self.servers[0]
        self.port = self.ports[self.listeners[0].name]
        max_idle_ms = int(self.cluster.config["connections.max.idle.ms"])
        if max_idle_ms >= 0:  # Kafka: a negative connections.max.idle.ms never expires connections
            self.idle_sweep = loop.create_task(sweep_forever(self.connections, max_idle_ms, self.node_id))

    def address(self, listener: str | None = None) -> tuple[str, int]:
        """(host, port) this broker listens on for a listener (default: the first)."""
        name = listener or self.listeners[0].name
        spec = next((s for s in self.listeners if s.name == name), None)
        if spec is None:
            raise ValueError(f"no listener {name!r} (listeners: {', '.join(s.name for s in self.listeners)})")
        return spec.host, self.ports[name]

    async def stop(self) -> None:
        if self.idle_sweep is not None:
            self.idle_sweep.cancel()
            self.idle_sweep = None
        for server in self.servers:
            server.close()
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.close()
        pending = list(self.tasks)
        for task in pending:
            task.cancel()
        pending = [task for task in pending if not task.done()]  # a Pending is done once cancelled, a Task later
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        for server in self.servers:
            await server.wait_closed()
        self.servers.clear()
        self.server = None
