"""The pytest plugin, exercised by inner pytest sessions (pytester) that drive real clients: fresh clusters
per test, markers, the factory, option overrides, fault and journal helpers, scenarios, asyncio tests,
and pytest-xdist workers."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.clients

ROOT = Path(__file__).resolve().parents[1]

INNER = '''
import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Producer


def produce(bootstrap, topic="auto", n=1):
    p = Producer({"bootstrap.servers": bootstrap, "retry.backoff.ms": 20, "linger.ms": 1})
    for i in range(n):
        p.produce(topic, b"v%d" % i)
    assert p.flush(15) == 0


def test_default_cluster(mock_cluster, kafka_bootstrap):
    assert len(mock_cluster.brokers) == 1 and kafka_bootstrap == mock_cluster.bootstrap_servers
    produce(kafka_bootstrap)
    assert mock_cluster.wait_for_requests("Produce", 1, timeout=5)


def test_nothing_leaks_from_the_previous_test(mock_cluster):
    assert "auto" not in mock_cluster.state.topics
    assert mock_cluster.journal.entries() == [] and list(mock_cluster.faults.listed()) == []


@pytest.mark.mockbroker(brokers=3, topics={"orders": 6}, config={"auto.create.topics.enable": "false"})
def test_marker(mock_cluster):
    assert len(mock_cluster.brokers) == 3
    assert len(mock_cluster.state.topics["orders"].partitions) == 6
    assert mock_cluster.state.config["auto.create.topics.enable"] is False


@pytest.mark.mockbroker(topics={"ledger": 1}, latency="realistic")
def test_marker_latency(mock_cluster, kafka_bootstrap):  # Kafka's latencies: a commit takes its 3 ms
    import time, uuid

    p = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": uuid.uuid4().hex})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce("ledger", b"v")
    assert p.flush(20) == 0
    start = time.perf_counter()
    p.commit_transaction(20)
    assert time.perf_counter() - start >= 0.003
    assert "latency-3ms" in [rule.name for rule in mock_cluster.faults.listed()]


@pytest.mark.mockbroker(control_port=0)
def test_marker_console(mock_cluster):  # the control API and the web console beside the test's cluster
    import urllib.request

    assert mock_cluster.console_url.endswith("/ui/")
    assert b"<h1>Cluster</h1>" in urllib.request.urlopen(mock_cluster.console_url).read()


def test_factory(mock_cluster_factory):
    one, two = mock_cluster_factory(), mock_cluster_factory(brokers=2, topics={"t": 1})
    assert one.bootstrap_servers != two.bootstrap_servers and len(two.brokers) == 2


def test_fault_helper(mock_cluster, kafka_bootstrap):
    with mock_cluster.fault(api="Produce", error="NOT_LEADER_OR_FOLLOWER", times=2) as rule:
        produce(kafka_bootstrap, n=3)
        assert mock_cluster.wait_for_hits(rule, 2, timeout=5)
    assert list(mock_cluster.faults.listed()) == []
    refused = [e for e in mock_cluster.journal.entries(api="Produce") if e.errors]
    assert [e.errors for e in refused] == [["NOT_LEADER_OR_FOLLOWER"]] * 2


async def test_asyncio(mock_cluster, kafka_bootstrap):
    rule = mock_cluster.add_fault(api="Produce", action="delay", delay_ms=200)
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait("async-topic", b"x")
    finally:
        await producer.stop()
    assert await mock_cluster.wait_for_hits_async(rule, 1, timeout=5)
    assert await mock_cluster.wait_for_requests_async("Produce", 1, timeout=5)


def test_scenario_file(mock_scenario):
    with mock_scenario(SCENARIO) as run:
        produce(run.bootstrap_servers, topic="payments", n=20)
        assert run.wait_steps(timeout=10)
    assert run.result.passed, run.result.report()


def test_a_shipped_scenario_by_name(mock_scenario):  # pytester's cwd is a temporary directory
    import time

    with mock_scenario("throttling") as run:
        p = Producer({"bootstrap.servers": run.bootstrap_servers, "linger.ms": 5})
        for i in range(4000):
            p.produce("metrics", b"v%d" % i)
            if i % 100 == 99:
                p.poll(0)
                time.sleep(0.07)
        assert p.flush(30) == 0
        assert run.wait_steps(timeout=10)
    from mockbroker.scenarios import shipped

    assert run.scenario.path == shipped.LIBRARY / "throttling.yaml"  # the repository's scenarios/ folder
    assert run.result.passed, run.result.report()


def test_an_unknown_scenario_name(mock_scenario):
    from mockbroker.scenarios import ScenarioError

    with pytest.raises(ScenarioError, match="throtling: no shipped scenario of that name; nearest shipped: throttling"):
        mock_scenario("throtling")


class TestOverride:
    @pytest.fixture
    def mock_cluster_options(self):
        return {"brokers": 2, "topics": {"preset": 3}}

    def test_options_fixture(self, mock_cluster):
        assert len(mock_cluster.brokers) == 2 and "preset" in mock_cluster.state.topics

    @pytest.mark.mockbroker(brokers=1)
    def test_marker_beats_the_options_fixture(self, mock_cluster):
        assert len(mock_cluster.brokers) == 1 and "preset" in mock_cluster.state.topics
'''

SCENARIO = '''
name: plugin-check
cluster: {topics: [{name: payments, partitions: 1}]}
steps:
  - when: {records: {topic: payments, at_least: 1}}
    fault: {name: watch, api: Produce, action: observe, times: null}
expect:
  - records: {topic: payments, exactly: 20}
'''


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    scenario = pytester.path / "plugin-check.yaml"
    scenario.write_text(SCENARIO)
    pytester.makepyfile(test_inner=f"SCENARIO = {str(scenario)!r}\n" + INNER)
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    return pytester


def test_the_plugin_in_one_process(inner: pytest.Pytester) -> None:
    result = inner.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=13)


def test_the_plugin_under_xdist(inner: pytest.Pytester) -> None:
    result = inner.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=13)


def test_a_bad_marker_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad="import pytest\n\n@pytest.mark.mockbroker(brokrs=3)\n"
                                 "def test_x(mock_cluster):\n    pass\n")
    result = pytester.runpytest_subprocess()
    result.stdout.fnmatch_lines(["*unknown cluster option(s)*brokrs*"])
    assert result.ret != 0


def test_the_marker_help_names_every_option(pytester: pytest.Pytester) -> None:
    """``pytest --markers`` shows the mockbroker marker with every option the plugin takes (issue 50: its help
    left out ``host`` and ``clock``)."""
    from mockbroker.pytest_plugin import _OPTIONS

    result = pytester.runpytest_subprocess("--markers")
    (line,) = [line for line in result.stdout.lines if line.startswith("@pytest.mark.mockbroker(")]
    signature = line.split(":", 1)[0]
    assert [option for option in _OPTIONS if f"{option}=" not in signature] == [], line
