"""The Spark audit finds planted defects (a duplicate, a gap, a visible aborted record, a per-key order
violation) and passes clean topics written by confluent-kafka's idempotent and transactional producers
under injected faults, and empty topics or topics emptied by DeleteRecords (no records, nothing wrong);
``mockbroker audit`` prints the table, writes JSON and exits 1 on defects, 0 on an empty topic."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from mockbroker import batches
from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.spark.audit import run_audit
from mockbroker.state.log import PartitionLog

pytestmark = [pytest.mark.spark, pytest.mark.clients, pytest.mark.slow]
NOW = int(time.time() * 1000)


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, topics={"clean": 3, "defects": 1}) as running:
        yield running


def plant(log: PartitionLog, data: bytes) -> None:
    """Append a batch straight into the log, bypassing every broker check (a broker bug, on purpose)."""
    log.append(batches.stored_batch(memoryview(data), log.next_offset, log.leader_epoch))


def test_planted_defects_are_found(spark: Any, cluster: MockCluster, tmp_path: Path) -> None:
    def defects() -> None:
        log = cluster.state.partition("defects", 0)
        plant(log, rec.build_batch([(b"a", b"fine", [], NOW)]))
        dup = rec.build_batch([(b"d", b"dup", [], NOW)], producer_id=4242, producer_epoch=0, base_sequence=0)
        plant(log, dup)
        plant(log, dup)  # the same producer sequence stored twice
        plant(log, rec.build_batch([rec.Record(0, 0, b"g", b"gap"), rec.Record(3, 0, b"g", b"gap")],
                                   base_timestamp=NOW))  # offsets 1 and 2 of this batch are missing
        plant(log, rec.build_batch([(b"x", b"leak", [], NOW)], producer_id=5000, producer_epoch=0, base_sequence=0,
                                   transactional=True))
        plant(log, rec.build_control_batch(False, 5000, 0, 0, NOW))  # ABORT, but the broker never knew
        plant(log, rec.build_batch([(b"o", b"late", [], NOW + 10)]))
        plant(log, rec.build_batch([(b"o", b"early", [], NOW)]))  # same key, earlier timestamp, later offset

    cluster.call(defects)
    report = run_audit(spark, cluster.bootstrap_servers, ["defects"])
    assert (report.gaps, report.duplicates, report.visible_aborted, report.order_violations) == (1, 1, 1, 1)
    assert (report.records, report.aborted, report.control_markers) == (8, 1, 1)
    assert not report.passed
    assert report.examples["duplicates"] == ["defects-0: producer 4242 sequence 0 at offsets [1, 2]"]
    assert "aborted records visible to read_committed  1" in report.table()

    out = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "mockbroker", "audit", "--bootstrap", cluster.bootstrap_servers,
                           "--topic", "defects", "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "FAILED" in done.stdout and json.loads(out.read_text())["duplicates"] == 1


def test_clean_topics_written_under_faults_pass(spark: Any, cluster: MockCluster) -> None:
    drops = cluster.add_fault(api="Produce", topic="clean", action="drop_after", nth=2,
                              times=3)
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True, "linger.ms": 2,
                  "retry.backoff.ms": 20})
    for i in range(30_000):
        while True:
            try:
                p.produce("clean", f"v{i}".encode(), key=f"k{i % 50}".encode())
                break
            except BufferError:
                p.poll(0.01)
        if i == 15_000:
            cluster.move_leader("clean", 0)
            cluster.move_leader("clean", 1)
    assert p.flush(60) == 0
    cluster.remove_fault(drops.id)
    t = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "audit-clean"})
    t.init_transactions(10)
    for n in range(4):
        t.begin_transaction()
        for i in range(25):
            t.produce("clean", f"t{n}-{i}".encode(), key=b"txn")
        t.flush(10)
        (t.commit_transaction if n % 2 == 0 else t.abort_transaction)(10)
    assert drops.hits > 0  # the retries really happened
    report = run_audit(spark, cluster.bootstrap_servers, ["clean"])
    assert report.passed, report.table()
    assert (report.records, report.committed, report.aborted, report.open) == (30_100, 30_050, 50, 0)


def test_a_scenario_can_end_with_the_spark_audit(spark: Any) -> None:
    from mockbroker.scenarios import ScenarioRun, load_text

    scenario = load_text("name: audited\ncluster: {brokers: 2, topics: [{name: a, partitions: 2}]}\nsteps:\n"
                         "  - {action: produce, topic: a, count: 1000}\n"
                         "expect:\n  - audit: {topics: [a]}\n")
    with ScenarioRun(scenario) as run:
        assert run.wait_steps(timeout=10)
    assert run.result is not None and run.result.passed, run.result.report()
    assert run.result.expectations[0].detail.startswith("1,000 records (1,000 committed, 0 aborted), 0 gaps")


def test_empty_and_emptied_topics_pass_with_no_records(spark: Any, cluster: MockCluster, tmp_path: Path) -> None:
    cluster.create_topic("void", 2)
    cluster.create_topic("wiped", 2)
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True})
    for i in range(10):
        p.produce("wiped", f"w{i}".encode(), partition=i % 2)
    assert p.flush(10) == 0
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for future in admin.delete_records([TopicPartition("wiped", n, -1) for n in (0, 1)]).values():
        future.result(10)
    report = run_audit(spark, cluster.bootstrap_servers, ["void", "wiped"], check=False)  # nothing to read at all
    assert (report.records, report.control_markers, report.passed) == (0, 0, True), report.table()

    out = tmp_path / "empty.json"
    done = subprocess.run([sys.executable, "-m", "mockbroker", "audit", "--bootstrap-server",
                           cluster.bootstrap_servers, "--topic", "void", "--json", str(out)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "PASSED" in done.stdout and "Traceback" not in done.stderr
    assert json.loads(out.read_text())["records"] == 0
