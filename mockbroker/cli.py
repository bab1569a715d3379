"""Command line.

    mockbroker serve --brokers 3 --port 9092 --topic orders:6 --config key=value
    mockbroker serve --control-port 9644       # also the HTTP control API (docs: control/openapi.yaml)
    mockbroker serve --latency realistic       # every API as slow as Kafka's (mockbroker/faults/latency.py)
    mockbroker serve --report run.html         # when stopped: the HTML report of what the brokers saw
    mockbroker serve --listeners PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9192 --sasl-user alice:secret
    mockbroker scenario list                   # mockbroker scenario show NAME: one in full
    mockbroker scenario run NAME|FILE [--app | --exec 'SHELL COMMAND'] [--json]
    mockbroker scenario check [NAME|FILE...]
    mockbroker audit --bootstrap-server HOST:PORT --topic T [--json FILE]   # Spark job; needs mockbroker[spark]
    mockbroker decode FRAME...        # print decoded request frames (bytes after the size prefix)
    mockbroker serve --seed orders=orders.jsonl; mockbroker dump orders --bootstrap-server HOST:PORT  # seed.py, dump.py

``serve`` prints one line ``bootstrap.servers=HOST:PORT,...`` once it listens, so scripts can read
it (with several listeners, one more line ``listener.NAME=HOST:PORT,...`` per listener); ``--port 0``
picks free ports; Ctrl-C (or SIGTERM), at any moment from the process's start, shuts down cleanly
and exits 0.  Bad input (a flag's value, an unknown ``--config`` key, a port in use) is one line on
stderr naming the flag, exit status 2, checked before anything listens.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import gc
import logging
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from mockbroker import cli_values as values
from mockbroker import early_signals
from mockbroker.cli_serve_args import add_serve_parser
from mockbroker.cli_values import fail
from mockbroker.codec_errors import CodecError
from mockbroker.errors import KafkaError
from mockbroker.protocol import api

if TYPE_CHECKING:
    from collections.abc import Callable

    from mockbroker.cluster import MockCluster

T = TypeVar("T")


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter told the terminal's width, as ``shutil.get_terminal_size`` would find
    it: argparse makes a formatter for every argument added and imports shutil (with bz2 and lzma,
    3-6 ms of the broker's start) to find the width itself."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _terminal_columns() - 2 if width is None else width)


def _terminal_columns() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            # (sys.__stdout__ is None without a stdout: the AttributeError is caught)
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser (and, through ``add_subparsers``, every subparser) using :class:`_Formatter`,
    whose errors are one line (no usage block: ``--help`` shows it)."""

    serve: argparse.ArgumentParser | None = None  # the top parser's ``serve`` subparser, when built

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        fail(f"{self.prog}: error: {message} (see {self.prog} --help)")


