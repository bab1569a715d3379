"""``mockbroker scenario list``, ``scenario show NAME|FILE``, ``scenario run NAME|FILE`` and ``scenario check
[NAME|FILE...]``: a scenario is a file path or a shipped scenario's name (an existing path wins).  ``list``
gives each shipped one's first sentence, whole; ``show`` prints the file (its description whole).

``check`` reports every problem of every file, one line each, and exits 2 when there is one.

``run`` starts the scenario's cluster, prints ``bootstrap.servers=...`` (stdout, or stderr with
``--json``), plays the timeline with a progress line a second on stderr, and ends when the application
exits (``--app`` runs the scenario's own ``app`` command, ``--exec`` any shell command line: ``/bin/sh -c``,
so ``$KAFKA_BOOTSTRAP_SERVERS`` expands and pipes work) or, with no
application, when every step has run and then the ``end`` trigger holds or, without one, on Ctrl-C or
SIGTERM (your own application has run against it meanwhile); the timeout bounds it all.  A step that
fails ends the run at once (and stops ``--app``/``--exec``) unless the scenario says ``on_failure:
continue``.  It prints a summary (JSON with ``--json``) and exits 0 when every step ran and every
expectation held, 1 when not, 2 when the file is wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import sys
import textwrap
from typing import Any

from mockbroker import early_signals
from mockbroker.errors import KafkaError
from mockbroker.scenarios import shipped
from mockbroker.scenarios.loader import Scenario, ScenarioError, load_file
from mockbroker.scenarios.runner import ScenarioRun

LIST_COLUMNS = 100  # scenario list's width: names, then descriptions wrapped under each other


def main(args: argparse.Namespace) -> int:
    if args.verb == "list":
        _list()
        return 0
    if args.verb == "show":
        try:
            path = shipped.resolve(args.file)
            text = path.read_text()
        except shipped.UnknownScenario as exc:
            print(exc, file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"{args.file}: cannot read: {exc.strerror}", file=sys.stderr)
            return 2
        print(f"# {path}")  # a YAML comment: the output is the scenario, to save and change
        print(text, end="" if text.endswith("\n") else "\n")
        return 0
    if args.verb == "check":
        status = 0
        for ref in args.files or shipped.names():
            try:
                scenario = load_file(ref)
                print(f"{ref}: ok ({scenario.name}: {len(scenario.steps)} steps, {len(scenario.expect)} expectations)")
            except ScenarioError as exc:
                print(exc, file=sys.stderr)
                status = 2
        return status
    try:
        scenario = load_file(args.file)
    except ScenarioError as exc:
        print(exc, file=sys.stderr)
        return 2
    command = _command(scenario, args)
    if args.app and command is None:
        print(f"{args.file}: the scenario has no app to run", file=sys.stderr)
        return 2
    if args.app and _ships_app(scenario) and importlib.util.find_spec("confluent_kafka") is None:
        print(f"{args.file}: the shipped apps use confluent-kafka: pip install confluent-kafka", file=sys.stderr)
        return 2
    try:
        import uvloop

        return uvloop.run(_run(scenario, args, command))
    except ImportError:
        return asyncio.run(_run(scenario, args, command))


def _list() -> None:
    """Each shipped scenario's name and the first sentence of its description, whole: wrapped under the
    description column (to the terminal's width, else 100), never cut; then the folder they are in."""
    columns = shutil.get_terminal_size((LIST_COLUMNS, 24)).columns
    names = shipped.names()
    width = max(map(len, names), default=0)
    room = max(columns - width - 2, 40)
    for name in names:
        lines = textwrap.wrap(shipped.summary(shipped.path_of(name)), room) or [""]
        print(f"{name:<{width}}  {lines[0]}".rstrip())
        for more in lines[1:]:
            print(f"{'':<{width}}  {more}")
    print(f"\n{len(names)} scenarios in {shipped.LIBRARY}; mockbroker scenario show NAME prints one in full")


def _ships_app(scenario: Scenario) -> bool:
    return scenario.path is not None and scenario.path.parent.resolve() == shipped.LIBRARY.resolve()


def _command(scenario: Scenario, args: argparse.Namespace) -> list[str] | str | None:
    """The application: ``--exec``'s shell command line (a string), or the scenario's ``app`` (argv)."""
    if args.exec_command:
        return str(args.exec_command)
    if args.app and scenario.app:
        return [word.replace("{python}", sys.executable).replace("{here}", str(scenario.here))
                for word in scenario.app]
    return None


async def _run(scenario: Scenario, args: argparse.Namespace, command: list[str] | str | None) -> int:
    out = sys.stderr if args.json else sys.stdout
    try:
        run = ScenarioRun(scenario, port=args.port, control_port=args.control_port, host=args.host,
                          advertised_host=args.advertised_host, progress=None if args.quiet else sys.stderr)
    except (KafkaError, ValueError) as exc:  # settings only the cluster itself can judge
        print(f"{args.file}: {exc.message if isinstance(exc, KafkaError) else exc}", file=sys.stderr)
        return 2
    try:
        await run.start_async()
    except OSError as exc:
        print(f"mockbroker: cannot start: {exc}", file=sys.stderr)
        await run.close_async()
        return 1
    except (KafkaError, ValueError) as exc:
        print(f"{args.file}: {exc.message if isinstance(exc, KafkaError) else exc}", file=sys.stderr)
        await run.close_async()
        return 2
    print(f"bootstrap.servers={run.bootstrap_servers}", file=out, flush=True)
    if run.cluster.schema_registry_url:
        print(f"schema.registry.url={run.cluster.schema_registry_url}", file=out, flush=True)
    if run.cluster.control_url:
        print(f"control={run.cluster.control_url}", file=out, flush=True)
        print(f"console={run.cluster.console_url}", file=out, flush=True)  # the scenario's steps as they play
    try:
        if command is not None:
            app_exit = await _run_app(command, run, args.json)
            result = await run.finish_async(app_exit, app_ran=True)
        else:
            result = await run.finish_async(stop=early_signals.stop_event())
    finally:
        await run.close_async()
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, sort_keys=True, default=str))
    else:
        print(result.report())
    return 0 if result.passed else 1


