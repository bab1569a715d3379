"""pytest plugin loaded (``-p kafka_python_plugin``) into the subprocess session that runs kafka-python's own
integration tests (``test/integration/`` of its sdist) against mockbroker.

Their ``test/integration/fixtures.py`` starts a real Kafka (``kafka-run-class.sh``, ``kafka-storage.sh``,
keytool for TLS) through ``KafkaFixture``. Their ``conftest.py`` fixtures (kafka_broker_factory, kafka_broker,
kafka_client, kafka_consumer_factory, kafka_producer_factory, kafka_admin_client, topic, ...) stay as they are:
this plugin only replaces how a ``KafkaFixture`` comes to life. ``open()`` starts a :class:`MockCluster` on a
background thread with the listener the fixture asks for (PLAINTEXT, SASL_PLAINTEXT with their user
alice/alice-secret for PLAIN and SCRAM, SSL with a CA made by trustme, written where their tests read it:
``<ssl_dir>/ca-cert``); ``stop()``/``close()`` stop it; ``get_topic_names()`` (their ``kafka-topics.sh --list``)
reads the cluster's topics.

The sdist leaves out ``test/service.py``; the runner writes one that imports :class:`ExternalService` and
:class:`SpawnedService` from here.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import pytest

from mockbroker.cluster import MockCluster


class ExternalService:
    """A broker somebody else runs (their ``KAFKA_URI`` mode): nothing to start, stop or show."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port

    def dump_logs(self) -> None:
        return None

    def stop(self) -> None:
        return None


class SpawnedService:
    """Their wrapper around a Java child process: never used here, since no Kafka or ZooKeeper is spawned."""

    def __init__(self, args: list[str] | None = None, env: dict[str, str] | None = None) -> None:
        self.args = args or []

    def start(self) -> None:
        raise RuntimeError(f"mockbroker peer suite: no Kafka/ZooKeeper process is spawned ({' '.join(self.args)})")

    def wait_for(self, pattern: str, timeout: float = 30) -> bool:
        return False

    def dump_logs(self) -> None:
        return None

    def stop(self) -> None:
        return None


class MockChild:
    """Stands where their ``SpawnedService`` child stands (tests call ``broker.child.dump_logs()``)."""

    def __init__(self, cluster: MockCluster) -> None:
        self.cluster = cluster

    def dump_logs(self) -> None:
        return None

    def stop(self) -> None:
        self.cluster.stop_background()


def _tls_files(ssl_dir: str) -> tuple[str, str]:
    """A CA (``ca-cert``, the name their tests read) and a server certificate for localhost/127.0.0.1."""
    import trustme

    os.makedirs(ssl_dir, exist_ok=True)
    ca = trustme.CA()
    ca.cert_pem.write_to_path(os.path.join(ssl_dir, "ca-cert"))
    server = ca.issue_cert("localhost", "127.0.0.1")
    certfile, keyfile = os.path.join(ssl_dir, "server.pem"), os.path.join(ssl_dir, "server.key")
    server.private_key_pem.write_to_path(keyfile)
    for i, blob in enumerate(server.cert_chain_pems):
        blob.write_to_path(certfile, append=i > 0)
    return certfile, keyfile


def _fixture_init(self: Any) -> None:
    """Their ``Fixture.__init__`` insists on a Kafka distribution directory; there is none to need."""
    self.child = None


def _open(self: Any) -> None:
    if self.running:
        return
    if self.tmp_dir is None:
        import py

        self.tmp_dir = py.path.local(tempfile.mkdtemp(prefix="kafka-python-peer-"))
    self.tmp_dir.ensure(dir=True)
    options: dict[str, Any] = {}
    if self.sasl_enabled:
        options["sasl_users"] = {self.broker_user: self.broker_password}
    if self.ssl_enabled:
        self.ssl_dir = os.path.join(self.tmp_dir.strpath, "ssl")
        options["ssl_certfile"], options["ssl_keyfile"] = _tls_files(self.ssl_dir)
    config = {
        "auto.create.topics.enable": "true" if self.auto_create_topic else "false",
        "num.partitions": self.partitions,
        "default.replication.factor": self.replicas,
        # the group settings their kafka.properties gives the broker ("Allow shorter session timeouts for tests")
        "group.min.session.timeout.ms": 1000,
        "group.initial.rebalance.delay.ms": 0,
        "offsets.topic.num.partitions": 2,
    }
    # the authorizer lines their kafka.properties gets (StandardAuthorizer, allow.everyone.if.no.acl.found=true)
    for line in self._acl_config().splitlines():
        key, _, value = line.partition("=")
        config[key.strip()] = value.strip()
    self._mock_cluster = _start_cluster(self, config, options)
    self.child = MockChild(self._mock_cluster)
    self.running = True


def _start_cluster(fixture: Any, config: dict[str, Any], options: dict[str, Any]) -> MockCluster:
    """As their kafka.properties: listeners and advertised.listeners on the port the fixture picked; when
    that port was taken meanwhile, another (as their start() retries)."""
    from test.integration.fixtures import get_open_port

    for attempt in range(3):
        address = f"{fixture.transport}://127.0.0.1:{fixture.port}"
        cluster = MockCluster(brokers=max(1, fixture.replicas), config=config, listeners=address,
                              advertised_listeners=address, **options)
        try:
            return cluster.start_background()
        except OSError:
            if not fixture.auto_port or attempt == 2:
                raise
            fixture.port = get_open_port()
    raise AssertionError("unreachable")


def _start(self: Any) -> bool:
    if not self.running:
        self.open()
    return True


def _stop(self: Any) -> None:
    if self.external or not self.running:
        return
    self.child.stop()
    self.child = None
    self.running = False


def _close(self: Any) -> None:
    self.stop()
    if self.tmp_dir is not None:
        shutil.rmtree(self.tmp_dir.strpath, ignore_errors=True)
        self.tmp_dir = None


def _get_topic_names(self: Any) -> list[str]:
    """Their ``kafka-topics.sh --list``: the names of the topics the cluster holds."""
    cluster: MockCluster = self._mock_cluster
    return sorted(cluster.call(lambda: list(cluster.state.topics)))


def _dump_logs(self: Any) -> None:
    return None


def _no_cli(self: Any, *args: Any, **kwargs: Any) -> None:
    raise RuntimeError("mockbroker peer suite: Kafka's command-line tools are not available")


def install() -> None:
    """Point their ``KafkaFixture``/``ZookeeperFixture`` at mockbroker (idempotent)."""
    from test.integration import fixtures  # their module, unpacked from the sdist onto sys.path

    fixtures.Fixture.__init__ = _fixture_init
    kafka = fixtures.KafkaFixture
    kafka.open, kafka.start, kafka.stop, kafka.close = _open, _start, _stop, _close
    kafka.get_topic_names, kafka.dump_logs = _get_topic_names, _dump_logs
    kafka._create_topic_via_cli = kafka._format_log_dirs = kafka._add_scram_user = _no_cli
    kafka._create_zk_chroot = _no_cli
    fixtures.ZookeeperFixture.open = _no_cli


def pytest_configure(config: pytest.Config) -> None:
    install()
