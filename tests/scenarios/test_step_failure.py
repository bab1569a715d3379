"""A failed step ends the run (exit 1, the summary names the step and why, later steps are not run, an
app is stopped) instead of waiting for the timeout, unless the scenario says ``on_failure: continue``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mockbroker.scenarios import ScenarioRun, load_text

# broker 0 is up, so broker_up refuses: a step the check cannot see coming fails at run time; the end
# trigger and the last step's delay would each keep the run going until the timeout
FAILING = """\
name: fails
timeout: 60s
{top}cluster: {{topics: [{{name: t, partitions: 1}}]}}
end: {{records: {{topic: t, at_least: 1000}}}}
steps:
  - {{name: fill, action: produce, topic: t, count: 5}}
  - name: bring up a live broker
    action: broker_up
    broker: 0
{step}  - {{name: after the failure, after: 100ms, action: produce, topic: t, count: 5}}
expect:
  - records: {{topic: t, at_least: 5}}
"""


def scenario(tmp_path: Path, top: str = "", step: str = "") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(FAILING.format(top=top, step=step))
    return path


def run_cli(path: Path, *args: str) -> tuple[int, dict, str]:
    done = subprocess.run([sys.executable, "-m", "mockbroker", "scenario", "run", str(path), "--json", *args],
                          capture_output=True, text=True, timeout=240, cwd=path.parent)
    return done.returncode, json.loads(done.stdout or "{}"), done.stderr


def broker_up_refusal(summary: dict) -> str:
    detail = summary["steps"][1]["detail"]
    assert detail.startswith("failed: "), detail
    return detail


def test_a_failed_step_ends_the_run(tmp_path: Path) -> None:
    status, summary, stderr = run_cli(scenario(tmp_path))
    assert status == 1, stderr
    detail = broker_up_refusal(summary)
    assert summary["error"] == f"step 2 (bring up a live broker) {detail}; the run stopped there (on_failure: stop)"
    assert [s["ok"] for s in summary["steps"]] == [True, False, False]
    assert summary["steps"][2]["detail"] == "not reached" and summary["steps"][2]["at_s"] is None
    assert not summary["passed"] and summary["topics"]["t"]["records"] == 5  # the third step never produced


def test_a_failed_step_stops_the_app(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text("import time\ntime.sleep(120)\n")
    status, summary, stderr = run_cli(scenario(tmp_path), "--exec", f"{sys.executable} {app}")
    assert status == 1
    assert "mockbroker: step 2 (bring up a live broker) failed; the app was stopped" in stderr
    assert summary["error"].startswith("step 2 (bring up a live broker) failed: ")
    assert summary["app_exit"] == -9 and summary["steps"][2]["detail"] == "not reached"


@pytest.mark.parametrize(("top", "step"), [
    ("on_failure: continue\n", ""),  # for every step
    ("", "    on_failure: continue\n"),  # for this step
    ("on_failure: stop\n", "    on_failure: continue\n"),  # the step's own wins
])
def test_on_failure_continue_runs_on(tmp_path: Path, top: str, step: str) -> None:
    path = scenario(tmp_path, top, step)
    path.write_text(path.read_text().replace("end: {records: {topic: t, at_least: 1000}}",
                                             "end: {records: {topic: t, at_least: 10}}"))
    status, summary, stderr = run_cli(path)
    assert status == 1, stderr  # the failed step is still a failure ...
    assert summary["error"] is None and [s["ok"] for s in summary["steps"]] == [True, False, True]
    assert summary["topics"]["t"]["records"] == 10  # ... but the timeline went on
    broker_up_refusal(summary)


def test_a_later_step_with_on_failure_stop_still_stops(tmp_path: Path) -> None:
    path = scenario(tmp_path, "on_failure: continue\n", "    on_failure: stop\n")
    status, summary, _ = run_cli(path)
    assert status == 1 and summary["error"].startswith("step 2 (bring up a live broker) failed")
    assert summary["steps"][2]["detail"] == "not reached"


async def test_the_async_api_ends_at_the_failed_step() -> None:
    run = await ScenarioRun(load_text(FAILING.format(top="", step=""))).start_async()
    try:
        await run.stopped.wait()  # set by the failed step
        result = await run.finish_async()
    finally:
        await run.close_async()
    assert not result.passed and result.error is not None and "bring up a live broker" in result.error
    assert run.failed is result.steps[1] and result.steps[2].at_s is None
    assert not await run.wait_steps_async(timeout=60)


def test_a_failed_step_in_the_sync_api() -> None:
    with ScenarioRun(load_text(FAILING.format(top="", step=""))) as run:
        assert not run.wait_steps(timeout=60)  # False as soon as the second step fails: the third never runs
        assert run.failed is not None and run.failed.name == "bring up a live broker"
    assert run.result is not None and not run.result.passed
    assert run.result.error is not None and run.result.error.startswith("step 2 (bring up a live broker) failed")
