"""The part of testcontainers' ``DockerContainer`` that Kafka and Redpanda users call, run in-process.

There is no Docker and no subprocess: a container object owns a :class:`~mockbroker.cluster.MockCluster`
(sync mode, its own loop on a background thread) from ``start()`` to ``stop()``.  The ``with_*`` builders
are all accepted and chainable; they are recorded (``env``, ``ports``, ``volumes``, ...) and have no effect
unless a subclass says so (KafkaContainer reads ``env``).  What needs a real container (``exec``,
``get_wrapped_container``, ...) raises one NotImplementedError line.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Mapping
from os import PathLike
from types import TracebackType
from typing import Any, Self

from mockbroker.cluster import MockCluster

log = logging.getLogger("mockbroker.testcontainers")
HOST = "127.0.0.1"
_said: set[str] = set()
_ids = itertools.count(1)


def say_once(key: str, message: str) -> None:
    """Log ``message`` at DEBUG the first time ``key`` is seen in this process."""
    if key not in _said:
        _said.add(key)
        log.debug(message)


def read_env_file(path: str | PathLike[str]) -> dict[str, str]:
    """KEY=VALUE lines of an env file (``#`` comments, blank lines, ``export KEY=...`` and quoted values)."""
    values: dict[str, str] = {}
    with open(path, encoding="utf-8") as lines:
        for number, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("export "):
                line = line[len("export "):].lstrip()
            key, sep, value = line.partition("=")
            key = key.strip()
            if not sep or not key:
                raise ValueError(f"{path}:{number}: expected KEY=VALUE, got {raw.strip()!r}")
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            elif " #" in value:  # an unquoted value ends where a comment starts
                value = value.split(" #", 1)[0].rstrip()
            values[key] = value
    return values


class Network:
    """testcontainers' ``Network``, accepted and without effect: every in-process broker is on 127.0.0.1."""

    def __init__(self, docker_client_kw: Mapping[str, Any] | None = None,
                 docker_network_kw: Mapping[str, Any] | None = None) -> None:
        self.name = str(uuid.uuid4())
        self.docker_client_kw = dict(docker_client_kw or {})
        self.docker_network_kw = dict(docker_network_kw or {})
        self.created = False
        self.connected: list[tuple[str, list[str] | None]] = []

    @property
    def id(self) -> str | None:
        return f"mockbroker-network-{self.name}" if self.created else None

    def create(self) -> Self:
        self.created = True
        return self

    def remove(self) -> None:
        self.created = False

    def connect(self, container_id: str, network_aliases: list[str] | None = None) -> None:
        self.connected.append((container_id, network_aliases))

    def __enter__(self) -> Self:
        return self.create()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.remove()


class InProcessContainer:
    """DockerContainer's public methods over one MockCluster.  Subclasses give ``_exposed()`` (their
    container ports -> the cluster's real ports) and ``_make_cluster()``."""

    def __init__(
        self,
        image: str,
        docker_client_kw: Mapping[str, Any] | None = None,
        command: str | list[str] | None = None,
        env: Mapping[str, str] | None = None,
        name: str | None = None,
        ports: list[int] | None = None,
        volumes: list[tuple[str, str, str]] | None = None,
        network: Network | None = None,
        network_aliases: list[str] | None = None,
        _wait_strategy: Any = None,
        transferables: list[tuple[Any, ...]] | None = None,
        **kwargs: Any,
    ) -> None:
        self.image = image
        self.env: dict[str, Any] = dict(env or {})
        self.ports: dict[str, int | None] = {}
        self.volumes: dict[str, dict[str, str]] = {}
        self.tmpfs: dict[str, str] = {}
        self.docker_client_kw = dict(docker_client_kw or {})
        self._command = command
        self._name = name
        self._network: Network | None = network
        self._network_aliases: list[str] | None = list(network_aliases) if network_aliases else None
        self._kwargs: dict[str, Any] = kwargs
        self._wait_strategy = _wait_strategy
        self._transferable_specs: list[tuple[Any, ...]] = []
        for port in ports or []:
            self.with_exposed_ports(port)
        for volume in volumes or []:
            self.with_volume_mapping(*volume)
        for spec in transferables or []:
            self.with_copy_into_container(*spec)
        self._cluster: MockCluster | None = None
        self._running = False
        self._id: str | None = None

    # -- what subclasses give -----------------------------------------------------------------
    def _make_cluster(self) -> MockCluster:
        raise NotImplementedError

    def _exposed(self) -> dict[int, int]:
        """Container port -> the port the in-process cluster really listens on (when running)."""
        raise NotImplementedError

    # -- life cycle ---------------------------------------------------------------------------
    def start(self, timeout: float = 30) -> Self:
        """Start the in-process cluster (``timeout`` is accepted; MockCluster starts within its own 30 s)."""
        if self._running:
            return self
        cluster = self._make_cluster()
        cluster.start_background()  # on failure it stops whatever it started and raises
        self._cluster = cluster
        self._running = True
        self._id = f"mockbroker-{next(_ids)}"
        log.debug("%s started in-process: %s", type(self).__name__, cluster.bootstrap_servers)
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        """Stop the cluster (its ports refuse connections after); a second stop does nothing."""
        if self._cluster is not None and self._running:
            self._running = False
            self._cluster.stop_background()

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @property
    def cluster(self) -> MockCluster:
        """The MockCluster (faults, journal, console as usual); still readable after stop()."""
        if self._cluster is None:
            raise RuntimeError(f"{type(self).__name__}.cluster: not started (call start() or use `with`)")
        return self._cluster

    @property
    def status(self) -> str:
        if self._cluster is None:
            return "not_started"
        return "running" if self._running else "exited"

    def reload(self) -> None:
        """Nothing to reload: the status is always current."""

    def _need_running(self, what: str) -> MockCluster:
        if not self._running or self._cluster is None:
            state = "stopped" if self._cluster is not None else "not started"
            raise RuntimeError(f"{type(self).__name__}.{what}: {state} (call start() or use `with`)")
        return self._cluster

    # -- addresses ----------------------------------------------------------------------------
    def get_container_host_ip(self) -> str:
        return HOST

    def get_exposed_port(self, port: int | str) -> int:
        """The real port for one of the container's ports (Kafka's ``port``; Redpanda's 9092 and 8081)."""
        self._need_running("get_exposed_port")
        exposed = self._exposed()
        try:
            number = int(str(port).split("/", 1)[0])
        except ValueError:
            number = -1
        if number not in exposed:
            known = ", ".join(str(p) for p in exposed)
            raise ValueError(f"{type(self).__name__}.get_exposed_port({port!r}): nothing listens there in-process;"
                             f" its ports: {known}")
        return exposed[number]

    def get_container_id(self) -> str:
        if self._id is None:
            raise RuntimeError(f"{type(self).__name__}.get_container_id: not started (call start() or use `with`)")
        return self._id

    def get_logs(self) -> tuple[bytes, bytes]:
        """One line saying the broker runs in-process (stdout) and ``b""`` (stderr)."""
        cluster = self._cluster
        if cluster is None:
            raise RuntimeError(f"{type(self).__name__}.get_logs: not started (call start() or use `with`)")
        line = (f"mockbroker runs in-process (no container, no container logs): MockCluster on "
                f"{cluster.bootstrap_servers if self._running else 'stopped'}; its journal is .cluster\n")
        return line.encode(), b""

    def get_container_info(self) -> None:
        """No ``docker inspect`` in-process (testcontainers answers None for a container it cannot inspect)."""
        return None

    # -- what needs a real container ---------------------------------------------------------
    def _no_container(self, what: str) -> NotImplementedError:
        return NotImplementedError(f"{type(self).__name__}.{what}: mockbroker runs in-process, there is no "
                                   f"container; .cluster is the MockCluster")

    def get_wrapped_container(self) -> Any:
        raise self._no_container("get_wrapped_container")

    def get_docker_client(self) -> Any:
        raise self._no_container("get_docker_client")

    def exec(self, command: Any) -> Any:
        raise self._no_container("exec")

    def wait(self) -> int:
        raise self._no_container("wait")

    def copy_from_container(self, source_in_container: str, destination_on_host: Any) -> None:
        raise self._no_container("copy_from_container")

    def copy_into_container(self, transferable: Any, destination_in_container: str, mode: int = 0o644) -> None:
        raise self._no_container("copy_into_container")

    def create_file(self, content: bytes, path: str) -> None:
        raise self._no_container("create_file")

    # -- builders: recorded, chainable --------------------------------------------------------
    def with_env(self, key: str, value: Any) -> Self:
        self.env[key] = value
        return self

    def with_envs(self, **variables: Any) -> Self:
        self.env.update(variables)
        return self

    def with_env_file(self, env_file: str | PathLike[str]) -> Self:
        return self.with_envs(**read_env_file(env_file))

    def with_bind_ports(self, container: int | str, host: int | str | None = None) -> Self:
        self.ports[str(container)] = int(str(host).split("/", 1)[0]) if host is not None else None
        return self

    def with_exposed_ports(self, *ports: int | str) -> Self:
        for port in ports:
            self.ports[str(port)] = None
        return self

    def with_network(self, network: Network) -> Self:
        self._network = network
        return self

    def with_network_aliases(self, *aliases: str) -> Self:
        self._network_aliases = list(aliases)
        return self

    def with_kwargs(self, **kwargs: Any) -> Self:
        self._kwargs = kwargs
        return self

    def with_command(self, command: str | list[str]) -> Self:
        self._command = command
        return self

    def with_name(self, name: str) -> Self:
        self._name = name
        return self

    def with_volume_mapping(self, host: str | PathLike[str], container: str, mode: str = "ro") -> Self:
        self.volumes[str(host)] = {"bind": container, "mode": mode}
        return self

    def with_tmpfs_mount(self, container_path: str, size: str | None = None) -> Self:
        self.tmpfs[container_path] = size or ""
        return self

    def with_copy_into_container(self, transferable: Any, destination_in_container: str,
                                 mode: int = 0o644) -> Self:
        self._transferable_specs.append((transferable, destination_in_container, mode))
        return self

    def waiting_for(self, strategy: Any) -> Self:
        self._wait_strategy = strategy
        return self

    def maybe_emulate_amd64(self) -> Self:
        return self
