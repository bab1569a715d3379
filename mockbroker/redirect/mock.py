"""MockKafka, the object behind ``mockbroker.mock_kafka``: a decorator (sync or async) and a context manager
that starts a MockCluster and points every Kafka client constructed meanwhile at it.

    @mock_kafka                                  # a fresh MockCluster() per call
    @mock_kafka(topics={"orders": 3})            # MockCluster's keyword arguments
    with mock_kafka() as cluster: ...            # the MockCluster
    with mock_kafka(cluster=running): ...        # redirect to a running cluster (not stopped at the end)
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import importlib.util
import inspect
import logging
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from mockbroker.cluster import MockCluster
from mockbroker.cluster_registry import registry_port
from mockbroker.nearest import hint
from mockbroker.redirect import active, patches

F = TypeVar("F")
log = logging.getLogger("mockbroker.mock_kafka")
CLUSTER_KEYWORDS = tuple(name for name in inspect.signature(MockCluster.__init__).parameters if name != "self")
KEYWORDS = (*CLUSTER_KEYWORDS, "cluster")


@dataclass(frozen=True, eq=False)
class Activation:
    """One entry of a MockKafka: its target on the stack, and whether it started (and so stops) the cluster."""

    target: active.Target
    owned: bool


# the activations of each MockKafka entered in this context (a thread, an asyncio task): MockKafka.cluster
_entered: contextvars.ContextVar[tuple[tuple[MockKafka, Activation], ...]] = contextvars.ContextVar(
    "mock_kafka_entered", default=())


def registry_unavailable() -> str | None:
    """Why no Schema Registry can start beside the cluster here (one line), or None when one can."""
    if importlib.util.find_spec("confluent_kafka") is None:
        return "confluent-kafka is not installed"
    try:
        import confluent_kafka.schema_registry  # noqa: F401
    except ImportError as exc:
        return f"confluent_kafka.schema_registry cannot be imported ({exc})"
    from mockbroker.registry import missing_extra

    return missing_extra()


def plaintext_bootstrap(cluster: MockCluster) -> str:
    """The bootstrap servers of the cluster's first PLAINTEXT listener, where the redirected clients (their
    security settings dropped) can connect; ValueError when it has none."""
    listeners = cluster.security.listeners
    plain = next((spec for spec in listeners if spec.protocol == "PLAINTEXT"), None)
    if plain is None:
        raise ValueError(f"mock_kafka: the cluster has no PLAINTEXT listener (listeners: "
                         f"{', '.join(f'{s.name}={s.protocol}' for s in listeners)}), and the redirected clients "
                         f"connect in PLAINTEXT (their security settings are dropped)")
    return cluster.bootstrap_for(plain.name)


def check_options(options: dict[str, Any]) -> None:
    """TypeError / ValueError (one line, naming the nearest keyword) unless the options are usable."""
    for name in options:
        if name not in KEYWORDS:
            near = hint(name, KEYWORDS) or f" (keywords: {', '.join(KEYWORDS)})"
            raise TypeError(f"mock_kafka() got an unexpected keyword argument {name!r}{near}")
    if "cluster" in options:
        cluster = options["cluster"]
        if not isinstance(cluster, MockCluster):
            raise TypeError(f"mock_kafka(cluster=...) takes a running MockCluster, not {type(cluster).__name__}")
        others = sorted(set(options) - {"cluster", "schema_registry"})
        if others:
            raise TypeError(f"mock_kafka(cluster=...) redirects to a running cluster as it is: pass "
                            f"{', '.join(others)} to its MockCluster instead")
    if options.get("schema_registry") is not None:
        registry_port(options["schema_registry"])  # ValueError unless True, False or a port


class MockKafka:
    """Redirects every Kafka client constructed while it is active to a mock cluster (see docs/mock-kafka.md).

    ``redirected``: the dotted names of the client classes an activation redirects (the installed ones;
    Schema Registry clients only when a registry runs).  ``cluster``: the MockCluster of this object's
    innermost activation in the current thread / task."""

    def __init__(self, **options: Any) -> None:
        check_options(options)
        self.options = options

    def __repr__(self) -> str:
        return f"mock_kafka({', '.join(f'{k}={v!r}' for k, v in self.options.items())})"

    # -- the three forms --------------------------------------------------------------------
    @overload
    def __call__(self, fn: F, /) -> F: ...

    @overload
    def __call__(self, fn: None = None, /, **options: Any) -> MockKafka: ...

    def __call__(self, fn: Any = None, /, **options: Any) -> Any:
        """``mock_kafka(**options)``: a MockKafka with these options; ``mock_kafka(fn)``: ``fn`` decorated."""
        if fn is None:
            return MockKafka(**{**self.options, **options})
        if options or not callable(fn):
            raise TypeError(f"mock_kafka takes MockCluster's keyword arguments only (brokers=, topics=, ...), "
                            f"not {fn!r}")
        if inspect.isclass(fn):
            raise TypeError(f"mock_kafka decorates functions (sync or async), not the class {fn.__name__}")
        return self._decorate(fn)

    def _decorate(self, fn: Any) -> Any:
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                async with self:
                    return await fn(*args, **kwargs)

            return run_async

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return run

    def __enter__(self) -> MockCluster:
        activation = self._start()
        _entered.set((*_entered.get(), (self, activation)))
        return activation.target.cluster

    def __exit__(self, *exc: object) -> None:
        self._stop(self._leave())

    async def __aenter__(self) -> MockCluster:
        activation = await asyncio.to_thread(self._start)  # the cluster starts without blocking the loop
        _entered.set((*_entered.get(), (self, activation)))
        return activation.target.cluster

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self._stop, self._leave())

    # -- what is active -------------------------------------------------------------------
    @property
    def cluster(self) -> MockCluster:
        """The MockCluster of this object's innermost activation here (RuntimeError when not active)."""
        for owner, activation in reversed(_entered.get()):
            if owner is self:
                return activation.target.cluster
        raise RuntimeError("this mock_kafka is not active here: use it as a decorator or `with mock_kafka() as "
                           "cluster:` (mockbroker.redirect.active_cluster() is the cluster new clients go to)")

    @property
    def redirected(self) -> list[str]:
        """The dotted names of the client classes an activation of this object redirects."""
        return patches.redirected(self._registry_choice() is not False)

    def _registry_choice(self) -> bool | int:
        """schema_registry as asked, or (not asked) whether a registry can run here: True, False or a port."""
        cluster = self.options.get("cluster")
        if cluster is not None and cluster.schema_registry_url is not None:
            return True
        choice = self.options.get("schema_registry")
        if choice is None:
            return registry_unavailable() is None
        return bool(choice) if isinstance(choice, bool) else int(choice)

    # -- one activation -------------------------------------------------------------------
    def _start(self) -> Activation:
        options = dict(self.options)
        cluster: MockCluster | None = options.pop("cluster", None)
        options.pop("schema_registry", None)
        choice = self._registry_choice()
        owned = cluster is None
        if cluster is None:
            cluster = MockCluster(schema_registry=choice, **options).start_background()
        elif not cluster.brokers:
            raise ValueError("mock_kafka(cluster=...) needs a started MockCluster (with MockCluster() as cluster:)")
        try:
            if choice is not False and cluster.schema_registry_url is None:
                cluster.enable_schema_registry(0 if choice is True else int(choice))
            why = "" if choice is not False else ("schema_registry=False" if "schema_registry" in self.options
                                                  else registry_unavailable() or "")
            target = active.Target(cluster, plaintext_bootstrap(cluster), cluster.schema_registry_url, why)
            active.push(target, patches.install)
        except BaseException:
            if owned:
                cluster.stop_background()
            raise
        log.info("%s", self._announcement(target))
        return Activation(target, owned)

    def _announcement(self, target: active.Target) -> str:
        names = patches.redirected(target.registry_url is not None)
        clients = [n for n in names if not n.startswith("confluent_kafka.schema_registry.")]
        registries = [n for n in names if n.startswith("confluent_kafka.schema_registry.")]
        line = (f"mock_kafka: redirecting {', '.join(clients)} to {target.bootstrap_servers}" if clients else
                f"mock_kafka: no Kafka client library installed to redirect (cluster at {target.bootstrap_servers})")
        if registries:
            return f"{line}; schema registry clients {', '.join(registries)} to {target.registry_url}"
        return f"{line}; schema registry clients not redirected ({target.no_registry_because or 'no registry'})"

    def _leave(self) -> Activation:
        entered = list(_entered.get())
        index = max(i for i, (owner, _) in enumerate(entered) if owner is self)
        activation = entered.pop(index)[1]
        _entered.set(tuple(entered))
        return activation

    def _stop(self, activation: Activation) -> None:
        try:
            active.pop(activation.target, patches.uninstall)
        finally:
            if activation.owned:
                activation.target.cluster.stop_background()


mock_kafka = MockKafka()


def active_cluster() -> MockCluster:
    """The cluster new clients go to now (the innermost active mock_kafka, process-wide)."""
    target = active.top()
    if target is None:
        raise RuntimeError("no mock_kafka is active")
    return target.cluster
