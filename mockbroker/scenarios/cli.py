"""``mockbroker scenario list``, ``mockbroker scenario run NAME|FILE`` and ``mockbroker scenario check
[NAME|FILE...]``: a scenario is a file path or a shipped scenario's name (an existing path wins).

``check`` reports every problem of every file, one line each, and exits 2 when there is one.

``run`` starts the scenario's cluster, prints ``bootstrap.servers=...`` (stdout, or stderr with
``--json``), plays the timeline with a progress line a second on stderr, and ends when the application
exits (``--app`` runs the scenario's own ``app`` command, ``--exec`` any command) or, with no
application, when every step has run and then the ``end`` trigger holds or, without one, on Ctrl-C or
SIGTERM (your own application has run against it meanwhile); the timeout bounds it all.  A step that
fails ends the run at once (and stops ``--app``/``--exec``) unless the scenario says ``on_failure:
continue``.  It prints a summary (JSON with ``--json``) and exits 0 when every step ran and every
expectation held, 1 when not, 2 when the file is wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import shlex
import signal
import sys

from mockbroker.errors import KafkaError
from mockbroker.scenarios import shipped
from mockbroker.scenarios.loader import Scenario, ScenarioError, load_file
from mockbroker.scenarios.runner import ScenarioRun


def main(args: argparse.Namespace) -> int:
    if args.verb == "list":
        names = shipped.names()
        width = max(map(len, names), default=0)
        room = max(100 - width - 2, 40)  # one short line each; `scenario check NAME` and the file say the rest
        for name in names:
            text = shipped.summary(shipped.path_of(name))
            print(f"{name:<{width}}  {text if len(text) <= room else text[:room - 1].rstrip() + '…'}")
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


def _ships_app(scenario: Scenario) -> bool:
    return scenario.path is not None and scenario.path.parent.resolve() == shipped.LIBRARY.resolve()


def _command(scenario: Scenario, args: argparse.Namespace) -> list[str] | None:
    if args.exec_command:
        return shlex.split(args.exec_command)
    if args.app and scenario.app:
        return [word.replace("{python}", sys.executable).replace("{here}", str(scenario.here))
                for word in scenario.app]
    return None


async def _run(scenario: Scenario, args: argparse.Namespace, command: list[str] | None) -> int:
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
    try:
        if command is not None:
            app_exit = await _run_app(command, run, args.json)
            result = await run.finish_async(app_exit, app_ran=True)
        else:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            result = await run.finish_async(stop=stop)
    finally:
        await run.close_async()
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, sort_keys=True, default=str))
    else:
        print(result.report())
    return 0 if result.passed else 1


async def _run_app(command: list[str], run: ScenarioRun, quiet_stdout: bool) -> int:
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": run.bootstrap_servers,
           "MOCKBROKER_BOOTSTRAP": run.bootstrap_servers}
    if run.cluster.schema_registry_url:
        env["SCHEMA_REGISTRY_URL"] = run.cluster.schema_registry_url
    try:
        process = await asyncio.create_subprocess_exec(*command, env=env,
                                                       stdout=sys.stderr.fileno() if quiet_stdout else None)
    except OSError as exc:
        print(f"mockbroker: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127
    remaining = max(run.scenario.timeout_s - run.elapsed, 0.0)
    exited = asyncio.ensure_future(process.wait())
    failed = asyncio.ensure_future(run.stopped.wait())
    try:
        await asyncio.wait([exited, failed], timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
    finally:
        failed.cancel()
    if exited.done():
        return exited.result()
    process.kill()
    await process.wait()
    if run.failed is not None:
        print(f"mockbroker: step {run.failed.line_index + 1} ({run.failed.name}) failed; the app was stopped",
              file=sys.stderr)
    else:
        print(f"mockbroker: the app did not finish within {run.scenario.timeout_s:g}s; killed", file=sys.stderr)
    return -9
