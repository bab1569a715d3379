"""Command line.

    mockbroker serve --brokers 3 --port 9092 --topic orders:6 --config key=value
    mockbroker serve --control-port 9644       # also the HTTP control API (docs: control/openapi.yaml)
    mockbroker serve --listeners PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9192 --sasl-user alice:secret
    mockbroker scenario run FILE [--app | --exec CMD] [--json]
    mockbroker scenario check FILE...
    mockbroker audit --bootstrap HOST:PORT --topic T [--json FILE]   # Spark job; needs mockbroker[spark]
    mockbroker decode FRAME...        # print decoded request frames (bytes after the size prefix)

``serve`` prints one line ``bootstrap.servers=HOST:PORT,...`` once it listens, so scripts can read
it (with several listeners, one more line ``listener.NAME=HOST:PORT,...`` per listener); ``--port 0``
picks free ports; Ctrl-C (or SIGTERM) shuts down cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import signal
import sys
from typing import Any

from mockbroker.codec_errors import CodecError
from mockbroker.errors import KafkaError
from mockbroker.protocol import api


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
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser (and, through ``add_subparsers``, every subparser) using :class:`_Formatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


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


def _env_int(name: str, default: int | None) -> int | None:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"mockbroker: {name} must be a number, not {raw!r}") from None


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


def _sasl_users(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        user, sep, password = item.partition(":")
        if not sep or not user:
            raise SystemExit("--sasl-user wants NAME:PASSWORD")
        out[user] = password
    return out


def _configs(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--config wants key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


async def _serve(args: argparse.Namespace) -> int:
    from mockbroker.cluster import MockCluster, parse_topic_spec

    cluster = None
    try:
        topics = dict(parse_topic_spec(t) for t in args.topic)
        cluster = MockCluster(brokers=args.brokers, host=args.host, port=args.port,
                              config=_configs(args.config), topics=topics, control_port=args.control_port,
                              control_host=args.control_host, control_token=args.control_token,
                              advertised_host=args.advertised_host, listeners=args.listeners,
                              advertised_listeners=args.advertised_listeners,
                              listener_security_protocol_map=args.listener_security_protocol_map,
                              sasl_users=_sasl_users(args.sasl_user), ssl_certfile=args.ssl_certfile,
                              ssl_keyfile=args.ssl_keyfile, ssl_cafile=args.ssl_cafile,
                              ssl_client_auth=args.ssl_client_auth, racks=args.racks)
        await cluster.start()
    except (OSError, KafkaError, ValueError) as exc:
        print(f"mockbroker: cannot start: {exc}", file=sys.stderr)
        if cluster is not None:
            await cluster.stop()
        return 1
    from mockbroker.server import collector

    collector.install()  # this process is the broker's own: keep the cycle collector's pauses short
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"bootstrap.servers={cluster.bootstrap_servers}", flush=True)
    if len(cluster.security.listeners) > 1:
        for spec in cluster.security.listeners:
            print(f"listener.{spec.name}={cluster.bootstrap_for(spec.name)}", flush=True)
    if cluster.control_url:
        print(f"control={cluster.control_url}", flush=True)
    await stop.wait()
    await cluster.stop()
    logging.getLogger("mockbroker").info("stopped")
    return 0


def _add_security_arguments(serve: Any) -> None:
    env = os.environ.get
    serve.add_argument("--listeners", default=env("MOCKBROKER_LISTENERS"),
                       help="Kafka's listeners, e.g. PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9192 "
                            "(port 0 = free; broker n uses port + n; default: PLAINTEXT on --host/--port; "
                            "$MOCKBROKER_LISTENERS)")
    serve.add_argument("--advertised-listeners", default=env("MOCKBROKER_ADVERTISED_LISTENERS"),
                       help="Kafka's advertised.listeners ($MOCKBROKER_ADVERTISED_LISTENERS)")
    serve.add_argument("--listener-security-protocol-map", default=env("MOCKBROKER_LISTENER_SECURITY_PROTOCOL_MAP"),
                       help="Kafka's listener.security.protocol.map, e.g. CLIENT:SASL_SSL")
    serve.add_argument("--sasl-user", action="append", default=[], metavar="NAME:PASSWORD",
                       help="a SASL user for PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (repeatable)")
    serve.add_argument("--ssl-certfile", default=env("MOCKBROKER_SSL_CERTFILE"),
                       help="PEM certificate chain (may hold the key) for SSL / SASL_SSL listeners")
    serve.add_argument("--ssl-keyfile", default=env("MOCKBROKER_SSL_KEYFILE"), help="PEM private key")
    serve.add_argument("--ssl-cafile", default=env("MOCKBROKER_SSL_CAFILE"),
                       help="PEM CA of client certificates (mutual TLS)")
    serve.add_argument("--ssl-client-auth", default=env("MOCKBROKER_SSL_CLIENT_AUTH"),
                       choices=("none", "requested", "required"),
                       help="Kafka's ssl.client.auth: SSL listeners only (KIP-684); one listener, SASL_SSL too: "
                            "--config listener.name.<listener>.ssl.client.auth=required")


def _add_scenario_parser(sub: Any) -> None:
    scenario = sub.add_parser("scenario", help="run or check declarative failure scenarios (YAML)")
    verbs = scenario.add_subparsers(dest="verb", required=True)
    run = verbs.add_parser("run", help="run a scenario file")
    run.add_argument("file")
    group = run.add_mutually_exclusive_group()
    group.add_argument("--app", action="store_true", help="run the scenario's own app command")
    group.add_argument("--exec", dest="exec_command", metavar="COMMAND",
                       help="run this command as the application (KAFKA_BOOTSTRAP_SERVERS set)")
    run.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    run.add_argument("--port", type=int, default=0, help="first broker's port (default: free ports)")
    run.add_argument("--host", default=os.environ.get("MOCKBROKER_HOST", "127.0.0.1"),
                     help="address to listen on (default 127.0.0.1; $MOCKBROKER_HOST)")
    run.add_argument("--advertised-host", default=os.environ.get("MOCKBROKER_ADVERTISED_HOST"),
                     help="host name Metadata gives clients ($MOCKBROKER_ADVERTISED_HOST)")
    run.add_argument("--control-port", type=int, default=None, help="also serve the HTTP control API here")
    run.add_argument("--quiet", action="store_true", help="no progress lines")
    check = verbs.add_parser("check", help="check scenario files without running them")
    check.add_argument("files", nargs="+")


def _parser(command: str | None) -> argparse.ArgumentParser:
    """The command line's parser; with ``command`` (the first argument names one) only that command's
    subparser is built: each parser costs argparse ~0.7 ms of gettext lookups, and ``serve`` is the
    broker's start."""
    parser = _Parser(prog="mockbroker", description="A mock Kafka broker.")
    sub = parser.add_subparsers(dest="command", required=True)
    if command is None:
        sub.add_parser("audit", add_help=False,
                       help="Spark audit of topics: gaps, duplicates, visible aborted records, order "
                            "(mockbroker[spark])")
    if command in (None, "decode"):
        dec = sub.add_parser("decode", help="decode request frames (the bytes after the size prefix)")
        dec.add_argument("frames", nargs="+")
    if command in (None, "serve"):
        _add_serve_parser(sub)
    if command in (None, "scenario"):
        _add_scenario_parser(sub)
    return parser


