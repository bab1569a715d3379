"""Scenario files: the shipped ones load; wrong ones fail with the file, line and field named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mockbroker.scenarios import ScenarioError, load_file, load_text
from mockbroker.scenarios.loader import parse_duration

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "scenarios").glob("*.yaml"))

GOOD = """\
name: ok
cluster:
  brokers: 2
  topics:
    - {name: t, partitions: 2}
steps:
  - fault: {name: f, api: Produce, error: NOT_LEADER_OR_FOLLOWER}
  - after: 250ms
    remove_fault: f
"""


def test_at_least_eight_scenarios_ship_and_load() -> None:
    assert len(SHIPPED) >= 8
    for path in SHIPPED:
        scenario = load_file(path)
        assert scenario.app and scenario.steps and scenario.expect, path.name


def test_a_good_file() -> None:
    scenario = load_text(GOOD)
    assert scenario.brokers == 2 and scenario.topics == [{"name": "t", "partitions": 2}]
    assert [s.kind for s in scenario.steps] == ["fault", "remove_fault"]
    assert scenario.steps[1].after_s == 0.25


@pytest.mark.parametrize(("text", "line", "message"), [
    ("name: x\nsteps:\n  - action: explode\n", 3, "steps[0].action: 'explode' is not one of"),
    ("name: x\nsteps:\n  - fault: {api: Produce, action: explode}\n", 3,
     "steps[0].fault.action: unknown action 'explode'"),
    ("name: x\nsteps:\n  - fault: {api: Prodce, error: 6}\n", 3, "unknown API 'Prodce'"),
    ("name: x\nsteps:\n  - fault: {api: Produce, error: NOPE}\n", 3, "unknown error code 'NOPE'"),
    ("name: x\nsteps: []\nexpect:\n  - records: {topic: t}\n", 4, "give exactly, at_least or at_most"),
    ("name: x\nsteps:\n  - action: move_leader\n    topic: t\n", 3, "move_leader needs partition"),
    ("name: x\nsteps:\n  -\n    remove_fault: ghost\n", 4, "no earlier step adds a fault named 'ghost'"),
    ("name: x\nsteps:\n  - at: soon\n    action: reset\n", 3, "steps[0].at"),
    ("name: x\nsteps:\n  - at: 1s\n    after: 2s\n    action: reset\n", 3, "one trigger, not at and after"),
    ("name: x\nsteps: [\n  {a: 1\n", 4, "not valid YAML"),
    ("name: x\ncluster: {brokers: 0}\nsteps: []\n", 2, "cluster.brokers: 0 is less than the minimum of 1"),
    ("name: x\nsteps: []\ncolour: blue\n", 3, "'colour' was unexpected"),
    ("steps: []\n", 1, "'name' is a required property"),
])
def test_errors_name_the_line(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as caught:
        load_file(path)
    assert str(caught.value).startswith(f"{path}:{line}: "), str(caught.value)
    assert message in str(caught.value)


def test_durations() -> None:
    assert [parse_duration(v) for v in (2, 1.5, "250ms", "2s", "1.5s", "1m")] == [2, 1.5, 0.25, 2, 1.5, 60]
    with pytest.raises(ValueError):
        parse_duration("2h")


def test_check_command(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nsteps:\n  - action: broker_down\n")
    ok = subprocess.run([sys.executable, "-m", "mockbroker", "scenario", "check", *map(str, SHIPPED)],
                        capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.count(": ok (") == len(SHIPPED)
    wrong = subprocess.run([sys.executable, "-m", "mockbroker", "scenario", "check", str(bad)],
                           capture_output=True, text=True)
    assert wrong.returncode == 2 and f"{bad}:3: steps[0]: broker_down needs broker" in wrong.stderr
