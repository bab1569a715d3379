"""The ``realistic`` latency preset (mockbroker/faults/latency.py): every API answers as late as on a Kafka
cluster in one data centre, measured with confluent-kafka from the Python API, the command line and a
scenario file (the pytest marker's: tests/test_pytest_plugin.py; the shipped scenario realistic-latency runs
in tests/scenarios/test_runner.py).  Only lower bounds are asserted: a loaded machine makes anything slower."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from mockbroker.cluster import MockCluster
from mockbroker.faults import latency
from mockbroker.scenarios import ScenarioRun, load_text

pytestmark = pytest.mark.clients


def commit_seconds(bootstrap: str, transactions: int = 4) -> list[float]:
    """How long each of a few commit_transaction() calls takes (EndTxn: the records are flushed before)."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{uuid.uuid4().hex[:8]}",
                         "linger.ms": 0})
    producer.init_transactions(20)
    took = []
    for i in range(transactions):
        producer.begin_transaction()
        producer.produce("ledger", b"v%d" % i)
        assert producer.flush(20) == 0
        start = time.perf_counter()
        producer.commit_transaction(20)
        took.append(time.perf_counter() - start)
    return took


def flush_seconds(bootstrap: str) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    assert producer.flush(20) == 0 and producer.list_topics(timeout=10)  # connected: Metadata is not measured
    start = time.perf_counter()
    producer.produce("ledger", b"x")
    assert producer.flush(20) == 0
    return time.perf_counter() - start


def test_every_api_has_a_latency_and_the_basis_is_kafkas() -> None:
    table = latency.latency_ms("realistic")
    assert table["EndTxn"] == table["Produce"] == table["OffsetCommit"] == 3
    assert table["CreateTopics"] == table["IncrementalAlterConfigs"] == 10
    assert table["Metadata"] == table["ApiVersions"] == table["Fetch"] == table["Heartbeat"] == 1
    from mockbroker.protocol.api import APIS

    assert set(table) == {entry[0] for entry in APIS.values()}  # every API the broker speaks


def test_a_transaction_commit_takes_at_least_the_replicated_write() -> None:
    """The test that motivated the preset assumed a commit takes more than a millisecond, as on Kafka."""
    with MockCluster(topics={"ledger": 3}, latency="realistic") as cluster:
        took = commit_seconds(cluster.bootstrap_servers)
        assert min(took) >= latency.REPLICATED_WRITE_MS / 1000, took
        names = sorted(rule.name for rule in cluster.faults.listed())
        assert names == ["latency-10ms", "latency-1ms", "latency-3ms"]
        cluster.reset()  # a reset cluster keeps its latencies
        assert sorted(rule.name for rule in cluster.faults.listed()) == names
        assert flush_seconds(cluster.bootstrap_servers) >= latency.REPLICATED_WRITE_MS / 1000


def test_delays_add_up() -> None:
    """Two delay rules on one request: the answer waits for both (a preset's latency and a test's fault)."""
    with MockCluster(topics={"ledger": 1}) as cluster:
        cluster.add_fault(api="Produce", action="delay", delay_ms=50, times=None)
        cluster.add_fault(api="Produce", action="delay", delay_ms=500, times=None)
        assert flush_seconds(cluster.bootstrap_servers) >= 0.55


def test_serve_latency_flag() -> None:
    """``mockbroker serve --latency realistic``: a topic creation waits for the (modelled) controller quorum."""
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--latency", "realistic"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("bootstrap.servers="), line + proc.communicate(timeout=10)[1]
        admin = AdminClient({"bootstrap.servers": line.split("=", 1)[1]})
        admin.list_topics(timeout=10)
        start = time.perf_counter()
        admin.create_topics([NewTopic("made", 1)])["made"].result(10)
        assert time.perf_counter() - start >= latency.METADATA_CHANGE_MS / 1000
    finally:
        proc.terminate()
        proc.communicate(timeout=15)


def test_a_scenario_cluster_with_latency() -> None:
    scenario = load_text("name: slow\ncluster: {latency: realistic, topics: [{name: ledger, partitions: 1}]}\n"
                         "steps: []\n")
    assert scenario.latency == "realistic"
    with ScenarioRun(scenario) as run:
        assert min(commit_seconds(run.bootstrap_servers, 2)) >= latency.REPLICATED_WRITE_MS / 1000

