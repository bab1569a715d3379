"""MockCluster: the public way to run mock brokers, from async code or from plain sync code.

    async with MockCluster(brokers=3, topics={"orders": 6}) as cluster:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})

    with MockCluster() as cluster:          # runs its own event loop on a background thread
        ...

One MockCluster is one independent cluster: no module-level state is shared between instances.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import mockbroker.handlers  # noqa: F401  (registers every handler)
from mockbroker.server.broker import BrokerServer
from mockbroker.state.cluster import ClusterState, Topic

T = TypeVar("T")
TICK_SECONDS = 0.1


def parse_topic_spec(spec: str) -> tuple[str, int | None]:
    """``orders:6`` -> ("orders", 6); ``orders`` -> ("orders", None)."""
    name, _, count = spec.partition(":")
    return name, int(count) if count else None


class MockCluster:
    def __init__(
        self,
        brokers: int = 1,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        config: Mapping[str, Any] | None = None,
        topics: Mapping[str, int | None] | None = None,
        clock: Any = None,
    ) -> None:
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        self.state = ClusterState(config, clock)
        self.host = host
        self._base_port = port
        self._initial_topics = dict(topics or {})
        self.brokers: list[BrokerServer] = []
        self._count = brokers
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ticker: asyncio.Future[None] | None = None

    # -- async life cycle -------------------------------------------------------------------
    async def start(self) -> MockCluster:
        self._loop = asyncio.get_running_loop()
        for node_id in range(self._count):
            port = self._base_port + node_id if self._base_port else 0
            server = BrokerServer(self.state, node_id, self.host, port)
            await server.start()
            self.brokers.append(server)
            self.state.add_broker(node_id, self.host, server.port)
        for name, partitions in self._initial_topics.items():
            if name not in self.state.topics:
                self.state.create_topic(name, partitions)
        self._ticker = asyncio.ensure_future(self._tick())
        return self

    async def _tick(self) -> None:
        """Let time act on state: groups, transaction timeouts and markers, producer expiry."""
        while True:
            await asyncio.sleep(TICK_SECONDS)
            self.state.tick()

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        for server in self.brokers:
            await server.stop()
        self.brokers.clear()

    async def __aenter__(self) -> MockCluster:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- sync life cycle (background loop thread) --------------------------------------------
    def start_background(self) -> MockCluster:
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()

        def run() -> None:
            loop = _new_loop()
            asyncio.set_event_loop(loop)

            async def boot() -> None:
                try:
                    await self.start()
                except BaseException as exc:
                    ready.set_exception(exc)
                    raise
                ready.set_result(None)

            try:
                loop.run_until_complete(boot())
            except BaseException:
                loop.close()
                return
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="mockbroker", daemon=True)
        self._thread.start()
        ready.result(timeout=30)
        return self

    def stop_background(self) -> None:
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._thread = None

    def __enter__(self) -> MockCluster:
        return self.start_background()

    def __exit__(self, *exc: object) -> None:
        self.stop_background()

    # -- helpers ----------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{b.host}:{b.port}" for b in self.brokers)

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the cluster's loop (directly when already on it) and return its result."""
        loop = self._loop
        if loop is None or self._thread is None or threading.current_thread() is self._thread:
            return fn(*args, **kwargs)
        result: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                result.set_result(fn(*args, **kwargs))
            except BaseException as exc:
                result.set_exception(exc)

        loop.call_soon_threadsafe(run)
        return result.result(timeout=30)

    def create_topic(self, name: str, partitions: int | None = None, replication_factor: int | None = None,
                     config: Mapping[str, Any] | None = None) -> Topic:
        return self.call(self.state.create_topic, name, partitions, replication_factor, config)


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
