"""``mockbroker dump TOPIC``: a topic's records over the wire, as the JSON Lines that seed data reads.

    mockbroker dump orders --bootstrap-server localhost:9092 [--partition N] [--output FILE]

Every partition (or one) is read from its log start to its end with the project's own client
(mockbroker.client), read_committed: control records and aborted transactions' records are left out,
and the end is the last stable offset (the high watermark unless a transaction is open).  One line a
record, partition by partition in offset order (the format: mockbroker.seed, docs/seed-and-dump.md).
The same bytes in give the same lines out, so dump -> seed -> dump is byte-identical.  A missing topic or
an unreachable broker is one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, Any

from mockbroker.client import EARLIEST, BrokerError, KafkaClient, KafkaClientError
from mockbroker.seed import bytes_to_json

READ_COMMITTED = 1
LOG_APPEND_TIME = 1


def record_line(partition: int, offset: int, timestamp: int, key: Any, value: Any,
                headers: list[tuple[str, bytes | None]]) -> str:
    """One record as its JSON Lines line (with the newline)."""
    obj = {"partition": partition, "offset": offset, "timestamp": timestamp, "key": bytes_to_json(key),
           "value": bytes_to_json(value), "headers": [[name, bytes_to_json(data)] for name, data in headers]}
    return json.dumps(obj, ensure_ascii=False) + "\n"


def dump_topic(bootstrap_servers: str, topic: str, out: IO[str], partition: int | None = None,
               timeout: float = 10.0) -> int:
    """Write ``topic``'s records to ``out``; returns how many.  ValueError (one line) for a missing topic
    or partition, an unreachable broker or a broker error."""
    try:
        client = KafkaClient(bootstrap_servers, client_id="mockbroker-dump", timeout=timeout)
    except BrokerError as exc:
        raise ValueError(f"cannot reach {bootstrap_servers}: {exc}") from None
    try:
        with client:
            client.refresh([topic])
            count = client.cluster.partitions.get(topic)
            if not count:
                raise ValueError(f"topic {topic!r} does not exist on {bootstrap_servers}")
            if partition is not None and not 0 <= partition < count:
                raise ValueError(f"topic {topic!r} has partitions 0..{count - 1}, not {partition}")
            written = 0
            for index in range(count) if partition is None else [partition]:
                written += _dump_partition(client, topic, index, out)
            return written
    except (BrokerError, KafkaClientError) as exc:
        raise ValueError(f"dump {topic}: {exc}") from None


def _dump_partition(client: KafkaClient, topic: str, index: int, out: IO[str]) -> int:
    start = client.list_offset(topic, index, EARLIEST)
    end = client.latest_offset(topic, index, READ_COMMITTED)
    written = 0
    for batch in client.read_all(topic, index, start, end, isolation_level=READ_COMMITTED):
        header = batch.header
        if header.is_control or batch.aborted:
            continue
        for r in batch.records:
            offset = header.base_offset + r.offset_delta
            if offset < start or offset >= end:
                continue
            timestamp = header.max_timestamp if header.timestamp_type == LOG_APPEND_TIME \
                else header.base_timestamp + r.timestamp_delta
            out.write(record_line(index, offset, timestamp, r.key, r.value, r.headers))
            written += 1
    return written


def add_parser(sub: Any) -> None:
    """The ``dump`` subcommand's arguments."""
    dump = sub.add_parser("dump", help="write a topic's records as JSON Lines (the format seed data reads)")
    dump.add_argument("topic", metavar="TOPIC")
    dump.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT", help="a broker to read from")
    dump.add_argument("--partition", type=int, default=None, metavar="N", help="only this partition")
    dump.add_argument("--output", default=None, metavar="FILE", help="write here (default: stdout)")


def main(args: argparse.Namespace) -> int:
    """Run ``dump``: 0, or one line on stderr and 2."""
    if args.output is None and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8")  # the lines are UTF-8 whatever the locale
    try:
        out: IO[str] = sys.stdout if args.output is None else open(args.output, "w", encoding="utf-8")
    except OSError as exc:
        sys.stderr.write(f"mockbroker dump: error: argument --output: {exc.strerror or exc}: {args.output}\n")
        return 2
    try:
        dump_topic(args.bootstrap_server, args.topic, out, args.partition)
    except ValueError as exc:
        sys.stderr.write(f"mockbroker dump: error: {' '.join(str(exc).split())}\n")
        return 2
    finally:
        if out is not sys.stdout:
            out.close()
        else:
            out.flush()
    return 0
