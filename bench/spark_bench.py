"""Spark read benchmark: rows/s reading N x S-byte records through the mockbroker data source on local[2]
and on a Spark standalone cluster of two one-core workers on 127.0.0.1 (executors get mockbroker from the
archive, mockbroker.spark.ship).

    python bench/spark_bench.py [--records 10000000] [--size 100] [--partitions 8] [--repeat 3]
                                [--where local|standalone|both]

A mockbroker runs in its own process; confluent-kafka fills a topic; Spark reads it all with
``format("mockbroker")`` into the ``noop`` sink (every row is built, nothing is kept).  Prints the
median time and rows/s (target >= 1M rows/s) of each, the sink's rows/s writing generated rows of the same
size, and the standalone cluster's read rows/s over local[2]'s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from confluent_kafka import Producer


def start_broker() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--log-level", "WARNING"],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()  # type: ignore[union-attr]
    return proc, line.split("=", 1)[1]


def fill(bootstrap: str, topic: str, records: int, size: int, partitions: int) -> float:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(10)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                  "queue.buffering.max.messages": 1_000_000, "compression.type": "none"})
    value = b"x" * size
    started = time.perf_counter()
    for i in range(records):
        while True:
            try:
                p.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.005)
    assert p.flush(600) == 0
    return time.perf_counter() - started


def measure(master: str, bootstrap: str, args: argparse.Namespace, shipped: bool) -> tuple[float, float, float]:
    """(median read seconds, write seconds, generate seconds) on ``master``; ``shipped``: executors get
    mockbroker from the archive (mockbroker.spark.ship), as on a cluster whose nodes lack it."""
    from pyspark.sql import SparkSession

    from mockbroker.spark import register, ship

    spark = (SparkSession.builder.master(master).appName("mockbroker-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "4g").config("spark.cores.max", "2")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    (ship if shipped else register)(spark)
    df = spark.read.format("mockbroker").option("kafka.bootstrap.servers", bootstrap).option(
        "subscribe", "bench").load()
    times = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        times.append(time.perf_counter() - started)
    sample = min(args.records, 2_000_000)
    started = time.perf_counter()
    rows = spark.range(0, sample, 1, 2).selectExpr(f"CAST(repeat('x', {args.size}) AS BINARY) AS value")
    rows.write.format("noop").mode("overwrite").save()  # generating the rows, timed apart below
    generate_s = time.perf_counter() - started
    started = time.perf_counter()
    (rows.write.format("mockbroker").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", "bench-out").mode("append").save())
    write_s = time.perf_counter() - started
    spark.stop()
    return statistics.median(times), write_s, generate_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--where", choices=["local", "standalone", "both"], default="both",
                    help="local[2], a standalone cluster of two one-core workers on 127.0.0.1, or both (default)")
    args = ap.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from mockbroker.spark.standalone import StandaloneCluster

    proc, bootstrap = start_broker()
    results = {}
    try:
        filled = fill(bootstrap, "bench", args.records, args.size, args.partitions)
        print(f"filled {args.records:,} x {args.size} B in {filled:.1f} s (confluent-kafka into mockbroker)")
        if args.where in ("local", "both"):
            results["local[2]"] = measure("local[2]", bootstrap, args, shipped=False)
        if args.where in ("standalone", "both"):
            with StandaloneCluster(workers=2, cores=1, memory="4g") as cluster:
                results["standalone, 2 workers x 1 core"] = measure(cluster.master_url, bootstrap, args, shipped=True)
    finally:
        proc.terminate()
    sample = min(args.records, 2_000_000)
    for where, (read_s, write_s, generate_s) in results.items():
        print(f"{where}: read {args.records:,} rows: median {read_s:.2f} s over {args.repeat} -> "
              f"{args.records / read_s / 1e6:.2f}M rows/s; write {sample:,} generated rows: {write_s:.2f} s -> "
              f"{sample / write_s / 1e6:.2f}M rows/s (generating them alone: {generate_s:.2f} s)")
    if len(results) == 2:
        local, standalone = (args.records / r[0] for r in results.values())
        print(f"standalone read rows/s over local[2]'s: {standalone / local:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
