"""KafkaContainer and RedpandaContainer: testcontainers' Kafka module's classes, each a MockCluster in-process.

The image and the container ports are taken and ignored (said once per process at DEBUG): the broker
listens on 127.0.0.1 at a free port, which ``get_bootstrap_server()`` / ``get_exposed_port(port)`` give.
KafkaContainer's environment (its own defaults, ``with_env``, ``with_envs``, ``with_env_file``) is read as
cp-kafka reads it, by :func:`mockbroker.kafka_env.read_env`: ``KAFKA_NUM_PARTITIONS=3`` is the broker config
``num.partitions=3``; listener variables are ignored in-process; an unknown ``KAFKA_`` variable is refused
at ``start()`` with one line naming the nearest.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Self
from urllib.parse import urlsplit

from mockbroker.cluster import MockCluster
from mockbroker.errors import KafkaError
from mockbroker.kafka_env import KAFKA_PREFIX, KafkaEnvError, read_env, variable_name
from mockbroker.testcontainers.container import HOST, InProcessContainer, log, say_once

LIMIT_BROKER_ENV_VAR = "TC_KAFKA_LIMIT_BROKER_TO_FIRST_HOST"


@dataclass
class KafkaConfig:
    """testcontainers' ``kafka_config``: ``limit_broker_to_first_host`` (from TC_KAFKA_LIMIT_BROKER_TO_FIRST_HOST)
    shapes the advertised listener of a container on a Docker network; in-process it has no effect."""

    limit_broker_to_first_host: bool = field(
        default_factory=lambda: os.environ.get(LIMIT_BROKER_ENV_VAR) == "true")


kafka_config = KafkaConfig()


def _port_of(address: str) -> int:
    """The port of ``host:port`` or of a URL."""
    if "//" in address:
        port = urlsplit(address).port
        assert port is not None
        return port
    return int(address.rsplit(":", 1)[1])


class KafkaContainer(InProcessContainer):
    """``with KafkaContainer() as kafka: kafka.get_bootstrap_server()``, with a MockCluster for cp-kafka."""

    MIN_KRAFT_TAG = "7.0.0"

    def __init__(
        self,
        image: str = "confluentinc/cp-kafka:7.6.0",
        port: int = 9093,
        wait_strategy_check_string: str = r".*\[KafkaServer id=\d+\] started.*",
        listener_name: str = "PLAINTEXT",
        security_protocol: str = "PLAINTEXT",
        **kwargs: Any,
    ) -> None:
        if kwargs.pop("port_to_expose", None):
            raise ValueError("KafkaContainer: use `port` instead of `port_to_expose`")
        super().__init__(image, **kwargs)
        self.port = port
        self.listener_name = listener_name
        self.security_protocol = security_protocol
        self.kraft_enabled = False
        self.wait_for: re.Pattern[str] = re.compile(wait_strategy_check_string)
        self.boot_command = ""
        self.cluster_id = "MkU3OEVBNTcwNTJENDM2Qk"
        self.listeners = f"{listener_name}://0.0.0.0:{port},BROKER://0.0.0.0:9092"
        self.security_protocol_map = f"BROKER:PLAINTEXT,{listener_name}:{security_protocol}"
        self.with_exposed_ports(port)
        # the environment cp-kafka is given by testcontainers (listeners are ignored in-process)
        self.with_envs(
            KAFKA_LISTENERS=self.listeners,
            KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=self.security_protocol_map,
            KAFKA_INTER_BROKER_LISTENER_NAME="BROKER",
            KAFKA_BROKER_ID="1",
            KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR="1",
            KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS="1",
            KAFKA_LOG_FLUSH_INTERVAL_MESSAGES="10000000",
            KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS="0",
        )

    def with_kraft(self) -> Self:
        """KRaft mode: the env says so (CLUSTER_ID, KAFKA_PROCESS_ROLES, ...); the mock is the same either way."""
        self.kraft_enabled = True
        return self

    def with_cluster_id(self, cluster_id: str) -> Self:
        """The cluster id Metadata and DescribeCluster answer (the broker config ``cluster.id``)."""
        self.cluster_id = cluster_id
        return self

    def configure(self) -> None:
        """Complete the environment as testcontainers does before starting (the KRaft variables)."""
        if not self.kraft_enabled:
            return
        self.wait_for = re.compile(r".*Kafka Server started.*")
        self.with_envs(
            CLUSTER_ID=self.cluster_id,
            KAFKA_NODE_ID="1",
            KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=f"{self.security_protocol_map},CONTROLLER:PLAINTEXT",
            KAFKA_LISTENERS=f"{self.listeners},CONTROLLER://0.0.0.0:9094",
            KAFKA_PROCESS_ROLES="broker,controller",
            KAFKA_CONTROLLER_QUORUM_VOTERS=f"1@{self._network_alias()}:9094",
            KAFKA_CONTROLLER_LISTENER_NAMES="CONTROLLER",
        )

    def _network_alias(self) -> str:
        if self._network is None:
            return "localhost"
        return (self._network_aliases or [self._network.name])[0]

    def tc_start(self) -> None:
        """testcontainers writes the broker's start script here; in-process there is nothing to write."""

    def _make_cluster(self) -> MockCluster:
        say_once(type(self).__name__,
                 f"KafkaContainer: image {self.image!r} and port {self.port} are taken and ignored: mockbroker "
                 f"runs in-process on {HOST} at a free port (get_bootstrap_server() gives it)")
        self.configure()
        env = {str(key): str(value) for key, value in self.env.items()}
        try:
            found = read_env(env)
        except KafkaEnvError as exc:  # a ValueError, one line: an unknown KAFKA_ variable or a refused value
            raise KafkaEnvError(f"KafkaContainer: {exc}") from None
        for variable, why in found.not_needed:
            log.debug("KafkaContainer: %s not needed in-process: %s", variable, why)
        configs = dict(found.configs)
        configs.setdefault("cluster.id", self.cluster_id)
        try:
            return MockCluster(config=configs)
        except KafkaError as exc:
            raise ValueError(self._config_error(exc, configs)) from None

    def _config_error(self, exc: KafkaError, configs: dict[str, str]) -> str:
        """One line naming the variable whose value the broker refused, when the message names its config."""
        text = exc.message or str(exc)
        for name in configs:
            if re.search(rf"(?<![\w.]){re.escape(name)}(?![\w.])", text):
                variable = variable_name(name, KAFKA_PREFIX)
                if variable not in self.env:
                    variable = "CLUSTER_ID" if name == "cluster.id" else name
                return f"KafkaContainer: {variable}: {text}"
        return f"KafkaContainer: {text}"

    def _exposed(self) -> dict[int, int]:
        return {int(self.port): _port_of(self.cluster.bootstrap_servers)}

    def get_bootstrap_server(self) -> str:
        """``127.0.0.1:PORT``, the in-process broker."""
        self._need_running("get_bootstrap_server")
        return f"{HOST}:{self.get_exposed_port(self.port)}"


