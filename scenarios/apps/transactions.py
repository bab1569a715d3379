"""Scenario app: a confluent-kafka transactional producer runs T transactions of R records, aborting every
K-th; then a read_committed consumer checks it sees exactly the committed records, each once."""

from __future__ import annotations

import argparse
import os
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topic", required=True)
    parser.add_argument("--transactions", type=int, default=20)
    parser.add_argument("--records", type=int, default=50)
    parser.add_argument("--abort-every", type=int, default=2)
    args = parser.parse_args()
    bootstrap = os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"storm-{os.getpid()}",
                         "linger.ms": 2, "retry.backoff.ms": 50})
    producer.init_transactions(30)
    committed: set[str] = set()
    for t in range(args.transactions):
        values = [f"t{t}-r{r}" for r in range(args.records)]
        producer.begin_transaction()
        for r, value in enumerate(values):
            producer.produce(args.topic, value.encode(), partition=r % 3)
        abort = args.abort_every and (t + 1) % args.abort_every == 0
        producer.flush(30)  # the records reach the partitions before the transaction ends, aborted or not
        for attempt in range(20):
            try:
                (producer.abort_transaction if abort else producer.commit_transaction)(30)
                break
            except KafkaException as exc:
                if not exc.args[0].retriable() or attempt == 19:
                    raise
                time.sleep(0.1)
        if not abort:
            committed.update(values)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "storm-check", "isolation.level": "read_committed",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(args.topic, p, 0) for p in range(3)])
    seen: list[str] = []
    deadline = time.monotonic() + 30
    quiet_since = time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - quiet_since < 1.5:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            seen.append((message.value() or b"").decode())
            quiet_since = time.monotonic()
    consumer.close()
    ok = sorted(seen) == sorted(committed)
    print(f"transactions: {len(committed)} committed records, read_committed consumer saw {len(seen)} "
          f"({len(set(seen))} distinct): {'exact' if ok else 'MISMATCH'}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
