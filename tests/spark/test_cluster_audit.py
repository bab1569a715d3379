"""``mockbroker audit --master spark://...`` on the standalone cluster over 10M records that an idempotent
producer wrote while a fault scenario played (lost Produce answers, leader moves, a broker down and back):
the executors get mockbroker from the archive, and the report is the same as local[2]'s, record for record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mockbroker.scenarios import ScenarioRun, load_text
from mockbroker.spark.standalone import StandaloneCluster

pytestmark = [pytest.mark.spark, pytest.mark.spark_cluster, pytest.mark.clients, pytest.mark.slow]
RECORDS = 10_000_000
APP = Path(__file__).resolve().parents[2] / "scenarios" / "apps" / "produce.py"
SCENARIO = """
name: audited-under-faults
cluster: {brokers: 3, topics: [{name: audit, partitions: 8}]}
timeout: 600s
steps:
  - name: lose 1 % of Produce answers (handled, never answered)
    fault: {name: lost-answers, api: Produce, action: drop_after, probability: 0.01, seed: 11, times: null}
  - {name: move the leader of audit-0, after: 1s, action: move_leader, topic: audit, partition: 0}
  - {name: broker 2 goes down, after: 1s, action: broker_down, broker: 2}
  - {name: broker 2 comes back, after: 3s, action: broker_up, broker: 2}
  - {name: move the leader of audit-5, after: 1s, action: move_leader, topic: audit, partition: 5}
expect:
  - committed: {topic: audit, exactly: 10000000}
  - no_gaps_or_duplicates: {topic: audit}
"""


def audit(master: str, bootstrap: str, report: Path, env: dict[str, str], *conf: str) -> dict[str, object]:
    settings = [arg for pair in conf for arg in ("--conf", pair)]
    done = subprocess.run([sys.executable, "-m", "mockbroker", "audit", "--bootstrap-server", bootstrap,
                           "--topic", "audit", "--master", master, "--json", str(report), *settings],
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(report.read_text())


def test_the_cluster_audit_of_10m_records_agrees_with_local(standalone: StandaloneCluster, executor_python: Path,
                                                             tmp_path: Path) -> None:
    with ScenarioRun(load_text(SCENARIO)) as run:
        produced = subprocess.run([sys.executable, str(APP), "--topic", "audit", "--count", str(RECORDS),
                                   "--idempotent", "--config", "linger.ms=20", "--config", "batch.size=1000000",
                                   "--config", "queue.buffering.max.messages=1000000",
                                   "--config", "message.timeout.ms=300000", "--config", "socket.timeout.ms=5000"],
                                  env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": run.bootstrap_servers},
                                  capture_output=True, text=True, timeout=600)
        assert produced.returncode == 0, produced.stdout[-2000:] + produced.stderr[-2000:]
        assert run.wait_steps(timeout=60)
        lost = run.faults["lost-answers"].hits
        cluster_env = {**os.environ, "PYSPARK_PYTHON": str(executor_python)}
        on_cluster = audit(standalone.master_url, run.bootstrap_servers, tmp_path / "cluster.json", cluster_env,
                           "spark.cores.max=2", "spark.executor.memory=2g", "spark.driver.host=127.0.0.1",
                           "spark.driver.bindAddress=127.0.0.1", "spark.sql.shuffle.partitions=8")
        local_env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
        on_local = audit("local[2]", run.bootstrap_servers, tmp_path / "local.json", local_env,
                         "spark.driver.memory=4g", "spark.sql.shuffle.partitions=8")
    assert run.result is not None and run.result.passed, run.result.report()
    assert lost > 0  # the producer retried batches whose answers were lost: the duplicates check had work
    assert on_cluster == on_local
    assert on_cluster["passed"] is True
    assert (on_cluster["records"], on_cluster["committed"], on_cluster["duplicates"], on_cluster["gaps"]) == (
        RECORDS, RECORDS, 0, 0)