class RedpandaContainer(InProcessContainer):
    """``with RedpandaContainer() as redpanda:``: a MockCluster with its Schema Registry."""

    def __init__(self, image: str = "docker.redpanda.com/redpandadata/redpanda:v23.1.13", **kwargs: Any) -> None:
        kwargs["entrypoint"] = "sh"
        super().__init__(image, **kwargs)
        self.redpanda_port = 9092
        self.schema_registry_port = 8081
        self.with_exposed_ports(self.redpanda_port, self.schema_registry_port)
        self.wait_for: re.Pattern[str] = re.compile(r".*Started Kafka API server.*")

    def start(self, timeout: float = 10) -> Self:
        return super().start(timeout)

    def tc_start(self) -> None:
        """testcontainers writes rpk's start script here; in-process there is nothing to write."""

    def _make_cluster(self) -> MockCluster:
        say_once(type(self).__name__,
                 f"RedpandaContainer: image {self.image!r} and ports 9092/8081 are taken and ignored: mockbroker "
                 f"runs in-process on {HOST} at free ports (get_bootstrap_server(), get_schema_registry_address())")
        return MockCluster(schema_registry=True)

    def _exposed(self) -> dict[int, int]:
        cluster = self.cluster
        registry = cluster.schema_registry_url
        assert registry is not None
        return {self.redpanda_port: _port_of(cluster.bootstrap_servers), self.schema_registry_port: _port_of(registry)}

    def get_bootstrap_server(self) -> str:
        """``127.0.0.1:PORT``, the in-process broker."""
        self._need_running("get_bootstrap_server")
        return f"{HOST}:{self.get_exposed_port(self.redpanda_port)}"

    def get_schema_registry_address(self) -> str:
        """``http://127.0.0.1:PORT``, the in-process Schema Registry."""
        self._need_running("get_schema_registry_address")
        return f"http://{HOST}:{self.get_exposed_port(self.schema_registry_port)}"
