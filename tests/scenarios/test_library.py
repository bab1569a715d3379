"""Shipped scenarios are package data: listed, checked and run by name from any directory; an unknown
name gets the nearest shipped names; ``check`` reports every problem of a file against its cluster."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mockbroker.scenarios import ScenarioError, ScenarioRun, load_file, shipped

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "scenarios"  # the repository's top-level folder (the wheel packages it inside mockbroker)


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mockbroker", "scenario", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def test_the_library_is_the_top_level_scenarios_folder() -> None:
    """A source checkout (and an editable install) reads the top-level scenarios/ beside mockbroker/, tests/
    and docker/; no copy is left inside the package to drift from it."""
    assert shipped.LIBRARY == LIBRARY
    assert not (ROOT / "mockbroker" / "scenarios" / "library").exists()
    assert {p.name for p in ROOT.iterdir() if p.is_dir()} >= {"mockbroker", "tests", "docker", "scenarios"}
    assert shipped.names() == sorted(p.stem for p in LIBRARY.glob("*.yaml")) and len(shipped.names()) >= 8
    assert all((LIBRARY / "apps" / f"{app}.py").is_file() for app in ("produce", "consume", "transactions"))


def test_list_prints_every_name_with_its_first_sentence(tmp_path: Path) -> None:
    """(Wrapped under the description column: tests/scenarios/test_list_show_exec.py reads them whole.)"""
    done = cli("list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n\n")[0].splitlines()
    assert [line.split()[0] for line in lines if not line.startswith(" ")] == shipped.names()
    assert lines[names_at(lines, "throttling")].split(None, 1)[1].startswith("Until three Produce answers have carried")
    assert all(len(line) <= 100 for line in lines)


def names_at(lines: list[str], name: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(name + " "))


def test_a_reader_that_goes_away_gets_no_traceback(tmp_path: Path) -> None:
    """``mockbroker scenario list | head -1``: the pipe closes under the command, which ends quietly."""
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "scenario", "list"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the command writes: its first write (or its flush at exit) meets a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_check_by_name_from_another_directory(tmp_path: Path) -> None:
    done = cli("check", "throttling", "slow-fetch.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["throttling: ok (throttling: 2 steps, 2 expectations)",
                                        "slow-fetch.yaml: ok (slow-fetch: 2 steps, 2 expectations)"]
    every = cli("check", cwd=tmp_path)  # no argument: every shipped scenario
    assert every.returncode == 0 and every.stdout.count(": ok (") == len(shipped.names()), every.stderr


def test_a_file_path_wins_over_a_shipped_name(tmp_path: Path) -> None:
    (tmp_path / "throttling").write_text("name: mine\nsteps: []\n")
    assert load_file(tmp_path / "throttling").name == "mine"
    done = cli("check", "throttling", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("throttling: ok (mine: 0 steps"), done.stderr
    assert load_file("throttling").path == LIBRARY / "throttling.yaml"  # the test's cwd has no such file


@pytest.mark.parametrize(("ref", "line"), [
    ("throtling", "throtling: no shipped scenario of that name; nearest shipped: throttling "
                  "(mockbroker scenario list shows them all)"),
    ("leader-failover", "leader-failover: no shipped scenario of that name; nearest shipped: "
                        "leader-failover-during-produce (mockbroker scenario list shows them all)"),
    ("scenarios/throttling.yaml", "scenarios/throttling.yaml: no such file; the shipped scenario 'throttling' "
                                  "runs by name: throttling"),
])
def test_an_unknown_name_names_the_nearest_and_exits_2(tmp_path: Path, ref: str, line: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # (from the repository's root, scenarios/throttling.yaml is a file)
    for verb in ("check", "run"):
        done = cli(verb, ref, cwd=tmp_path)
        assert done.returncode == 2 and done.stderr.splitlines() == [line], (verb, done.stderr)
        assert "bootstrap.servers" not in done.stdout + done.stderr
    with pytest.raises(ScenarioError) as caught:
        ScenarioRun.from_file(ref)
    assert str(caught.value) == line


BAD = """\
name: many-problems
cluster:
  brokers: 2
  config:
    auto.create.topic.enable: false
    num.partitions: -5
  topics:
    - {name: orders, partitions: 2, replication_factor: 3}
steps:
  - action: broker_down
    broker: 7
  - fault: {name: f, api: Produce, brokr: 1, error: NOT_LEADER_OR_FOLLOWER}
  - action: move_leader
    topic: order
    partition: 0
  - kill_broker: 1
  - when: {records: {topic: orders, at_least: 5}}
    action: produce
    topic: orders
    partition: 3
    count: 5
  - {action: add_broker}
  - {fault: {api: Fetch, broker: 2, action: delay, delay_ms: 100}}
  - {fault: {api: Fetch, broker: 3, action: delay, delay_ms: 100}}
  - {action: reset, broker: 1}
  - fault: {api: Produce, error: NOT_LEADER_OR_FOLLOWER}
    topic: orders
expect:
  - records: {topic: payments, exactly: 5}
  - fault_hits: {fault: ff, at_least: 1}
