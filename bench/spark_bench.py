"""Spark read benchmark: rows/s reading N x S-byte records through the mockbroker data source on local[2].

    python bench/spark_bench.py [--records 10000000] [--size 100] [--partitions 8] [--repeat 3]

A mockbroker runs in its own process; confluent-kafka fills a topic; Spark reads it all with
``format("mockbroker")`` into the ``noop`` sink (every row is built, nothing is kept).  Prints the
median time and rows/s (target >= 1M rows/s), and the sink's rows/s writing generated rows of the same size.
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from mockbroker.spark import register

    proc, bootstrap = start_broker()
    try:
        filled = fill(bootstrap, "bench", args.records, args.size, args.partitions)
        print(f"filled {args.records:,} x {args.size} B in {filled:.1f} s (confluent-kafka into mockbroker)")
        spark = (SparkSession.builder.master("local[2]").appName("mockbroker-bench")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.driver.memory", "4g").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        df = spark.read.format("mockbroker").option("kafka.bootstrap.servers", bootstrap).option(
            "subscribe", "bench").load()
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            df.write.format("noop").mode("overwrite").save()
            times.append(time.perf_counter() - started)
        read_s = statistics.median(times)
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
    finally:
        proc.terminate()
    print(f"read  {args.records:,} rows on local[2]: median {read_s:.2f} s over {args.repeat} -> "
          f"{args.records / read_s / 1e6:.2f}M rows/s (target >= 1M rows/s)")
    print(f"write {sample:,} generated rows (idempotent batches, 2 tasks): {write_s:.2f} s -> "
          f"{sample / write_s / 1e6:.2f}M rows/s (generating them alone: {generate_s:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
