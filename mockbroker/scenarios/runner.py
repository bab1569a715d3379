"""Running a scenario: start its cluster, play the timeline, check the expectations.

The timeline runs on the cluster's event loop: each step waits for its trigger (a time from the start,
a delay after the previous step, or an event), then adds a fault, removes one or acts on the cluster.
A step that fails ends the run there (``failed``, ``stopped``) unless its ``on_failure`` is continue.
:class:`ScenarioRun` works from async code (``await run.start_async()`` ... ``await
run.finish_async()``) and from sync code (``with ScenarioRun.from_file(path) as run:`` runs the
cluster on a background thread; the block is the application under test).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from mockbroker.cluster import MockCluster
from mockbroker.cluster_actions import ACTIONS, OPTIONAL, run_action
from mockbroker.faults import FaultRule, rule_from_dict
from mockbroker.scenarios import conditions
from mockbroker.scenarios.loader import Scenario, Step, load_file
from mockbroker.scenarios.validate import config_text
from mockbroker.state.inspect import TopicAudit

POLL_S = 0.02
PROGRESS_S = 1.0


@dataclass
class StepOutcome:
    name: str
    line_index: int
    at_s: float | None = None  # seconds from the start when it ran; None: never reached
    ok: bool = False
    detail: str = "not reached"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "index": self.line_index, "at_s": self.at_s, "ok": self.ok, "detail": self.detail}


@dataclass
class ScenarioResult:
    name: str
    passed: bool
    duration_s: float
    steps: list[StepOutcome]
    expectations: list[conditions.Outcome]
    app_exit: int | None = None
    error: str | None = None
    topics: dict[str, dict[str, Any]] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "duration_s": round(self.duration_s, 3),
                "error": self.error, "app_exit": self.app_exit, "steps": [s.to_dict() for s in self.steps],
                "expectations": [e.to_dict() for e in self.expectations], "topics": self.topics,
                "faults": self.faults}

    def report(self) -> str:
        lines = [f"scenario {self.name}: {'PASSED' if self.passed else 'FAILED'} in {self.duration_s:.1f}s"]
        if self.error:
            lines.append(f"  error: {self.error}")
        for s in self.steps:
            when = f"{s.at_s:6.2f}s" if s.at_s is not None else "   -   "
            lines.append(f"  {'ok ' if s.ok else 'BAD'} {when} {s.name}: {s.detail}")
        for e in self.expectations:
            lines.append(f"  {'ok ' if e.ok else 'BAD'} expect {e.kind}: {e.detail}")
        for f in self.faults:
            lines.append(f"      fault {f['name'] or f['id']}: {f['action']}, {f['hits']} hits")
        if self.app_exit is not None:
            lines.append(f"      app exited with {self.app_exit}")
        return "\n".join(lines)


class _Interrupted(Exception):
    """Asked to stop before the steps (or the end trigger) were done."""


class _StepFailed(Exception):
    """A step failed and its on_failure is stop: the run ends now."""


class ScenarioRun:
    def __init__(self, scenario: Scenario, *, port: int = 0, control_port: int | None = None,
                 progress: TextIO | None = None, host: str = "127.0.0.1", advertised_host: str | None = None) -> None:
        self.scenario = scenario
        self.cluster = MockCluster(brokers=scenario.brokers, host=host, port=port, config=scenario.config,
                                   control_port=control_port, control_host=host, advertised_host=advertised_host,
                                   sasl_users=scenario.sasl_users, schema_registry=scenario.schema_registry,
                                   latency=scenario.latency)
        self.cluster.scenario_run = self  # the console shows the steps
        self.progress = progress
        self.steps = [StepOutcome(s.name, s.index) for s in scenario.steps]
        self.faults: dict[str, FaultRule] = {}  # named rules, kept after removal for their hits
        self.result: ScenarioResult | None = None
        self._started = 0.0
        self._timeline: asyncio.Future[None] | None = None
        self._ticker: asyncio.Future[None] | None = None
        self._current: Step | None = None
        self._sync = False
        self.failed: StepOutcome | None = None  # the step that failed and ended the run (on_failure: stop)
        self.stopped = asyncio.Event()  # set when a failed step ends the run (binds to the loop that waits)

    @classmethod
    def from_file(cls, path: str | Path, **options: Any) -> ScenarioRun:
        """A run of a scenario file, or of a shipped scenario by name (an existing path wins)."""
        return cls(load_file(path), **options)

    from_name = from_file

    @property
    def bootstrap_servers(self) -> str:
        return self.cluster.bootstrap_servers

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._started

    # -- life cycle -------------------------------------------------------------------------------
    async def start_async(self) -> ScenarioRun:
        await self.cluster.start()
        self._begin()
        return self

    def _begin(self) -> None:
        """On the cluster's loop: create the topics, start the clock, the timeline and the progress line."""
        for topic in self.scenario.topics:
            self.cluster.state.create_topic(topic["name"], topic.get("partitions"), topic.get("replication_factor"),
                                            {k: config_text(v) for k, v in topic.get("config", {}).items()})
        self._started = time.monotonic()
        self._timeline = asyncio.ensure_future(self._play())
        if self.progress is not None:
            self._ticker = asyncio.ensure_future(self._tick())

    async def finish_async(self, app_exit: int | None = None, app_ran: bool = False,
                           stop: asyncio.Event | None = None) -> ScenarioResult:
        """End the run and check the expectations.  With an app (``app_ran``): now.  Without: once every
        step has run and then the ``end`` trigger holds or, with no ``end``, once ``stop`` is set (the
        command line sets it on Ctrl-C or SIGTERM: an outside application has had its time).  The
        scenario's timeout bounds the wait; reaching it with steps or the end trigger pending fails."""
        error = None
        if not app_ran:
            remaining = max(self.scenario.timeout_s - self.elapsed, 0.0)
            try:
                await asyncio.wait_for(self._until_done(stop), remaining)
            except _StepFailed:
                pass
            except TimeoutError:
                if self._current is not None or self.scenario.end is not None:
                    error = f"timed out after {self.scenario.timeout_s:g}s waiting for " + (
                        self._current.name if self._current is not None else "the end trigger")
            except _Interrupted:
                error = "interrupted while waiting for " + (
                    self._current.name if self._current is not None else "the end trigger")
        if self.failed is not None:
            error = (f"step {self.failed.line_index + 1} ({self.failed.name}) {self.failed.detail}; "
                     "the run stopped there (on_failure: stop)")
        if self._timeline is not None and not self._timeline.done():
            self._timeline.cancel()
        if self._ticker is not None:
            self._ticker.cancel()
        spark_audits: dict[int, tuple[bool, str]] = {}
        loop = asyncio.get_running_loop()
        for expectation in self.scenario.expect:
            if "audit" in expectation:  # a Spark job reading this cluster: run it off the loop
                self._say(f"running the Spark audit of {', '.join(expectation['audit']['topics'])}")
                spark_audits[id(expectation)] = await loop.run_in_executor(
                    None, conditions.spark_audit, self.bootstrap_servers, expectation["audit"]["topics"])
        self.result = self._evaluate(app_exit, app_ran, error, spark_audits)
        return self.result

    async def _until_done(self, stop: asyncio.Event | None) -> None:
        assert self._timeline is not None
        stopped = asyncio.ensure_future(stop.wait()) if stop is not None else None
        try:
            waited: list[asyncio.Future[Any]] = [self._timeline, *([stopped] if stopped else [])]
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
            if not self._timeline.done():
                raise _Interrupted
            if self.failed is not None:
                raise _StepFailed
            self._current = None
            end = self.scenario.end
            while end is not None and not conditions.trigger_holds(self.cluster.state, end, self.faults, None):
                if stop is not None and stop.is_set():
                    raise _Interrupted
                await asyncio.sleep(POLL_S)
            if end is None and stopped is not None:
                self._say("every step has run; serving until Ctrl-C (or the timeout)")
                await stopped
        finally:
            if stopped is not None:
                stopped.cancel()

    async def close_async(self) -> None:
        await self.cluster.stop()

    # sync use: the cluster on a background thread, the with-block is the application
    def start(self) -> ScenarioRun:
        self.cluster.start_background()
        self._sync = True
        self.cluster.call(self._begin)
        return self

    def finish(self, app_exit: int | None = None, app_ran: bool = True) -> ScenarioResult:
        assert self.cluster._loop is not None
        done = asyncio.run_coroutine_threadsafe(self.finish_async(app_exit, app_ran), self.cluster._loop)
        return done.result(timeout=self.scenario.timeout_s + 30)

    def wait_steps(self, timeout: float | None = None) -> bool:
        """Block until every step has run (sync use); False on timeout, or at once when a failed step
        ended the run (``failed``)."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.scenario.timeout_s)
        while not all(s.at_s is not None for s in self.steps):
            if time.monotonic() >= deadline or self.failed is not None:
                return False
            time.sleep(POLL_S)
        return True

    async def wait_steps_async(self, count: int | None = None, timeout: float | None = None) -> bool:
        """Wait until ``count`` steps (default: all) have run; False on timeout, or at once when a failed
        step ended the run before."""
        wanted = len(self.steps) if count is None else count
        deadline = time.monotonic() + (timeout if timeout is not None else self.scenario.timeout_s)
        while sum(1 for s in self.steps if s.at_s is not None) < wanted:
            if time.monotonic() >= deadline or self.failed is not None:
                return False
            await asyncio.sleep(POLL_S)
        return True

    def close(self) -> None:
        if self._sync:
            self.cluster.stop_background()
            self._sync = False

    def __enter__(self) -> ScenarioRun:
        return self.start()

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.finish(app_ran=True)
        self.close()

    # -- the timeline -----------------------------------------------------------------------------
    async def _play(self) -> None:
        previous = self._started
        for step, outcome in zip(self.scenario.steps, self.steps, strict=True):
            self._current = step
            await self._trigger(step, previous)
            outcome.at_s = round(self.elapsed, 3)
            try:
                outcome.detail = await self._perform(step)
                outcome.ok = True
            except Exception as exc:
                outcome.detail = f"failed: {exc}"
            previous = time.monotonic()
            self._say(f"{step.name}: {outcome.detail}")
            if not outcome.ok and step.on_failure == "stop":
                self.failed = outcome
                self._say(f"step {step.index + 1} failed: the run ends (on_failure: stop)")
                self.stopped.set()
                return
        self._current = None

    async def _trigger(self, step: Step, previous: float) -> None:
        if step.at_s is not None:
            await asyncio.sleep(max(0.0, self._started + step.at_s - time.monotonic()))
        elif step.after_s is not None:
            await asyncio.sleep(max(0.0, previous + step.after_s - time.monotonic()))
        elif step.when is not None:
            observer = self._observer(step.when)
            try:
                while not conditions.trigger_holds(self.cluster.state, step.when, self.faults, observer):
                    await asyncio.sleep(POLL_S)
            finally:
                if observer is not None:
                    self.cluster.state.faults.remove(observer.id)

    def _observer(self, when: dict[str, Any]) -> FaultRule | None:
        if "request" not in when:
            return None
        matcher = {k: v for k, v in when["request"].items() if k != "count"}
        return self.cluster.state.faults.add({**matcher, "action": "observe", "times": None,
                                              "name": "scenario trigger"})

    async def _perform(self, step: Step) -> str:
        spec, state = step.spec, self.cluster.state
        if "fault" in spec:
            rule = state.faults.add(rule_from_dict(spec["fault"]))
            if rule.name:
                self.faults[rule.name] = rule
            return f"fault {rule.name or rule.id} added ({rule.action})"
        if "remove_fault" in spec:
            state.faults.remove(self.faults[spec["remove_fault"]].id)
            return f"fault {spec['remove_fault']} removed"
        action = {k: spec[k] for k in ("action", *ACTIONS[spec["action"]], *OPTIONAL.get(spec["action"], []))
                  if k in spec}
        if spec["action"] == "produce":
            action["prefix"] = self.scenario.name
        detail = await run_action(self.cluster, action)
        if spec["action"] == "reset":
            self.faults.clear()
        return detail

    # -- progress and the verdict ---------------------------------------------------------------
    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(PROGRESS_S)
            self._say(self.status_line())

    def status_line(self) -> str:
        state = self.cluster.state
        done = sum(1 for s in self.steps if s.at_s is not None)
        waiting = ""
        if self._current is not None:
            how = self._current.when and conditions.describe_trigger(self._current.when)
            waiting = f", next: {self._current.name}" + (f" (when {how})" if how else "")
        topics = ", ".join(f"{t['name']} {conditions.data_records(state, t['name']):,}" for t in self.scenario.topics)
        hits = ", ".join(f"{name} {r.hits}" for name, r in self.faults.items())
        return f"steps {done}/{len(self.steps)}{waiting} | records: {topics or '-'}" + (
            f" | fault hits: {hits}" if hits else "")

    def _say(self, text: str) -> None:
        if self.progress is not None:
            self.progress.write(f"[{self.elapsed:7.2f}s] {text}\n")
            self.progress.flush()

    def _evaluate(self, app_exit: int | None, app_ran: bool, error: str | None,
                  spark_audits: dict[int, tuple[bool, str]]) -> ScenarioResult:
        state = self.cluster.state
        audits: dict[str, TopicAudit] = {}
        expectations = list(self.scenario.expect)
        if app_ran and app_exit is not None and not any("app_exit" in e for e in expectations):
            expectations.append({"app_exit": 0})
        outcomes = [conditions.check(state, e, self.faults, app_exit, audits, spark_audits) for e in expectations]
        for topic in self.scenario.topics:
            conditions.check(state, {"records": {"topic": topic["name"], "at_least": 0}}, {}, None, audits)
        unreached = [s for s, step in zip(self.steps, self.scenario.steps, strict=True)
                     if s.at_s is None and not step.optional]
        passed = error is None and all(o.ok for o in outcomes) and not unreached and all(
            s.ok for s in self.steps if s.at_s is not None)
        rules = {r.id: r for r in state.faults.listed() if r.name != "scenario trigger"}
        rules.update({r.id: r for r in self.faults.values()})
        faults = [{"id": r.id, "name": r.name, "action": r.action, "hits": r.hits} for _, r in sorted(rules.items())]
        return ScenarioResult(self.scenario.name, passed, self.elapsed, self.steps, outcomes, app_exit, error,
                              {name: a.to_dict() for name, a in audits.items()}, faults)
