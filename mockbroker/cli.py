"""Command line: ``mockbroker decode FRAME...`` prints decoded request frames; ``serve`` runs the
broker (not built yet: it arrives with the core-broker issue)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mockbroker.codec_errors import CodecError
from mockbroker.protocol import api


def _decode(paths: list[Path]) -> int:
    status = 0
    for path in paths:
        data = path.read_bytes()
        try:
            req = api.decode_request(data)
        except CodecError as exc:
            print(f"{path}: cannot decode: {exc}")
            status = 1
            continue
        name = api.api_name(req.api_key)
        print(f"{path}: {name} v{req.api_version} correlation_id={req.correlation_id}", end=" ")
        print(f"client_id={req.client_id!r}")
        print(f"  {req.body!r}")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mockbroker", description="A mock Kafka broker.")
    sub = parser.add_subparsers(dest="command", required=True)
    dec = sub.add_parser("decode", help="decode request frames (the bytes after the size prefix)")
    dec.add_argument("frames", nargs="+", type=Path)
    serve = sub.add_parser("serve", help="run the broker")
    serve.add_argument("--brokers", type=int, default=1)
    serve.add_argument("--port", type=int, default=9092)
    serve.add_argument("--topic", action="append", default=[])
    serve.add_argument("--config", action="append", default=[])
    args = parser.parse_args(argv)
    if args.command == "decode":
        return _decode(args.frames)
    print("mockbroker serve: the broker itself is not built yet (see the core-broker issue);"
          " this release has the wire and records codecs only.", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
