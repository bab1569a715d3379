"""MockCluster's Schema Registry (mockbroker.registry): started with the cluster when asked for
(``schema_registry=True`` for a free port, or a port number), reset and stopped with it, and the calls
that inject its faults or take it down, sync and async like the cluster's other actions.

    with MockCluster(schema_registry=True) as cluster:
        url = cluster.schema_registry_url               # http://127.0.0.1:PORT
        cluster.registry_fault(status=503, times=None)  # every call answers 503 until cleared
        cluster.registry_down(); cluster.registry_up()  # refused connections, then the same port again
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Coroutine
    from typing import TypeVar

    from mockbroker.registry.faults import RegistryFault
    from mockbroker.registry.server import SchemaRegistry
    from mockbroker.state.cluster import ClusterState

    T = TypeVar("T")


def registry_port(schema_registry: bool | int | None) -> int | None:
    """The port the registry listens on (0: a free one), or None for no registry; ValueError when bad."""
    if schema_registry is None or schema_registry is False:
        return None
    if schema_registry is True:
        return 0
    if not isinstance(schema_registry, int) or not 0 <= schema_registry <= 65535:
        raise ValueError(f"schema_registry must be True, False or a port 0-65535, not {schema_registry!r}")
    return schema_registry


class RegistryMixin:
    """The registry half of MockCluster (which provides state, bootstrap_servers, call and _run)."""

    schema_registry: SchemaRegistry | None
    _registry_options: tuple[str, int | None]
    # the registry's default level (cp-schema-registry's schema.compatibility.level, from serve --kafka-env)
    registry_compatibility: str | None = None
    state: ClusterState
    _loop: asyncio.AbstractEventLoop | None

    if TYPE_CHECKING:
        @property
        def bootstrap_servers(self) -> str: ...

        def call(self, fn: Any, *args: Any, **kwargs: Any) -> Any: ...

        def _run(self, coro: Coroutine[Any, Any, T]) -> T: ...

    async def _start_registry(self) -> None:
        host, port = self._registry_options
        if port is None:
            return
        from mockbroker.registry import missing_extra
        from mockbroker.registry.server import SchemaRegistry, ensure_topic

        missing = missing_extra()
        if missing:
            raise RuntimeError(missing)
        self.schema_registry = SchemaRegistry(lambda: ensure_topic(self.state), self.bootstrap_servers, host, port)
        self.schema_registry.default_compatibility(self.registry_compatibility)
        try:
            await self.schema_registry.start()
        except OSError as exc:
            raise OSError(exc.errno, f"schema registry: {exc.strerror or exc}") from None

    async def _stop_registry(self) -> None:
        if self.schema_registry is not None:
            await self.schema_registry.stop()
            self.schema_registry = None

    def _reset_registry(self) -> None:
        """A reset cluster gets an empty registry (same port) and a fresh ``_schemas`` topic."""
        if self.schema_registry is not None:
            self.schema_registry.reset()

    @property
    def schema_registry_url(self) -> str | None:
        """``http://host:port`` of the Schema Registry, when it runs (``schema.registry.url`` for clients)."""
        return self.schema_registry.url if self.schema_registry is not None else None

    async def enable_schema_registry_async(self, port: int = 0) -> str:
        """Start a registry beside a running cluster (if it has none yet); its URL."""
        if self.schema_registry is None:
            self._registry_options = (self._registry_options[0], registry_port(port))
            await self._start_registry()
        assert self.schema_registry is not None
        return self.schema_registry.url

    def enable_schema_registry(self, port: int = 0) -> str:
        """The sync form of ``enable_schema_registry_async`` (the pytest fixture ``schema_registry_url`` uses it)."""
        return self._run(self.enable_schema_registry_async(port))

    def _registry(self) -> SchemaRegistry:
        if self.schema_registry is None:
            raise RuntimeError("this cluster runs no schema registry: MockCluster(schema_registry=True)")
        return self.schema_registry

    def registry_fault(self, **spec: Any) -> RegistryFault:
        """Add a registry fault (fields: name, method, path, status, error_code, message, latency_ms, times)."""
        registry = self._registry()
        fault: RegistryFault = self.call(registry.add_fault, spec)
        return fault

    def registry_clear_faults(self) -> None:
        registry = self._registry()
        self.call(registry.clear_faults)

    async def registry_down_async(self) -> None:
        await self._registry().down()

    async def registry_up_async(self) -> None:
        await self._registry().up()

    def registry_down(self) -> None:
        """Stop the registry listening: clients meet a refused connection until ``registry_up``."""
        self._run(self.registry_down_async())

    def registry_up(self) -> None:
        self._run(self.registry_up_async())