def _version() -> str:
    """The installed distribution's version, else the package's ``__version__`` (a source tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mockbroker")
    except PackageNotFoundError:
        from mockbroker import __version__

        return __version__


def _decode(paths: list[str]) -> int:
    status = 0
    for path in paths:
        try:
            with open(path, "rb") as file:
                req = api.decode_request(file.read())
        except CodecError as exc:
            print(f"{path}: cannot decode: {exc}")
            status = 1
            continue
        name = api.api_name(req.api_key)
        print(f"{path}: {name} v{req.api_version} correlation_id={req.correlation_id} client_id={req.client_id!r}")
        print(f"  {req.body!r}")
    return status


def _raise_open_files_limit() -> None:
    """Lift the soft RLIMIT_NOFILE to the hard limit (as the JVM running Kafka does by default,
    MaxFDLimit): every client connection is a descriptor, and a soft limit of 1024 would refuse
    the 1,000th client."""
    try:
        import resource
    except ImportError:  # not on this platform
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard or soft == resource.RLIM_INFINITY:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:
        logging.getLogger("mockbroker").warning("cannot raise the open files limit from %s: %s", soft, exc)


def _check_serve(args: argparse.Namespace, blame: Callable[[str], str | None] | None = None) -> MockCluster:
    """The MockCluster ``serve`` asks for, made (nothing listens yet) after checking each flag: the
    first problem ends the command (one line naming the flag, exit status 2; ``blame``: the ``KAFKA_*`` variable
    whose value a message quotes, named instead of a flag)."""
    from mockbroker.cluster import MockCluster
    from mockbroker.server.listeners import parse_advertised, parse_listeners, parse_protocol_map
    from mockbroker.state.config import BrokerConfig
    from mockbroker.state.replica_selector import parse_racks

    def check(flag: str, fn: Callable[..., T], *fn_args: Any) -> T:
        try:
            return fn(*fn_args)
        except KafkaError as exc:
            fail(f"mockbroker serve: error: argument {flag}: {exc.message}")
        except ValueError as exc:
            fail(f"mockbroker serve: error: argument {flag}: {_without_head(str(exc))}")

    configs = dict(args.config)
    check("--config", BrokerConfig, configs)
    check("--listener-security-protocol-map", parse_protocol_map, args.listener_security_protocol_map)
    listeners = check("--listeners", parse_listeners, args.listeners, args.listener_security_protocol_map,
                      args.host, args.port)
    if args.listeners:
        for spec in listeners:
            if spec.port and spec.port + args.brokers - 1 > 65535:  # broker n listens on port + n
                fail(f"mockbroker serve: error: argument --listeners: {args.brokers} brokers from port "
                     f"{spec.port} ({spec.name}) go past port 65535")
    check("--advertised-listeners", parse_advertised, args.advertised_listeners, listeners)
    check("--racks", parse_racks, args.racks, args.brokers)
    replication = int(configs.get("default.replication.factor", 1))
    if args.topic and replication > args.brokers:  # the --topic topics are created as the brokers start
        fail(f"mockbroker serve: error: argument --config: default.replication.factor={replication} is more than "
             f"the {args.brokers} broker(s) the --topic topics can be placed on (--brokers)")
    seed = None
    if args.seed:  # (the seed files are read by MockCluster, below)
        from mockbroker.seed import from_flags

        seed = check("--seed", from_flags, args.seed, args.seed_value_schema, args.seed_key_schema)
    try:
        return MockCluster(seed=seed, data_dir=args.data_dir, snapshot=args.snapshot, brokers=args.brokers,
                           host=args.host, port=args.port, config=configs,
                           topics=dict(args.topic), control_port=args.control_port,
                           control_host=args.control_host, control_token=args.control_token,
                           advertised_host=args.advertised_host, listeners=args.listeners,
                           advertised_listeners=args.advertised_listeners,
                           listener_security_protocol_map=args.listener_security_protocol_map,
                           sasl_users=dict(args.sasl_user), ssl_certfile=args.ssl_certfile,
                           ssl_keyfile=args.ssl_keyfile, ssl_cafile=args.ssl_cafile,
                           ssl_client_auth=args.ssl_client_auth, racks=args.racks,
                           schema_registry=False if args.schema_registry_port is None else args.schema_registry_port,
                           schema_registry_host=args.schema_registry_host, latency=args.latency,
                           oidc=False if args.oidc_port is None else {"host": args.oidc_host, "port": args.oidc_port})
    except (KafkaError, ValueError, OSError) as exc:
        message = (exc.message or str(exc)) if isinstance(exc, KafkaError) else str(exc)
        source = blame(message) if blame is not None else None
        if source is not None:
            fail(f"mockbroker serve: error: --kafka-env: {source}: {_without_head(message)}")
        flag = "--seed" if seed is not None and _is_seed_error(exc) else _flag_of(message)
        fail(f"mockbroker serve: error: {'argument ' + flag + ': ' if flag else ''}{_without_head(message)}")


def _is_seed_error(exc: BaseException) -> bool:
    from mockbroker.seed import SeedError

    return isinstance(exc, SeedError)


def _without_head(message: str) -> str:
    """``port: 2 brokers ...`` -> ``2 brokers ...`` (the flag is named already)."""
    head, sep, rest = message.partition(": ")
    return rest if sep and head in ("port", "brokers", "topics", "control_port", "racks") else message


def _flag_of(message: str) -> str | None:
    """The flag a MockCluster error names (``port: ...`` -> ``--port``), TLS ones by their subject."""
    head = message.partition(":")[0]
    flags = {"port": "--port", "brokers": "--brokers", "topics": "--topic", "control_port": "--control-port",
             "control API": "--control-port", "schema registry": "--schema-registry-port",
             "OIDC provider": "--oidc-port"}
    if head in flags:
        return flags[head]
    lowered = message.lower()
    if "listener.name." in lowered:
        return "--config"
    if "ssl" in lowered or "certificate" in lowered or "pem" in lowered:
        return "--ssl-certfile"
    return None


def cluster_listeners_given(cluster: MockCluster) -> bool:
    """Whether the cluster listens where ``--listeners`` said (else on ``--host``/``--port``)."""
    return bool(cluster.state.config.get("listeners"))


async def _serve(cluster: MockCluster, report: str | None = None) -> int:
    """Run ``cluster`` until SIGINT or SIGTERM (which may come while it starts: start is abandoned); then write
    the HTML report to ``report`` when given."""
    stop = early_signals.stop_event()
    if stop.is_set():  # Ctrl-C while the modules loaded
        return 0
    starting = asyncio.ensure_future(cluster.start())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait((starting, stopping), return_when=asyncio.FIRST_COMPLETED)
    if not starting.done():  # a signal while starting: the start undoes itself (MockCluster.start)
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        return 0
    stopping.cancel()
    exc = starting.exception()
    if isinstance(exc, OSError):  # a port in use, an address not here: name the flag that chose it
        message = " ".join((exc.strerror or str(exc)).split())  # (strerror: no "[Errno 98]")
        given = cluster_listeners_given(cluster)
        flag = _flag_of(message) or ("--listeners" if given else
                                     "--host" if exc.errno == errno.EADDRNOTAVAIL else "--port")
        print(f"mockbroker serve: error: argument {flag}: cannot listen: {message}", file=sys.stderr, flush=True)
        return 2
    if exc is not None:
        message = " ".join(((exc.message or str(exc)) if isinstance(exc, KafkaError) else str(exc)).split())
        print(f"mockbroker serve: error: cannot start: {message}", file=sys.stderr, flush=True)
        return 2
    from mockbroker.server import collector

    collector.install()  # this process is the broker's own: keep the cycle collector's pauses short
    print(f"bootstrap.servers={cluster.bootstrap_servers}", flush=True)
    if len(cluster.security.listeners) > 1:
        for spec in cluster.security.listeners:
            print(f"listener.{spec.name}={cluster.bootstrap_for(spec.name)}", flush=True)
    if cluster.control_url:
        print(f"control={cluster.control_url}", flush=True)
        print(f"console={cluster.console_url}", flush=True)  # the web console, on the control API's port
    if cluster.schema_registry_url:
        print(f"schema.registry.url={cluster.schema_registry_url}", flush=True)
    if cluster.oidc is not None:  # what clients and other brokers are configured with
        print(f"sasl.oauthbearer.token.endpoint.url={cluster.oidc.token_url}", flush=True)
        print(f"sasl.oauthbearer.jwks.endpoint.url={cluster.oidc.jwks_url}", flush=True)
    await stop.wait()
    status = _write_report(cluster, report) if report else 0
    await cluster.stop()
    logging.getLogger("mockbroker").info("stopped")
    return status


def _write_report(cluster: MockCluster, path: str) -> int:
    """``--report PATH``: the HTML report of the cluster as it is, written before it stops; one line either way."""
    try:
        written = cluster.write_report(path, title="mockbroker serve")  # (on the cluster's loop: this one)
    except OSError as exc:
        print(f"mockbroker serve: error: argument --report: cannot write {path}: {exc.strerror or exc}",
              file=sys.stderr, flush=True)
        return 1
    print(f"report={written}", flush=True)
    return 0


class _VersionAction(argparse.Action):
    """``--version``: ``mockbroker <version>`` (the version is looked up only when asked for)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(f"mockbroker {_version()}")
        parser.exit(0)