"""

BAD_LINES = [
    "5: cluster.config.auto.create.topic.enable: unknown broker config 'auto.create.topic.enable': "
    "did you mean 'auto.create.topics.enable'?",
    "6: cluster.config.num.partitions: invalid value -5 for num.partitions",
    "8: cluster.topics[0].replication_factor: replication_factor 3 needs 3 brokers; the cluster has 2",
    "11: steps[0].broker: no broker 7: the cluster has brokers 0-1 (cluster.brokers: 2)",
    "12: steps[1].fault.brokr: unknown fault field 'brokr' (did you mean 'broker'?)",
    "14: steps[2].topic: topic 'order' is never created: declare it under cluster.topics (did you mean 'orders'?)",
    "16: steps[3].kill_broker: unknown step field 'kill_broker'",
    "16: steps[3]: a step needs one of action, fault or remove_fault (what it does)",
    "20: steps[4].partition: topic 'orders' has partitions 0-1, not 3",
    "24: steps[7].fault.broker: no broker 3: the cluster has brokers 0-2 (cluster.brokers: 2, and 1 added by "
    "earlier steps)",
    "25: steps[8].broker: reset does not take broker",
    "27: steps[9].topic: a fault step does not take topic (a fault's fields go inside fault:)",
    "29: expect[0].records.topic: topic 'payments' is never created: declare it under cluster.topics",
    "30: expect[1].fault_hits.fault: no step adds a fault named 'ff'",
]


def test_check_reports_every_problem_against_the_declared_cluster(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    done = cli("check", "bad.yaml", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == len(BAD_LINES), done.stderr
    for got, wanted in zip(lines, BAD_LINES, strict=True):
        assert got.startswith(f"bad.yaml:{wanted}"), (got, wanted)
    assert "Traceback" not in done.stderr
    run = cli("run", "bad.yaml", "--json", cwd=tmp_path)  # run checks the same first, and starts nothing
    assert run.returncode == 2 and run.stderr.splitlines() == lines and run.stdout == ""
    with pytest.raises(ScenarioError) as caught:
        load_file(path)
    assert len(caught.value.problems) == len(BAD_LINES)


@pytest.mark.parametrize(("text", "problem"), [
    # a topic written first by a produce step exists when auto-creation is on ...
    ("steps:\n  - {action: produce, topic: new, count: 1}\n  - {action: move_leader, topic: new, partition: 0}\n",
     None),
    # ... and is refused when it is off
    ("cluster: {config: {auto.create.topics.enable: false}}\nsteps:\n  - {action: produce, topic: new, count: 1}\n",
     "topic 'new' is never created and auto.create.topics.enable is false"),
    ("cluster: {config: {listeners: 'PLAINTEXT://127.0.0.1:0,FOO://127.0.0.1:0'}}\nsteps: []\n",
     "cluster.config.listeners: No security protocol defined for listener FOO"),
    ("cluster: {topics: [{name: t, config: {retention.msx: 5}}]}\nsteps: []\n",
     "unknown topic config 'retention.msx': did you mean 'retention.ms'?"),
    ("steps:\n  - {fault: {api: Produce, action: observe}}\nend: {records: {topic: nowhere, at_least: 1}}\n",
     "end.records.topic: topic 'nowhere' is never created"),
    ("steps:\n  - {when: {request: {api: Fetch, broker: 4}}, action: reset}\n",
     "steps[0].when.request.broker: no broker 4: the cluster has broker 0 (cluster.brokers: 1)"),
    ("steps:\n  - {action: reset, on_failure: carry_on}\n", "steps[0].on_failure: 'carry_on' is not one of"),
    ("steps:\n  - {action: brokr_down, broker: 0}\n", "steps[0].action: 'brokr_down' is not one of ['broker_down', "),
    ("steps:\n  - {action: brokr_down, broker: 0}\n", "(did you mean 'broker_down'?)"),
    ("steps:\n  - {when: {record: {topic: t, at_least: 1}}, action: reset}\n",
     "steps[0].when.record: Additional properties are not allowed ('record' was unexpected) (did you mean 'records'?)"),
    ("steps:\n  - {when: {request: {api: Fetch, topik: t}}, action: reset}\n",
     "steps[0].when.request.topik: unknown request matcher field 'topik' (did you mean 'topic'?)"),
])
def test_checks_against_the_cluster(text: str, problem: str | None) -> None:
    from mockbroker.scenarios import load_text

    if problem is None:
        assert load_text("name: x\n" + text).steps
        return
    with pytest.raises(ScenarioError, match=None) as caught:
        load_text("name: x\n" + text)
    assert problem in str(caught.value), str(caught.value)
    assert len(caught.value.problems) == 1, caught.value.problems


@pytest.mark.clients
def test_run_a_shipped_scenario_by_name_from_another_directory(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mockbroker", "scenario", "run", "throttling", "--app", "--quiet",
                           "--json"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    summary = json.loads(done.stdout)
    assert done.returncode == 0 and summary["passed"] and summary["app_exit"] == 0, done.stderr[-3000:]
    assert summary["name"] == "throttling"
