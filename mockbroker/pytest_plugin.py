"""pytest plugin (entry point ``pytest11``): a fresh mock Kafka cluster per test.

    def test_orders(mock_cluster, kafka_bootstrap):
        producer = Producer({"bootstrap.servers": kafka_bootstrap})
        with mock_cluster.fault(api="Produce", error="NOT_LEADER_OR_FOLLOWER") as rule: ...

    @pytest.mark.mockbroker(brokers=3, topics={"orders": 6}, config={"auto.create.topics.enable": "false"})
    def test_three_brokers(mock_cluster): ...

    @pytest.mark.mockbroker(latency="realistic")   # Kafka's latencies: Produce, EndTxn 3 ms, the rest 1 ms
    def test_timing(mock_cluster): ...

    def test_two_clusters(mock_cluster_factory):
        a, b = mock_cluster_factory(), mock_cluster_factory(brokers=2)

    def test_avro(mock_cluster, schema_registry_url):    # a Schema Registry beside mock_cluster
        registry = SchemaRegistryClient({"url": schema_registry_url})

    def test_scenario(mock_scenario):
        with mock_scenario("leader-failover-during-produce") as run:  # a shipped name, or a file
            produce(run.bootstrap_servers)
        assert run.result.passed, run.result.report()

    def test_app(mock_kafka):          # every Kafka client the test creates goes to mock_kafka (a MockCluster),
        app.run()                      # whatever bootstrap servers it names (mockbroker.redirect)

    pytest --mockbroker-report=reports/     # an HTML report of each test's clusters (mockbroker.pytest_report)

    @pytest.mark.mockbroker(report="on-failure")    # this test's report only when it fails
    def test_kept(mock_cluster): ...

Clusters run their own event loop on a background thread, so the same fixtures serve sync tests and
asyncio tests (the client's loop and the broker's never block each other); every broker listens on a
free port, so pytest-xdist workers never collide.  A test's clusters are stopped when it ends: nothing
(topics, groups, faults, journal) leaks into the next test.  Options come from, in order: the
``mock_cluster_options`` fixture (override it in a conftest.py), then the ``mockbroker`` marker.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from mockbroker import pytest_report
from mockbroker.cluster import MockCluster
from mockbroker.nearest import hint

if TYPE_CHECKING:
    from mockbroker.scenarios.runner import ScenarioRun

# latency: a preset (mockbroker.faults.latency); oidc: MockCluster(oidc=...), a mock OIDC provider; control_port:
# the control API and the web console (mock_cluster.console_url); report: when the test's HTML reports are written
# (mockbroker.pytest_report; not a MockCluster option); seed: MockCluster(seed=...), records from JSON Lines files;
# snapshot: MockCluster(snapshot=...), the cluster starts from a snapshot (its own copy in memory)
_OPTIONS = ("brokers", "topics", "config", "host", "clock", "latency", "oidc", "control_port", "report", "seed",
            "snapshot")


def pytest_addoption(parser: pytest.Parser) -> None:
    pytest_report.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "mockbroker(brokers=1, topics=None, config=None, host='127.0.0.1', clock=None, "
        "latency=None, oidc=False, control_port=None, report=None, seed=None, snapshot=None): options for the "
        "mock_cluster "
        "fixture (clock: a mockbroker.state.clock.ManualClock, say; latency='realistic': every API answers as late as "
        "Kafka's would; oidc: a mock OIDC provider; control_port=0: the control API and the web console, "
        "mock_cluster.console_url; report='on-failure' or 'always': write the test's HTML "
        "report to --mockbroker-report's folder, else to mockbroker-reports/ under the rootdir; seed: topic -> "
        "JSON Lines file or folder, docs/seed-and-dump.md; snapshot: a folder MockCluster.snapshot wrote, each test's "
        "cluster starting from its own copy, docs/data-dir-and-snapshots.md)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield  # kept on the item: a cluster's report, written at teardown, names it
    pytest_report.remember(item, report)
    return report


def pytest_terminal_summary(terminalreporter: Any) -> None:
    paths = pytest_report.written(r for reports in terminalreporter.stats.values() for r in reports)
    if paths:
        folders = sorted({str(Path(p).parent) for p in paths})
        terminalreporter.write_line(f"mockbroker: {len(paths)} HTML report(s) in {', '.join(folders)}")


def _checked(options: dict[str, Any]) -> dict[str, Any]:
    unknown = set(options) - set(_OPTIONS)
    if unknown:
        near = "".join(hint(str(name), _OPTIONS) for name in sorted(unknown, key=str))
        raise pytest.UsageError(f"mockbroker: unknown cluster option(s) {sorted(unknown)}{near}; use {list(_OPTIONS)}")
    pytest_report.checked_when(options.get("report"))
    return {key: value for key, value in options.items() if key != "report"}  # (report is the plugin's own)


@pytest.fixture
def mock_cluster_options() -> dict[str, Any]:
    """Default options for ``mock_cluster``; override this fixture to change them for a module or package."""
    return {}


@pytest.fixture
def mock_cluster_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., MockCluster]]:
    """Start clusters on demand (``factory(brokers=3, topics={"t": 2})``); all stop when the test ends, each
    after its report is written (when asked for: mockbroker.pytest_report)."""
    started: list[tuple[MockCluster, int, dict[str, Any]]] = []

    def make(**options: Any) -> MockCluster:
        cluster = MockCluster(**_checked(options))
        cluster.start_background()
        chosen = {"report": options["report"]} if "report" in options else {}
        started.append((cluster, pytest_report.next_index(request.node), chosen))
        return cluster

    yield make
    for cluster, index, chosen in reversed(started):
        try:
            pytest_report.write(request, cluster, index, chosen)
        finally:
            cluster.stop_background()


@pytest.fixture
def mock_cluster(request: pytest.FixtureRequest, mock_cluster_factory: Callable[..., MockCluster],
                 mock_cluster_options: dict[str, Any]) -> MockCluster:
    """A fresh cluster for this test, configured by ``mock_cluster_options`` and the ``mockbroker`` marker."""
    options = dict(mock_cluster_options)
    for marker in reversed(list(request.node.iter_markers("mockbroker"))):  # the closest marker wins
        if marker.args:
            raise pytest.UsageError("mockbroker marker: use keyword arguments (brokers=, topics=, config=)")
        options.update(marker.kwargs)
    return mock_cluster_factory(**options)


@pytest.fixture
def kafka_bootstrap(mock_cluster: MockCluster) -> str:
    """``bootstrap.servers`` of this test's ``mock_cluster``."""
    return mock_cluster.bootstrap_servers