def _add_serve_parser(sub: Any) -> None:
    serve = sub.add_parser("serve", help="run mock brokers until Ctrl-C",
                           description="Options default to MOCKBROKER_* environment variables (the Docker image "
                                       "sets them), then to the values shown.")
    serve.add_argument("--brokers", type=int, default=_env_int("MOCKBROKER_BROKERS", 1),
                       help="number of brokers (default 1; $MOCKBROKER_BROKERS)")
    serve.add_argument("--host", default=os.environ.get("MOCKBROKER_HOST", "127.0.0.1"),
                       help="address to listen on (default 127.0.0.1; $MOCKBROKER_HOST)")
    serve.add_argument("--advertised-host", default=os.environ.get("MOCKBROKER_ADVERTISED_HOST"),
                       help="host name Metadata gives clients (default: --host, or 127.0.0.1 for a wildcard; "
                            "$MOCKBROKER_ADVERTISED_HOST)")
    serve.add_argument("--port", type=int, default=_env_int("MOCKBROKER_PORT", 9092),
                       help="first broker's port; the others follow it (0 = free ports; $MOCKBROKER_PORT)")
    serve.add_argument("--topic", action="append", default=[], metavar="NAME[:PARTITIONS]")
    serve.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                       help="broker config, Kafka names (e.g. auto.create.topics.enable=false)")
    serve.add_argument("--racks", default=os.environ.get("MOCKBROKER_RACKS") or None, metavar="RACK,RACK,...",
                       help="each broker's broker.rack, one per broker in node id order (e.g. a,b,c; "
                            "$MOCKBROKER_RACKS)")
    serve.add_argument("--control-port", type=int, default=_env_int("MOCKBROKER_CONTROL_PORT", None),
                       help="serve the HTTP control API on this port (0 = a free port; $MOCKBROKER_CONTROL_PORT)")
    serve.add_argument("--control-host", default=os.environ.get("MOCKBROKER_CONTROL_HOST", "127.0.0.1"),
                       help="control API address (default 127.0.0.1; $MOCKBROKER_CONTROL_HOST)")
    serve.add_argument("--control-token", default=os.environ.get("MOCKBROKER_CONTROL_TOKEN"),
                       help="require 'Authorization: Bearer TOKEN' on the control API "
                            "(default: $MOCKBROKER_CONTROL_TOKEN)")
    _add_security_arguments(serve)
    serve.add_argument("--log-level", default="INFO")


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["audit"]:  # a Spark job with its own options (needs mockbroker[spark])
        from mockbroker.spark.audit import main as audit_main

        return audit_main(args_in[1:])
    named = args_in[0] if args_in and args_in[0] in ("decode", "serve", "scenario") else None
    parser = _parser(named)
    args = parser.parse_args(argv)
    if args.command != "serve":
        gc.enable()  # off only while ``python -m mockbroker`` loaded the modules (see ``__main__``)
    if args.command == "decode":
        return _decode(args.frames)
    if args.command == "scenario":
        logging.basicConfig(level="WARNING", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        from mockbroker.scenarios import cli as scenario_cli  # YAML and JSON schema only when needed

        return scenario_cli.main(args)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _raise_open_files_limit()  # one descriptor per client connection
    try:
        import uvloop

        return uvloop.run(_serve(args))
    except ImportError:
        return asyncio.run(_serve(args))


if __name__ == "__main__":
    sys.exit(main())
