"""The data directory's cost (docs/data-dir-and-snapshots.md): confluent-kafka producing 100k x 100 B to 4
partitions (acks=1, linger 5 ms, as bench.suite's c100k_produce; and acks=all with idempotence) to a
``mockbroker serve`` process in memory, with ``--data-dir``, and with ``--data-dir`` and
``mock.data.fsync=true``; then a 3-broker MockCluster started from a snapshot of 1M x 100 B records
(written by confluent-kafka in batches of ~1000 records).

    python -m bench.data_dir_bench [--repeat 5] [--records 100000]

Each figure is the median over --repeat runs (a fresh process and folder each run).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import loads
from bench.peers import start_mockbroker

PARTITIONS = 4
CONFS: dict[str, dict[str, Any]] = {
    "acks=1": {"acks": 1, "linger.ms": 5},
    "acks=all, idempotent": {"acks": "all", "linger.ms": 5, "enable.idempotence": True},
}


def produce_seconds(records: int, conf: dict[str, Any], *configs: str) -> float:
    peer = start_mockbroker(*configs)
    try:
        peer.create_topic("bench", PARTITIONS)
        return loads._produce(peer, "bench", records, 100, PARTITIONS, conf)
    finally:
        peer.proc.kill()
        peer.proc.wait()


def snapshot_start(records: int, folder: Path) -> tuple[float, float]:
    """(seconds to make a 3-broker MockCluster from a snapshot of ``records`` x 100 B and start it, of which
    reading the snapshot)."""
    from confluent_kafka import Producer

    from mockbroker.cluster import MockCluster
    from mockbroker.store import snapshot

    path = folder / "snap"
    if not path.exists():
        with MockCluster(brokers=3, topics={"big": 3}) as cluster:
            producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 1000,
                                 "batch.num.messages": 1000, "batch.size": 16 * 1024 * 1024,
                                 "queue.buffering.max.messages": 2_000_000})
            for i in range(records):
                while True:
                    try:
                        producer.produce("big", b"x" * 100, partition=i % 3)
                        break
                    except BufferError:
                        producer.poll(0.005)
            assert producer.flush(120) == 0
            batches = sum(len(p.batches) for p in cluster.state.topics["big"].partitions)
            print(f"snapshot: {records} records in {batches} batches")
            cluster.snapshot(path)
    started = time.perf_counter()
    cluster = MockCluster(brokers=3, snapshot=path)
    made = time.perf_counter()
    cluster.start_background()
    done = time.perf_counter()
    assert sum(p.next_offset for p in cluster.state.topics["big"].partitions) == records
    cluster.stop_background()
    from mockbroker.state.cluster import ClusterState

    state = ClusterState()
    read_started = time.perf_counter()
    snapshot.load(state, str(path))
    read = time.perf_counter() - read_started
    print(f"  made {made - started:.3f} s, started {done - made:.3f} s")
    return done - started, read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--snapshot-records", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for label, conf in CONFS.items():
            figures: dict[str, list[float]] = {"in memory": [], "data dir": [], "data dir + fsync": []}
            for run in range(args.repeat):
                figures["in memory"].append(produce_seconds(args.records, conf))
                for name, fsync in (("data dir", "false"), ("data dir + fsync", "true")):
                    folder = Path(tmp) / f"dd-{run}-{fsync}"
                    figures[name].append(produce_seconds(args.records, conf, f"mock.data.dir={folder}",
                                                         f"mock.data.fsync={fsync}"))
                    shutil.rmtree(folder, ignore_errors=True)
            base = statistics.median(figures["in memory"])
            for name, runs in figures.items():
                median = statistics.median(runs)
                print(f"{label:22} {name:18} {median:.3f} s  {args.records / median / 1000:7.0f}k records/s  "
                      f"{base / median:5.2f} x in memory")
        runs = [snapshot_start(args.snapshot_records, Path(tmp)) for _ in range(args.repeat)]
        print(f"3-broker start from a snapshot of {args.snapshot_records} records: "
              f"{statistics.median(r[0] for r in runs):.3f} s (reading the snapshot into a state: "
              f"{statistics.median(r[1] for r in runs):.3f} s)")


if __name__ == "__main__":
    main()
