"""The Schema Registry beside the broker: one per MockCluster, on the cluster's loop, an HTTP server
speaking Confluent's REST API (mockbroker.registry.routes) over the state in mockbroker.registry.state,
kept in the cluster's ``_schemas`` topic (mockbroker.registry.store).

    MockCluster(schema_registry=True).schema_registry_url      # http://127.0.0.1:PORT
    mockbroker serve --schema-registry-port 0                  # prints schema.registry.url=...

Faults (mockbroker.registry.faults) delay requests or answer them with an HTTP error; ``down`` stops
listening (clients meet a refused connection) and ``up`` listens again on the same port.  Every answer
that is not a success carries Confluent's body ``{"error_code": ..., "message": ...}``, a bad request
included: nothing reaches a client as a traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from mockbroker.http_site import HttpSite
from mockbroker.registry.errors import RegistryError
from mockbroker.registry.faults import RegistryFault
from mockbroker.registry.remote import StoreUnreachable
from mockbroker.registry.replay import apply_records
from mockbroker.registry.routes import CONTENT_TYPE, REGISTRY, add_routes
from mockbroker.registry.state import RegistryState
from mockbroker.registry.store import TOPIC, TOPIC_CONFIGS, SchemasTopic

log = logging.getLogger("mockbroker.registry")
MAX_BODY_BYTES = 8 << 20
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _error(status: int, code: int, message: str) -> web.Response:
    return web.Response(text=json.dumps({"error_code": code, "message": message}), status=status,
                        content_type=CONTENT_TYPE)


@web.middleware
async def _faults_and_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    registry: SchemaRegistry = request.app[REGISTRY]
    for fault in registry.faults:
        if fault.matches(request.method, request.path):
            fault.hits += 1
            if fault.latency_ms:
                await asyncio.sleep(fault.latency_ms / 1000)
            if fault.status is not None:
                return web.Response(text=json.dumps(fault.body()), status=fault.status, content_type=CONTENT_TYPE)
            break
    try:
        return await handler(request)
    except RegistryError as error:
        return _error(error.status, error.code, error.message)
    except web.HTTPRequestEntityTooLarge:
        return _error(413, 413, f"The request body is larger than {MAX_BODY_BYTES:,} bytes")
    except web.HTTPException as error:
        if error.content_type == CONTENT_TYPE:
            raise
        return _error(error.status, error.status, f"HTTP {error.status} {error.reason}")
    except Exception:
        log.exception("schema registry: %s %s failed", request.method, request.path)
        return _error(500, 50001, "Internal error in mockbroker's schema registry (logged by the broker)")


class SchemaRegistry(HttpSite):
    """The registry of one cluster: its state, its store, its faults and its HTTP server (``down`` / ``up``:
    unreachable, then listening again on the same port)."""

    def __init__(self, create_topic: Callable[[], Any], bootstrap: str, host: str = "127.0.0.1",
                 port: int = 0) -> None:
        super().__init__(web.Application(middlewares=[_faults_and_errors], client_max_size=MAX_BODY_BYTES), host, port)
        self.compatibility: str | None = None  # cp-schema-registry's schema.compatibility.level: the default level
        self.state = RegistryState()
        self.store = SchemasTopic(bootstrap)
        self.faults: list[RegistryFault] = []
        self.lock = asyncio.Lock()
        self._create_topic = create_topic
        self.app[REGISTRY] = self
        add_routes(self.app)

    async def start(self) -> None:
        """Create ``_schemas`` when missing, read it from its beginning (the state rebuilt from what an earlier
        registry wrote: ids, versions, deletes, levels, modes), then listen."""
        self._create_topic()
        try:
            records = await self.store.read()
        except RegistryError as exc:
            raise StoreUnreachable(exc.message) from None
        applied = apply_records(self.state, records)
        if applied:
            log.info("schema registry: %d _schemas records read back: %d schemas, %d subjects, next id %d",
                     applied, len(self.state.schemas), len(self.state.subjects), self.state.next_id)
        await super().start()

    @property
    def reachable(self) -> bool:
        return self.listening

    async def stop(self) -> None:
        await super().stop()
        self.store.close()

    def add_fault(self, spec: dict[str, Any]) -> RegistryFault:
        """Add a fault rule from its fields (mockbroker.registry.faults); FaultSpecError names a bad field."""
        fault = RegistryFault.from_dict(spec, default_name=f"registry-fault-{len(self.faults) + 1}")
        self.faults = [f for f in self.faults if f.name != fault.name] + [fault]
        return fault

    def remove_fault(self, name: str) -> bool:
        before = len(self.faults)
        self.faults = [f for f in self.faults if f.name != name]
        return len(self.faults) < before

    def clear_faults(self) -> None:
        self.faults = []

    def reset(self) -> None:
        """Forget every subject, schema, level, mode and fault (the cluster was reset); listen on."""
        self.state = RegistryState()
        self.default_compatibility(self.compatibility)
        self.faults = []
        self._create_topic()

    def default_compatibility(self, level: str | None) -> None:
        """The level subjects without their own have, and the global one returns to (Confluent's
        ``schema.compatibility.level``; BACKWARD when None)."""
        self.compatibility = level
        if level is not None:
            self.state.levels.default = self.state.levels.value = level


def ensure_topic(state: Any) -> None:
    """Create ``_schemas`` (one partition, compacted) on the cluster state unless it is there."""
    if TOPIC not in state.topics:
        state.create_topic(TOPIC, 1, None, TOPIC_CONFIGS)
