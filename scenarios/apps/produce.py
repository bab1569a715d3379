"""Scenario app: produce N records with confluent-kafka at a steady rate, then (with --verify) read the
topic back with a read_committed consumer and check every value arrived once (or at least once with
--allow-duplicates).  Bootstrap servers come from KAFKA_BOOTSTRAP_SERVERS.  Exit 0 on success."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter

from confluent_kafka import Consumer, Producer, TopicPartition


def read_back(bootstrap: str, topic: str, expected: int, timeout: float) -> Counter[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"verify-{os.getpid()}",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "topic.metadata.refresh.interval.ms": 1000})
    metadata = consumer.list_topics(topic, timeout=10)
    partitions = sorted(metadata.topics[topic].partitions)
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    seen: Counter[str] = Counter()
    deadline = time.monotonic() + timeout
    idle_until = None
    while time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is None or message.error() is not None:
            if sum(seen.values()) >= expected:
                idle_until = idle_until or time.monotonic() + 1.0  # a moment more, to catch extra copies
                if time.monotonic() >= idle_until:
                    break
            continue
        seen[(message.value() or b"").decode()] += 1
    consumer.close()
    return seen


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topic", required=True)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=0, help="records per second (0 = as fast as possible)")
    parser.add_argument("--idempotent", action="store_true")
    parser.add_argument("--verify", action="store_true")
    parser.add_argument("--allow-duplicates", action="store_true")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    bootstrap = os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": args.idempotent, "linger.ms": 5,
            "retry.backoff.ms": 50, "message.timeout.ms": 60_000, "socket.timeout.ms": 3000,
            "topic.metadata.refresh.interval.ms": 1000}
    conf.update(dict(item.split("=", 1) for item in args.config))
    failures: list[str] = []

    def delivered(err, msg) -> None:
        if err is not None:
            failures.append(str(err))

    producer = Producer(conf)
    started = time.monotonic()
    for i in range(args.count):
        if i == 1:  # the first record waits for the producer to be ready (an idempotent one needs its id)
            producer.flush(30)
            started = time.monotonic()
        if args.rate:
            ahead = started + i / args.rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
        while True:
            try:
                producer.produce(args.topic, f"v-{i}".encode(), key=str(i).encode(), on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    left = producer.flush(90)
    took = time.monotonic() - started
    print(f"produce: {args.count} sent, {len(failures)} failed, {left} undelivered in {took:.1f}s", file=sys.stderr)
    if failures or left:
        print(f"produce: failures {failures[:5]}", file=sys.stderr)
        return 1
    if not args.verify:
        return 0
    seen = read_back(bootstrap, args.topic, args.count, 60)
    missing = [f"v-{i}" for i in range(args.count) if f"v-{i}" not in seen]
    extra = sum(n - 1 for n in seen.values() if n > 1)
    print(f"verify: {len(seen)} distinct values read, {len(missing)} missing, {extra} duplicates", file=sys.stderr)
    return 1 if missing or (extra and not args.allow_duplicates) else 0


if __name__ == "__main__":
    sys.exit(main())
