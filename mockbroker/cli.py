"""Command line.

    mockbroker serve --brokers 3 --port 9092 --topic orders:6 --config key=value
    mockbroker decode FRAME...        # print decoded request frames (bytes after the size prefix)

``serve`` prints one line ``bootstrap.servers=HOST:PORT,...`` once it listens, so scripts can read
it; ``--port 0`` picks free ports; Ctrl-C (or SIGTERM) shuts down cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from mockbroker.codec_errors import CodecError
from mockbroker.errors import KafkaError
from mockbroker.protocol import api


def _decode(paths: list[Path]) -> int:
    status = 0
    for path in paths:
        try:
            req = api.decode_request(path.read_bytes())
        except CodecError as exc:
            print(f"{path}: cannot decode: {exc}")
            status = 1
            continue
        name = api.api_name(req.api_key)
        print(f"{path}: {name} v{req.api_version} correlation_id={req.correlation_id} client_id={req.client_id!r}")
        print(f"  {req.body!r}")
    return status


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
                              config=_configs(args.config), topics=topics)
        await cluster.start()
    except (OSError, KafkaError, ValueError) as exc:
        print(f"mockbroker: cannot start: {exc}", file=sys.stderr)
        if cluster is not None:
            await cluster.stop()
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"bootstrap.servers={cluster.bootstrap_servers}", flush=True)
    await stop.wait()
    await cluster.stop()
    logging.getLogger("mockbroker").info("stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mockbroker", description="A mock Kafka broker.")
    sub = parser.add_subparsers(dest="command", required=True)
    dec = sub.add_parser("decode", help="decode request frames (the bytes after the size prefix)")
    dec.add_argument("frames", nargs="+", type=Path)
    serve = sub.add_parser("serve", help="run mock brokers until Ctrl-C")
    serve.add_argument("--brokers", type=int, default=1, help="number of brokers (default 1)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=9092,
                       help="first broker's port; the others follow it (0 = free ports)")
    serve.add_argument("--topic", action="append", default=[], metavar="NAME[:PARTITIONS]")
    serve.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                       help="broker config, Kafka names (e.g. auto.create.topics.enable=false)")
    serve.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    if args.command == "decode":
        return _decode(args.frames)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        import uvloop

        return uvloop.run(_serve(args))
    except ImportError:
        return asyncio.run(_serve(args))


if __name__ == "__main__":
    sys.exit(main())
