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
import logging
import os
import ssl
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from mockbroker.cluster_args import check_arguments
from mockbroker.cluster_console import ConsoleMixin
from mockbroker.cluster_faults import FaultsMixin
from mockbroker.cluster_oidc import OidcMixin, oidc_options
from mockbroker.cluster_registry import RegistryMixin, registry_port
from mockbroker.cluster_seed import SeedMixin, seed_plan
from mockbroker.cluster_store import StoreMixin, store_config
from mockbroker.faults.latency import check as latency_preset
from mockbroker.faults.latency import rules as latency_rules
from mockbroker.server.broker import BrokerServer
from mockbroker.server.security import Security, jaas_plain_users
from mockbroker.state import broker_actions
from mockbroker.state.acls import AclBinding, acl
from mockbroker.state.cluster import ClusterState, Topic, no_ticker
from mockbroker.state.replica_selector import RACK_CONFIG, parse_racks

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from mockbroker.control import ControlServer

T = TypeVar("T")
log = logging.getLogger("mockbroker.cluster")
TICK_SECONDS = 0.1  # while anything runs on the clock (ClusterState.timers_live)
# otherwise: each wake-up of an idle broker costs ~0.3 ms of CPU on a small VM.  A little over a second,
# so that what is due every 1000 ms (retention checks and cleaning, the mock's defaults) is due at every
# idle tick, not at every other one when the loop's timer fires a millisecond early by the wall clock
IDLE_TICK_SECONDS = 1.02