async def _run_app(command: list[str] | str, run: ScenarioRun, quiet_stdout: bool) -> int:
    """Run the application until it exits; Ctrl-C and SIGTERM are passed on to it.  It runs in a process group
    of its own, so that stopping it (a failed step, the timeout) stops what it started too (a shell's
    children).  Its stdin is empty when ours is a terminal (the terminal's keys are ours to pass on)."""
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": run.bootstrap_servers,
           "MOCKBROKER_BOOTSTRAP": run.bootstrap_servers}
    if run.cluster.schema_registry_url:
        env["SCHEMA_REGISTRY_URL"] = run.cluster.schema_registry_url
    if run.cluster.control_url:  # (with --control-port) the control API and the console, for the app's own checks
        env["MOCKBROKER_CONTROL_URL"] = run.cluster.control_url
        env["MOCKBROKER_CONSOLE_URL"] = run.cluster.console_url or ""
    grouped = hasattr(os, "killpg")
    options: dict[str, Any] = {"env": env, "stdout": sys.stderr.fileno() if quiet_stdout else None}
    if grouped:
        options["start_new_session"] = True  # (uvloop takes no process_group): a session, so a group, of its own
        options["stdin"] = asyncio.subprocess.DEVNULL if sys.stdin is not None and sys.stdin.isatty() else None
    try:
        if isinstance(command, str):  # --exec: a shell command line (/bin/sh -c), variables and pipes included
            process = await asyncio.create_subprocess_shell(command, **options)
        else:
            process = await asyncio.create_subprocess_exec(*command, **options)
    except OSError as exc:
        print(f"mockbroker: cannot run {command if isinstance(command, str) else command[0]}: {exc}", file=sys.stderr)
        return 127
    loop = asyncio.get_running_loop()
    passed_on = (signal.SIGINT, signal.SIGTERM) if grouped else ()
    for sig in passed_on:
        loop.add_signal_handler(sig, _signal_group, process.pid, sig)
    try:
        return await _wait_app(process, run)
    finally:
        for sig in passed_on:
            loop.remove_signal_handler(sig)


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def _wait_app(process: asyncio.subprocess.Process, run: ScenarioRun) -> int:
    remaining = max(run.scenario.timeout_s - run.elapsed, 0.0)
    exited = asyncio.ensure_future(process.wait())
    failed = asyncio.ensure_future(run.stopped.wait())
    try:
        await asyncio.wait([exited, failed], timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
    finally:
        failed.cancel()
    if exited.done():
        return exited.result()
    if hasattr(os, "killpg"):
        _signal_group(process.pid, signal.SIGKILL)
    else:
        process.kill()
    await process.wait()
    if run.failed is not None:
        print(f"mockbroker: step {run.failed.line_index + 1} ({run.failed.name}) failed; the app was stopped",
              file=sys.stderr)
    else:
        print(f"mockbroker: the app did not finish within {run.scenario.timeout_s:g}s; killed", file=sys.stderr)
    return -9
