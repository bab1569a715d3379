"""Produce/consume in three modes against mockbroker and its peers, in one run (`make bench` has the rest).

    python -m bench.peers_bench [--records 100000] [--size 100] [--repeat 3]
                                [--mode plain|idempotent|transactional]

Load: confluent-kafka produces N records of S bytes to a 4-partition topic (acks=1, linger.ms=5),
then a consumer reads them all back with assign().  --mode idempotent turns on enable.idempotence
(acks=all); --mode transactional commits a transaction every 1,000 records and reads back with
isolation.level=read_committed.  Each broker runs as its own process (bench/peers.py; the librdkafka
mock keeps 5 MiB per partition, so keep N x S under 20 MB).  A peer that cannot be had is reported and
skipped.  Prints medians over --repeat runs (a fresh topic
each run) and mockbroker's time divided by the peer's (<= 1.0: mockbroker is at least as fast).
Also runs mockbroker with its request journal off (mock.journal.max.entries=0) to show what the journal
costs.  Start time and the other loads are in `make bench` (bench/suite.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from bench.peers import PARTITIONS, Peer, each_peer, start_mockbroker, start_rdkafka_mock, start_tansu

TXN_RECORDS = 1000


def producer_config(peer: Peer, topic: str, mode: str) -> dict[str, object]:
    conf: dict[str, object] = {"bootstrap.servers": peer.bootstrap, "acks": 1, "linger.ms": 5}
    if mode != "plain":
        conf.update({"enable.idempotence": True, "acks": "all"})
    if mode == "transactional":
        conf["transactional.id"] = f"bench-{topic}"
    return conf


def run_load(peer: Peer, topic: str, records: int, size: int, mode: str = "plain") -> tuple[float, float]:
    peer.create_topic(topic)
    value = b"x" * size
    producer = Producer(producer_config(peer, topic, mode))
    producer.list_topics(topic, timeout=10)
    transactional = mode == "transactional"
    if transactional:
        producer.init_transactions(30)
    start = time.perf_counter()
    for i in range(records):
        if transactional and i % TXN_RECORDS == 0:
            if i:
                producer.commit_transaction(60)
            producer.begin_transaction()
        while True:
            try:
                producer.produce(topic, value, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.005)
    if transactional:
        producer.commit_transaction(60)
    if producer.flush(120) != 0:
        raise RuntimeError(f"{peer.name}: produce did not finish")
    produce_s = time.perf_counter() - start
    consumer = Consumer({"bootstrap.servers": peer.bootstrap, "group.id": "bench", "enable.auto.commit": False,
                         "isolation.level": "read_committed" if transactional else "read_uncommitted"})
    start = time.perf_counter()
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = 0
    deadline = time.monotonic() + 120
    while got < records and time.monotonic() < deadline:
        for m in consumer.consume(min(10_000, records - got), 0.5):
            if m.error() is None:
                got += 1
    consume_s = time.perf_counter() - start
    consumer.close()
    if got != records:
        raise RuntimeError(f"{peer.name}: consumed {got} of {records}")
    return produce_s, consume_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mode", choices=("plain", "idempotent", "transactional"), default="plain")
    args = ap.parse_args()
    results: dict[str, tuple[float, float]] = {}

    def measure(name: str, peer: Peer) -> None:
        runs = [run_load(peer, f"bench-{i}", args.records, args.size, args.mode) for i in range(args.repeat)]
        results[name] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))

    each_peer((("mockbroker", start_mockbroker),
               ("mockbroker, no journal", lambda: start_mockbroker("mock.journal.max.entries=0")),
               ("librdkafka mock", start_rdkafka_mock), ("Tansu", start_tansu)), measure)
    acks = "acks=1" if args.mode == "plain" else "acks=all, idempotent"
    txns = f", a transaction per {TXN_RECORDS:,} records, read_committed" if args.mode == "transactional" else ""
    print(f"\nconfluent-kafka, {args.records:,} x {args.size} B, {PARTITIONS} partitions, {acks}{txns}, linger 5 ms; "
          f"median of {args.repeat}")
    print(f"{'broker':22} {'produce s':>10} {'consume s':>10} {'mb/peer produce':>16} {'mb/peer consume':>16}")
    ours = results.get("mockbroker")
    for name, (p, c) in results.items():
        ratio = f"{ours[0] / p:16.2f} {ours[1] / c:16.2f}" if ours and name != "mockbroker" else ""
        print(f"{name:22} {p:10.3f} {c:10.3f} {ratio}")
    return 0 if ours else 1


if __name__ == "__main__":
    sys.exit(main())