def _add_scenario_parser(sub: Any) -> None:
    scenario = sub.add_parser("scenario", help="list, run or check declarative failure scenarios (YAML)",
                              description="A scenario is a YAML file or the name of a shipped one "
                                          "(mockbroker scenario list); an existing file path wins.")
    verbs = scenario.add_subparsers(dest="verb", required=True, metavar="{list,show,run,check}")
    verbs.add_parser("list", help="list the shipped scenarios, each with the first sentence of its description")
    verbs.add_parser("show", help="print a scenario's file, its description whole").add_argument(
        "file", metavar="NAME|FILE", help="a shipped scenario's name (see list) or a scenario file")
    run = verbs.add_parser("run", help="run a scenario: a shipped name or a file")
    run.add_argument("file", metavar="NAME|FILE", help="a shipped scenario's name (see list) or a scenario file")
    group = run.add_mutually_exclusive_group()
    group.add_argument("--app", action="store_true", help="run the scenario's own app command")
    group.add_argument("--exec", dest="exec_command", metavar="COMMAND",
                       help="run this shell command as the application (/bin/sh -c: $KAFKA_BOOTSTRAP_SERVERS "
                            "expands, pipes work)")
    run.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    run.add_argument("--port", type=values.port, default=0, help="first broker's port (default: free ports)")
    run.add_argument("--host", default=os.environ.get("MOCKBROKER_HOST", "127.0.0.1"),
                     help="address to listen on (default 127.0.0.1; $MOCKBROKER_HOST)")
    run.add_argument("--advertised-host", default=os.environ.get("MOCKBROKER_ADVERTISED_HOST"),
                     help="host name Metadata gives clients ($MOCKBROKER_ADVERTISED_HOST)")
    run.add_argument("--control-port", type=values.port, default=None,
                     help="also serve the HTTP control API here (0 = a free port)")
    run.add_argument("--quiet", action="store_true", help="no progress lines")
    check = verbs.add_parser("check", help="check scenarios against the cluster each declares, without running "
                                           "them; every problem, one line each (exit 2)")
    check.add_argument("files", nargs="*", metavar="NAME|FILE",
                       help="shipped scenario names or scenario files (default: every shipped scenario)")


