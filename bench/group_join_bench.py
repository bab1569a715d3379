"""Group join benchmark: time from subscribe() to the first assignment, against mockbroker and its peers.

    python -m bench.group_join_bench [--members 1,3] [--repeat 5]

A fresh group each run: N confluent-kafka consumers (for each N in --members) subscribe to a 4-partition
topic at once; the time is until every member holds a non-empty assignment (all partitions handed out).
mockbroker is measured with the classic protocol (group.initial.rebalance.delay.ms is 0 here, and with
100 ms) and with KIP-848 (group.protocol=consumer); the peers (librdkafka's mock cluster, Tansu) with the
classic protocol, as they serve it.  Brokers run as their own processes (see peers.py).  Prints medians and
mockbroker's time divided by each peer's (<= 1.0: mockbroker is at least as fast).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from confluent_kafka import Consumer, Producer

from bench.peers import PARTITIONS, Peer, each_peer, start_mockbroker, start_rdkafka_mock, start_tansu

TIMEOUT_S = 60


def join_time(peer: Peer, topic: str, members: int, protocol: str) -> float:
    peer.create_topic(topic)
    Producer({"bootstrap.servers": peer.bootstrap}).list_topics(topic, timeout=10)
    conf: dict[str, object] = {"bootstrap.servers": peer.bootstrap, "group.id": f"join-{topic}"}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"  # the session timeout is the broker's then
    else:
        conf["session.timeout.ms"] = 10000
    consumers = [Consumer(conf) for _ in range(members)]
    try:
        start = time.perf_counter()
        for c in consumers:
            c.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            for c in consumers:
                c.poll(0.01)
            owned = [len(c.assignment()) for c in consumers]
            if all(owned) and sum(owned) == PARTITIONS:
                return time.perf_counter() - start
        raise RuntimeError(f"{peer.name}: no full assignment within {TIMEOUT_S} s ({owned})")
    finally:
        for c in consumers:
            c.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", default="1,3", help="comma-separated member counts")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    counts = [int(n) for n in args.members.split(",")]
    protocols = {"mockbroker KIP-848": "consumer"}
    cases = (("mockbroker", start_mockbroker),
             ("mockbroker delay 100", lambda: start_mockbroker("group.initial.rebalance.delay.ms=100")),
             ("mockbroker KIP-848", start_mockbroker), ("librdkafka mock", start_rdkafka_mock), ("Tansu", start_tansu))
    results: dict[tuple[str, int], float] = {}

    def measure(name: str, peer: Peer) -> None:
        for n in counts:
            runs = [join_time(peer, f"join-{n}-{i}", n, protocols.get(name, "classic")) for i in range(args.repeat)]
            results[(name, n)] = statistics.median(runs)

    each_peer(cases, measure)
    print(f"\nconfluent-kafka, {PARTITIONS} partitions: subscribe() to a full assignment; median of {args.repeat}")
    print(f"{'broker':22} {'members':>7} {'join s':>8} {'mockbroker / peer':>18}")
    for n in counts:
        ours = results.get(("mockbroker", n))
        for (name, members), t in results.items():
            if members != n:
                continue
            ratio = f"{ours / t:18.3f}" if ours is not None and not name.startswith("mockbroker") else ""
            print(f"{name:22} {n:7} {t:8.3f} {ratio}")
    return 0 if any(name == "mockbroker" for name, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