class MockCluster(FaultsMixin, RegistryMixin, OidcMixin, ConsoleMixin, SeedMixin, StoreMixin):
    def __init__(
        self,
        brokers: int = 1,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        config: Mapping[str, Any] | None = None,
        topics: Mapping[str, int | None] | None = None,
        clock: Any = None,
        control_port: int | None = None,
        control_host: str = "127.0.0.1",
        control_token: str | None = None,
        advertised_host: str | None = None,
        listeners: str | None = None,
        advertised_listeners: str | None = None,
        listener_security_protocol_map: str | None = None,
        sasl_users: Mapping[str, str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        ssl_certfile: str | None = None,
        ssl_keyfile: str | None = None,
        ssl_cafile: str | None = None,
        ssl_client_auth: str | None = None,
        racks: Sequence[str] | Mapping[int, str] | None = None,
        schema_registry: bool | int = False,
        schema_registry_host: str = "127.0.0.1",
        oidc: bool | int | Mapping[str, Any] = False,
        latency: str | None = None,
        seed: Mapping[str, Any] | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        snapshot: str | os.PathLike[str] | None = None,
    ) -> None:
        check_arguments(brokers, port, control_port, topics)  # ValueError before anything listens
        # a latency preset (mockbroker.faults.latency): every API answers as late as Kafka's would
        self._latency = latency if latency is None else latency_preset(latency)
        # a Schema Registry beside the brokers (mockbroker.cluster_registry): True for a free port, or a port
        self._registry_options = (schema_registry_host, registry_port(schema_registry))
        self.schema_registry = None
        # a mock OIDC provider (mockbroker.cluster_oidc): True, a port, or its settings
        self._oidc_options = oidc_options(oidc)
        # each broker's broker.rack (one name per broker, or node id -> name): mockbroker.state.replica_selector
        self._racks = parse_racks(racks, brokers)
        # listeners, SASL users and TLS (mockbroker.server.security): keyword arguments or Kafka's config names
        config = dict(config or {})
        for key, value in (("listeners", listeners), ("advertised.listeners", advertised_listeners),
                           ("listener.security.protocol.map", listener_security_protocol_map)):
            if value is not None:
                config[key] = value
        store_config(config, data_dir)  # data_dir= is mock.data.dir (mockbroker.cluster_store)
        self.state = ClusterState(config, clock)
        self._open_store(snapshot)  # the data directory and/or snapshot read back before anything listens
        try:
            self._add_latency(self.state)
            self.host = host
            self.security = Security.from_options(self.state.config, host, port, ssl_context=ssl_context,
                                                  ssl_certfile=ssl_certfile, ssl_keyfile=ssl_keyfile,
                                                  ssl_cafile=ssl_cafile, ssl_client_auth=ssl_client_auth)
            self._make_oidc()
            self._sasl_users = dict(sasl_users or {})
            self._add_users(self.state)
            # what Metadata tells clients to connect to (a wildcard listen address is no place to connect to)
            self.advertised_host = advertised_host or ("127.0.0.1" if host in ("0.0.0.0", "::", "") else host)
            self._advertised_host_given = advertised_host is not None
            self._base_port = port
            self._initial_topics = dict(topics or {})
            # seed data (mockbroker.seed): every file read and checked now, loaded as the cluster starts
            self._seed = seed_plan(seed, self.state, self._initial_topics, self._registry_options[1] is not None)
            self.brokers: list[BrokerServer] = []
            self._count = brokers
            self._loop: asyncio.AbstractEventLoop | None = None
            self._thread: threading.Thread | None = None
            self._stop_requested: asyncio.Future[None] | None = None
            self._ticker: asyncio.TimerHandle | None = None
            self._control_options = (control_host, control_port, control_token)
            self.control: ControlServer | None = None  # when control_port is given
        except BaseException:  # the data directory's lock is not kept by a cluster never made
            self._close_store()
            raise

    # -- async life cycle -------------------------------------------------------------------
    async def start(self) -> MockCluster:
        """Listen and create the initial topics; on failure, whatever was started is stopped again (no
        socket or task is left behind) and the error is raised."""
        self._loop = asyncio.get_running_loop()
        try:
            return await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> MockCluster:
        assert self._loop is not None
        await self._start_oidc()  # before the brokers: they fetch its JWKS as they start
        for node_id in range(self._count):
            port = self._base_port + node_id if self._base_port else 0
            server = BrokerServer(self.state, node_id, self.host, port, self.security)
            self.brokers.append(server)  # (stopped again if the start fails)
            await server.start(announce=False)
            self._register(self.state, server)
        for name, partitions in self._initial_topics.items():
            if name not in self.state.topics:
                self.state.create_topic(name, partitions)
        self._store_after_call()  # (a data directory: the topics on disk before any client hears of them)
        self.state.wake_ticker = self._wake_ticker
        self._schedule_tick()
        self.control = self._make_control()  # the control API and the console, when control_port is given
        if self.control is not None:
            try:
                await self.control.start()
            except OSError as exc:
                raise OSError(exc.errno, f"control API: {exc.strerror or exc}") from None
        await self._start_registry()
        await self._load_seed()
        for server in self.brokers:  # "listening" once every broker listens, not before a failure
            server.announce()
        return self

    def _tick(self) -> None:
        """Let time act on state: groups, transaction timeouts and markers, producer expiry."""
        self._ticker = None
        try:
            self.state.tick()
            self._store_tick()
        except Exception:  # one failed tick must not stop the ones after it
            log.exception("cluster tick failed")
        self._schedule_tick()

    def _schedule_tick(self) -> None:
        """The next tick: in TICK_SECONDS while anything runs on the clock, else in IDLE_TICK_SECONDS."""
        assert self._loop is not None
        idle = not self.state.timers_live()
        self.state.ticker_idle = idle
        self._ticker = self._loop.call_later(IDLE_TICK_SECONDS if idle else TICK_SECONDS, self._tick)

    def _wake_ticker(self) -> None:
        """A request came in while the ticker waits a whole second: tick within TICK_SECONDS instead."""
        self.state.ticker_idle = False
        if self._ticker is not None and self._loop is not None:
            self._ticker.cancel()
            self._ticker = self._loop.call_later(TICK_SECONDS, self._tick)

    async def stop(self) -> None:
        self.state.ticker_idle = False
        self.state.wake_ticker = no_ticker
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self.control is not None:
            await self.control.stop()
            self.control = None
        await self._stop_registry()
        for server in self.brokers:
            await server.stop()
        self.brokers.clear()
        self.security.close_key_sets()
        await self._stop_oidc()
        self._close_store()

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
                self._stop_requested = loop.create_future()  # exists before anyone can ask to stop
                ready.set_result(None)

            try:
                loop.run_until_complete(boot())
            except BaseException:
                loop.close()
                return
            assert self._stop_requested is not None
            loop.run_until_complete(self._stop_requested)
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="mockbroker", daemon=True)
        self._thread.start()
        ready.result(timeout=30)
        return self

    def stop_background(self) -> None:
        if self._thread is None or self._loop is None:
            return
        requested = self._stop_requested
        if requested is not None:

            def request_stop() -> None:
                if not requested.done():
                    requested.set_result(None)

            self._loop.call_soon_threadsafe(request_stop)
        self._thread.join(timeout=30)
        self._thread = None

    def __enter__(self) -> MockCluster:
        return self.start_background()

    def __exit__(self, *exc: object) -> None:
        self.stop_background()

    # -- helpers ----------------------------------------------------------------------------
    def _register(self, state: ClusterState, server: BrokerServer) -> None:
        """Put a broker in Metadata with the endpoints it advertises on each listener."""
        endpoints = self.security.endpoints(server.node_id, server.ports, self.advertised_host,
                                            self._advertised_host_given)
        host, port = endpoints[self.security.listeners[0].name]
        rack = self._racks.get(server.node_id) or state.config.get(RACK_CONFIG) or None  # else the cluster-wide one
        state.add_broker(server.node_id, host, port, rack, endpoints=endpoints)

    @property
    def bootstrap_servers(self) -> str:
        """The first listener's advertised ``host:port`` of every broker."""
        return self.bootstrap_for(self.security.listeners[0].name)

    def bootstrap_for(self, listener: str) -> str:
        """The advertised ``host:port`` list of a named listener (``bootstrap_for("SASL_PLAINTEXT")``)."""
        if all(s.name != listener.upper() for s in self.security.listeners):
            raise ValueError(f"no listener {listener!r} (listeners: "
                             f"{', '.join(s.name for s in self.security.listeners)})")
        hosts = []
        for b in self.brokers:
            host, port = self.security.endpoints(b.node_id, b.ports, self.advertised_host,
                                                 self._advertised_host_given)[listener.upper()]
            hosts.append(f"{host}:{port}")
        return ",".join(hosts)

    @property
    def control_url(self) -> str | None:
        """``http://host:port`` of the HTTP control API, when it runs."""
        return self.control.url if self.control is not None else None

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the cluster's loop (directly when already on it) and return its result."""
        loop = self._loop
        if loop is None or self._thread is None or threading.current_thread() is self._thread:
            done = fn(*args, **kwargs)
            self._store_after_call()
            return done
        result: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                done = fn(*args, **kwargs)
                self._store_after_call()
                result.set_result(done)
            except BaseException as exc:
                result.set_exception(exc)

        loop.call_soon_threadsafe(run)
        return result.result(timeout=30)

    def create_topic(self, name: str, partitions: int | None = None, replication_factor: int | None = None,
                     config: Mapping[str, Any] | None = None) -> Topic:
        return self.call(self.state.create_topic, name, partitions, replication_factor, config)

    # -- log maintenance (see mockbroker.state.retention / compaction) -----------------------------
    def run_retention(self) -> int:
        """Run a retention pass now (as the tick does every ``log.retention.check.interval.ms``);
        returns how many offsets went."""
        return self.call(self.state.log_maintenance.run_retention)

    def run_log_cleaner(self) -> int:
        """Run a compaction pass now over every compacted partition (as the tick does every
        ``log.cleaner.backoff.ms``, but cleaning whatever is cleanable, whatever the partition's
        ``min.cleanable.dirty.ratio``: never the active segment, which rolls at ``segment.bytes`` or
        ``segment.ms``, mockbroker.state.segments); returns how many records went."""
        return self.call(lambda: self.state.log_maintenance.run_cleaner(force=True).removed_records)

    # -- ACLs (see mockbroker.state.acls; enforced while `authorizer.class.name` is set) ---------
    def add_acl(self, resource_type: int | str, name: str, principal: str = "User:*", operation: int | str = "ALL",
                permission: int | str = "ALLOW", pattern_type: int | str = "LITERAL", host: str = "*") -> AclBinding:
        """Add an ACL as CreateAcls would (same validation): ``add_acl("TOPIC", "orders", "User:alice", "WRITE")``."""
        binding = acl(resource_type, name, principal, operation, permission, pattern_type, host)
        self.call(self.state.acls.add, binding)
        return binding

    def acls(self) -> list[AclBinding]:
        """Every ACL, in creation order."""
        return self.call(self.state.acls.all)

    # -- client quotas (see mockbroker.state.quotas) -------------------------------------------
    def set_quota(self, entity: Mapping[str, str | None], **values: float | None) -> None:
        """Set client quotas as AlterClientQuotas does, e.g. ``set_quota({"user": "alice", "client-id": None},
        producer_byte_rate=102400)``: entity types user / client-id / ip, a None name is the type's default
        entity, a None value removes the key.  Kafka's checks apply (KafkaError INVALID_REQUEST)."""
        self.call(self.state.quotas.alter, dict(entity), list(values.items()))

    def quotas(self) -> list[dict[str, Any]]:
        """Every entity with quotas: ``[{"entity": {"user": "alice"}, "values": {"producer_byte_rate": ...}}]``."""
        found = self.call(self.state.quotas.describe, [])
        return [{"entity": dict(entity), "values": values} for entity, values in found]

    def clear_quotas(self) -> None:
        self.call(self.state.quotas.clear)

    # -- KIP-714 client telemetry (see mockbroker.state.client_metrics) ----------------------------
    def telemetry(self) -> dict[str, dict[str, Any]]:
        """Per client instance id (Kafka's text form): the client (client_id, client_software_name, ...,
        subscription_id, push_interval_ms, requested_metrics, pushes, terminating), the OTLP resource
        attributes and ``metrics``: metric name -> {"type", "unit", "value", "data_points"} of its latest
        push.  A client pushes only when the cluster has a telemetry receiver (broker config
        ``mock.telemetry.receiver=true``; without it ApiVersions does not offer the telemetry APIs, as Kafka
        without a ClientTelemetry metrics reporter) and a CLIENT_METRICS subscription matches it
        (IncrementalAlterConfigs, or :meth:`subscribe_client_metrics`)."""
        return self.call(self.state.config_admin.client_metrics.telemetry)

    def subscribe_client_metrics(self, name: str, metrics: str = "*", interval_ms: int = 300000,
                                 match: str = "") -> None:
        """Create or replace CLIENT_METRICS subscription ``name``, as an AlterConfigs of it would, with
        Kafka's checks (KafkaError): ``metrics`` a comma list of prefixes, ``interval.ms`` 100-3600000,
        ``match`` a comma list of selector=regex."""
        props = {"metrics": metrics, "interval.ms": str(interval_ms)}
        if match:
            props["match"] = match
        self.call(self.state.config_admin.client_metrics.replace, name, props)

    # -- cluster actions ----------------------------------------------------------------------
    def server(self, node_id: int) -> BrokerServer:
        found = next((b for b in self.brokers if b.node_id == node_id), None)
        if found is None:
            raise ValueError(f"no broker {node_id}")
        return found

    async def broker_down_async(self, node_id: int) -> None:
        """The broker stops: it refuses connections, leaves Metadata, its leaderships move."""
        server = self.server(node_id)
        broker_actions.take_down(self.state, node_id)
        await server.stop()

    async def broker_up_async(self, node_id: int) -> None:
        server = self.server(node_id)
        if server.partitioned:
            server.partitioned = False
        else:
            await server.start()
        broker_actions.bring_up(self.state, node_id)

    async def add_broker_async(self) -> int:
        node_id = max(b.node_id for b in self.brokers) + 1
        server = BrokerServer(self.state, node_id, self.host, 0, self.security)
        await server.start()
        self.brokers.append(server)
        self._register(self.state, server)
        return node_id

    async def remove_broker_async(self, node_id: int) -> None:
        await self.broker_down_async(node_id)
        self.state.down_brokers.pop(node_id, None)
        self.brokers.remove(self.server(node_id))

    def partition_broker_async(self, node_id: int) -> None:
        """Cut one broker off: its connections hang (nothing is answered) and, as Kafka fences a broker
        that stops heartbeating, it leaves Metadata and its leaderships move."""
        server = self.server(node_id)
        broker_actions.take_down(self.state, node_id)
        server.partitioned = True

    def broker_down(self, node_id: int) -> None:
        self._run(self.broker_down_async(node_id))

    def broker_up(self, node_id: int) -> None:
        self._run(self.broker_up_async(node_id))

    def add_broker(self) -> int:
        return self._run(self.add_broker_async())

    def remove_broker(self, node_id: int) -> None:
        self._run(self.remove_broker_async(node_id))

    def partition_broker(self, node_id: int) -> None:
        self.call(self.partition_broker_async, node_id)

    def move_leader(self, topic: str, partition: int, node_id: int | None = None) -> int:
        return self.call(broker_actions.move_leader, self.state, topic, partition, node_id)

    def move_coordinator(self, key: str, node_id: int | None = None) -> int:
        return self.call(broker_actions.move_coordinator, self.state, key, node_id)

    def reset(self) -> None:
        """Forget faults, the journal, topics, groups and transactions; bring every broker back."""
        self._run(self.reset_async())

    async def reset_async(self) -> None:
        for node_id in list(self.state.down_brokers):
            await self.broker_up_async(node_id)
        fresh = ClusterState(dict(self.state.config.values), self.state.clock)
        self._add_latency(fresh)
        self._add_users(fresh)
        for server in self.brokers:
            self._register(fresh, server)
            server.use_state(fresh)
        self.state = fresh
        self._store_reset(fresh)
        for name, partitions in self._initial_topics.items():
            if name not in fresh.topics:
                fresh.create_topic(name, partitions)
        self._reset_registry()
        self._reset_oidc()
        await self._load_seed()

    def _add_users(self, state: ClusterState) -> None:
        """The SASL users: ``sasl_users`` (PLAIN and SCRAM), and PLAIN's listed in listeners' JAAS configs."""
        for user, password in self._sasl_users.items():
            state.credentials.add_user(user, password)
        for user, password in jaas_plain_users(state.config).items():
            state.credentials.add_plain_user(user, password)

    def _add_latency(self, state: ClusterState) -> None:
        """The latency preset's delay rules (``latency-1ms``, ...), first among the state's fault rules."""
        if self._latency is not None:
            for spec in latency_rules(self._latency):
                state.faults.add(spec)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the cluster's loop from sync code (or schedule it when on the loop)."""
        loop = self._loop
        if loop is None or self._thread is None:
            raise RuntimeError("use the *_async variant from async code")
        if threading.current_thread() is self._thread:
            raise RuntimeError("use the *_async variant on the cluster's own loop")
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=30)


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