def _parser(command: str | None) -> argparse.ArgumentParser:
    """The command line's parser; with ``command`` (the first argument names one) only that command's
    subparser is built: each parser costs argparse ~0.7 ms of gettext lookups, and ``serve`` is the
    broker's start."""
    parser = _Parser(prog="mockbroker", description="A mock Kafka broker.")
    parser.add_argument("--version", action=_VersionAction, help="print mockbroker's version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    if command is None:
        sub.add_parser("audit", add_help=False,
                       help="Spark audit of topics: gaps, duplicates, visible aborted records, order "
                            "(mockbroker[spark])")
    if command in (None, "decode"):
        dec = sub.add_parser("decode", help="decode request frames (the bytes after the size prefix)")
        dec.add_argument("frames", nargs="+", metavar="FRAME", help="a file holding one request frame")
    if command in (None, "serve"):
        parser.serve = add_serve_parser(sub)
    if command in (None, "scenario"):
        _add_scenario_parser(sub)
    if command in (None, "dump"):
        from mockbroker import dump

        dump.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] != ["serve"]:
        early_signals.restore()  # only serve keeps the signals caught during start-up (mockbroker.__main__)
    if args_in[:1] == ["audit"]:  # a Spark job with its own options (needs mockbroker[spark])
        from mockbroker.spark import audit

        audit_parser = _Parser(prog="mockbroker audit", description=audit.__doc__,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        audit.add_arguments(audit_parser)
        return audit.main(audit_parser.parse_args(args_in[1:]))
    named = args_in[0] if args_in and args_in[0] in ("decode", "serve", "scenario", "dump") else None
    parser = _parser(named)
    args = parser.parse_args(argv)
    if args.command != "serve":
        gc.enable()  # off only while ``python -m mockbroker`` loaded the modules (see ``__main__``)
    if args.command == "decode":
        return _decode(args.frames)
    if args.command == "dump":
        from mockbroker import dump

        return dump.main(args)
    if args.command == "scenario":
        logging.basicConfig(level="WARNING", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        from mockbroker.scenarios import cli as scenario_cli  # YAML and JSON schema only when needed

        return scenario_cli.main(args)
    kafka_env = None
    if args.kafka_env:  # Kafka's image conventions: the variables become flag defaults (mockbroker.cli_kafka_env)
        from mockbroker import cli_kafka_env

        logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        kafka_env = cli_kafka_env.read(os.environ)
        special = cli_kafka_env.special_service(kafka_env)
        if special is not None:
            return special
        assert isinstance(parser, _Parser) and parser.serve is not None
        parser.serve.set_defaults(**cli_kafka_env.serve_defaults(kafka_env))
        args = parser.parse_args(argv)
        cli_kafka_env.announce(kafka_env)
    # (logging first: opening a data directory may report a damaged last write it cut off)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cluster = _check_serve(args, kafka_env.source_of if kafka_env is not None else None)  # before anything listens
    if kafka_env is not None and kafka_env.registry is not None:
        cluster.registry_compatibility = kafka_env.registry.compatibility
    _raise_open_files_limit()  # one descriptor per client connection
    uvloop: ModuleType | None
    try:
        import uvloop
    except ImportError:
        uvloop = None
    early_signals.defer()  # a signal from now on is noted, and read by _serve
    if early_signals.received:  # (a signal while main() was called without the early handlers)
        return 0
    try:
        serving = _serve(cluster, args.report)
        return uvloop.run(serving) if uvloop is not None else asyncio.run(serving)
    finally:
        early_signals.ignore()  # stopped: a second Ctrl-C must not interrupt the exit with a traceback


if __name__ == "__main__":
    sys.exit(main())
