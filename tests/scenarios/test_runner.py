"""Running scenarios: every shipped scenario passes with its real-client app (run by name, from another
directory); failing expectations, unreached steps and timeouts exit non-zero with the reason; runs
without an app; the async API."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from mockbroker.scenarios import ScenarioRun, load_text

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "scenarios").glob("*.yaml"))

PRODUCER = (
    "import os\nfrom confluent_kafka import Producer\n"
    "p = Producer({'bootstrap.servers': os.environ['KAFKA_BOOTSTRAP_SERVERS']})\n"
    "[p.produce('t', b'v%d' % i) for i in range(5)]\nraise SystemExit(p.flush(10))\n"
)


def run_cli(*args: str) -> tuple[int, dict, str]:
    done = subprocess.run([sys.executable, "-m", "mockbroker", "scenario", "run", *args, "--json"],
                          capture_output=True, text=True, timeout=240, cwd=tempfile.gettempdir())
    try:
        summary = json.loads(done.stdout)
    except json.JSONDecodeError:
        summary = {}
    return done.returncode, summary, done.stderr


@pytest.mark.clients
@pytest.mark.slow
@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_shipped_scenario_passes_with_its_app(path: Path) -> None:
    status, summary, stderr = run_cli(path.stem, "--app", "--quiet")
    assert status == 0, json.dumps(summary, indent=1) + stderr[-3000:]
    assert summary["passed"] and summary["app_exit"] == 0
    assert all(s["ok"] for s in summary["steps"]) and all(e["ok"] for e in summary["expectations"])


@pytest.mark.clients
def test_a_failed_expectation_exits_1_and_says_which(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: wrong-count\ncluster: {topics: [{name: t, partitions: 1}]}\nsteps:\n"
                        "  - fault: {name: watch, api: Produce, action: observe, times: null}\n"
                        "expect:\n  - records: {topic: t, exactly: 6}\n  - fault_hits: {fault: watch, at_least: 1}\n")
    app = tmp_path / "app.py"
    app.write_text(PRODUCER)
    status, summary, stderr = run_cli(str(scenario), "--exec", f"{sys.executable} {app}")
    assert status == 1, stderr
    assert not summary["passed"] and summary["app_exit"] == 0
    verdicts = {e["kind"]: (e["ok"], e["detail"]) for e in summary["expectations"]}
    assert verdicts["records"] == (False, "t: 5 (wanted exactly 6)")
    assert verdicts["fault_hits"][0] and verdicts["app_exit"][0]
    assert summary["topics"]["t"]["records"] == 5


def test_without_an_app_the_run_ends_at_the_end_trigger(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: self-contained\ncluster: {brokers: 2, topics: [{name: t, partitions: 2}]}\n"
                        "end: {records: {topic: t, at_least: 300}}\nsteps:\n"
                        "  - {action: produce, topic: t, count: 100}\n"
                        "  - {after: 100ms, action: broker_down, broker: 1}\n"
                        "  - {when: {records: {topic: t, at_least: 100}}, action: produce, topic: t, count: 200}\n"
                        "expect:\n  - records: {topic: t, exactly: 300}\n")
    status, summary, stderr = run_cli(str(scenario))
    assert status == 0, stderr
    assert [s["detail"] for s in summary["steps"]] == [
        "100 records produced to t", "broker_down broker 1", "200 records produced to t"]
    assert "bootstrap.servers=127.0.0.1:" in stderr  # with --json the address goes to stderr


def test_a_step_never_reached_times_out(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: stuck\ntimeout: 500ms\ncluster: {topics: [{name: t}]}\nsteps:\n  - name: wait forever\n"
                        "    when: {records: {topic: t, at_least: 10}}\n    action: reset\n")
    status, summary, _ = run_cli(str(scenario), "--quiet")
    assert status == 1
    assert summary["error"] == "timed out after 0.5s waiting for wait forever"
    assert summary["steps"][0]["detail"] == "not reached"


async def test_async_api_with_aiokafka() -> None:
    scenario = load_text("name: async\ncluster: {topics: [{name: t, partitions: 1}]}\nsteps:\n"
                         "  - when: {request: {api: Produce, count: 1}}\n"
                         "    fault: {name: refuse, api: Produce, error: NOT_LEADER_OR_FOLLOWER, times: 1}\n"
                         "expect:\n  - records: {topic: t, exactly: 2}\n  - fault_hits: {fault: refuse, exactly: 1}\n")
    run = await ScenarioRun(scenario).start_async()
    try:
        producer = AIOKafkaProducer(bootstrap_servers=run.bootstrap_servers, retry_backoff_ms=20)
        await producer.start()
        try:
            await producer.send_and_wait("t", b"first")
            assert await run.wait_steps_async(timeout=5)  # the first Produce armed the fault
            await producer.send_and_wait("t", b"second")  # refused once, retried
        finally:
            await producer.stop()
        result = await run.finish_async(app_ran=True)
    finally:
        await run.close_async()
    assert result.passed, result.report()
    assert result.steps[0].detail == "fault refuse added (error)"


async def test_a_scenario_cluster_with_a_sasl_listener_and_users() -> None:
    scenario = load_text("name: sasl\ncluster:\n"
                         "  config: {listeners: 'PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0'}\n"
                         "  sasl_users: {alice: secret}\n  topics: [{name: t, partitions: 1}]\nsteps: []\n"
                         "expect:\n  - records: {topic: t, exactly: 1}\n")
    run = await ScenarioRun(scenario).start_async()
    try:
        producer = AIOKafkaProducer(bootstrap_servers=run.cluster.bootstrap_for("SASL_PLAINTEXT"),
                                    security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                                    sasl_plain_username="alice", sasl_plain_password="secret")
        await producer.start()
        try:
            await producer.send_and_wait("t", b"over sasl")
        finally:
            await producer.stop()
        result = await run.finish_async(app_ran=True)
    finally:
        await run.close_async()
    assert result.passed, result.report()


@pytest.mark.clients
def test_an_outside_app_runs_until_sigterm(tmp_path: Path) -> None:
    from confluent_kafka import Producer

    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: outside\ntimeout: 60s\ncluster: {topics: [{name: t, partitions: 1}]}\nsteps:\n"
                        "  - fault: {name: refuse, api: Produce, error: NOT_LEADER_OR_FOLLOWER, times: 2}\n"
                        "expect:\n  - records: {topic: t, exactly: 5}\n  - fault_hits: {fault: refuse, exactly: 2}\n")
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "scenario", "run", str(scenario), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while not line.startswith("bootstrap.servers="):
            line = proc.stderr.readline()
        producer = Producer({"bootstrap.servers": line.strip().split("=", 1)[1], "retry.backoff.ms": 20})
        for i in range(5):
            producer.produce("t", b"v%d" % i)
        assert producer.flush(15) == 0
        assert proc.poll() is None  # still serving: no end trigger, so it waits for the signal
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    summary = json.loads(out)
    assert proc.returncode == 0 and summary["passed"] and summary["error"] is None, summary


async def test_group_stable_trigger_and_expectation_with_aiokafka() -> None:
    from aiokafka import AIOKafkaConsumer

    scenario = load_text("name: groups\ncluster: {topics: [{name: t, partitions: 2}]}\nsteps:\n"
                         "  - when: {group_stable: {group: g, members: 1}}\n    action: produce\n    topic: t\n"
                         "    count: 10\nexpect:\n  - group_stable: {group: g, members: 1}\n"
                         "  - records: {topic: t, exactly: 10}\n")
    run = await ScenarioRun(scenario).start_async()
    consumer = AIOKafkaConsumer("t", bootstrap_servers=run.bootstrap_servers, group_id="g",
                                auto_offset_reset="earliest")
    try:
        await consumer.start()
        got = []
        while len(got) < 10:
            batch = await consumer.getmany(timeout_ms=500)
            got += [m.value for records in batch.values() for m in records]
        result = await run.finish_async(app_ran=True)
    finally:
        await consumer.stop()
        await run.close_async()
    assert result.passed, result.report()
    assert len(got) == 10