@pytest.fixture
def schema_registry_url(mock_cluster: MockCluster) -> str:
    """``schema.registry.url`` of a Confluent-compatible Schema Registry beside ``mock_cluster`` (the same
    cluster a test gets from ``mock_cluster`` / ``kafka_bootstrap``); needs mockbroker[schema-registry]."""
    return mock_cluster.enable_schema_registry()


@pytest.fixture
def mock_kafka(mock_cluster: MockCluster) -> Iterator[MockCluster]:
    """``mock_cluster``, with every Kafka client (and Schema Registry client) the test constructs redirected
    to it whatever servers it names, as ``with mockbroker.mock_kafka(cluster=mock_cluster):`` does (a registry
    is started beside it when one can run here); the redirection ends before the cluster stops."""
    from mockbroker.redirect import mock_kafka as redirect

    with redirect(cluster=mock_cluster) as cluster:
        yield cluster


@pytest.fixture
def mock_scenario(request: pytest.FixtureRequest) -> Iterator[Callable[..., ScenarioRun]]:
    """Run a scenario around the test's own client code: ``with mock_scenario(name_or_path) as run:``
    (a shipped scenario's name, see ``mockbroker scenario list``, or a file; an existing file wins) starts
    the scenario's cluster and timeline; leaving the block waits for the timeline, checks the
    expectations and sets ``run.result``.  Every run is stopped when the test ends."""
    from mockbroker.scenarios.runner import ScenarioRun

    runs: list[tuple[ScenarioRun, int]] = []

    def make(name_or_path: str | Path, **options: Any) -> ScenarioRun:
        run = ScenarioRun.from_file(name_or_path, **options)
        runs.append((run, pytest_report.next_index(request.node)))
        return run

    yield make
    for run, index in runs:
        try:
            pytest_report.write(request, run.cluster, index)  # (the with block may have stopped it: as it was left)
        finally:
            run.close()
