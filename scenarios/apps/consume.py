"""Scenario app: M confluent-kafka consumers in one group (started --stagger seconds apart) read a topic
until the group has seen every value named v-0 .. v-(N-1) or value record numbers 0..N-1 produced by
a scenario ``produce`` step; exit 0 when every record was read at least once."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

from confluent_kafka import Consumer


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--members", type=int, default=1)
    parser.add_argument("--stagger", type=float, default=0.0)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=0, help="records per second per member (0 = no limit)")
    args = parser.parse_args()
    bootstrap = os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    keys: set[bytes | None] = set()
    lock = threading.Lock()
    done = threading.Event()
    deadline = time.monotonic() + args.timeout

    def member(index: int) -> None:
        time.sleep(index * args.stagger)
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": args.group, "auto.offset.reset": "earliest",
                             "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                             "topic.metadata.refresh.interval.ms": 1000, "client.id": f"member-{index}"})
        consumer.subscribe([args.topic])
        while not done.is_set() and time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is None or message.error() is not None:
                continue
            if args.rate:
                time.sleep(1 / args.rate)
            with lock:
                keys.add(message.key())
                if len(keys) >= args.count:
                    done.set()
        consumer.close()

    threads = [threading.Thread(target=member, args=(i,)) for i in range(args.members)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"consume: {len(keys)} of {args.count} distinct records read by {args.members} members", file=sys.stderr)
    return 0 if len(keys) >= args.count else 1


if __name__ == "__main__":
    sys.exit(main())
