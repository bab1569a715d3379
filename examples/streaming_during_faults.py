"""A Structured Streaming job consuming from mockbroker while a fault scenario plays.

    python examples/streaming_during_faults.py        # needs mockbroker[spark] and confluent-kafka

The scenario (examples/streaming-faults.yaml) takes a broker down while an idempotent confluent-kafka
producer writes 12,000 clicks, slows every fetch, then brings the broker back.  Meanwhile a Spark
streaming query reads the topic through the ``mockbroker`` data source every second into a memory table.
At the end the job checks that Spark saw every click exactly once, and the scenario checks the topic.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Producer
from pyspark.sql import SparkSession

from mockbroker.scenarios import ScenarioRun
from mockbroker.spark import register

HERE = Path(__file__).resolve().parent
CLICKS = 12_000


def produce(bootstrap: str, done: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                         "socket.timeout.ms": 3000, "topic.metadata.refresh.interval.ms": 1000})
    for i in range(CLICKS):
        producer.produce("clicks", f"click-{i}".encode(), key=f"user-{i % 100}".encode())
        producer.poll(0)
        time.sleep(1 / 2000)  # 2,000 clicks a second, so the faults land mid-stream
    producer.flush(60)
    done.set()


def main() -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = Path(tempfile.mkdtemp(prefix="mockbroker-example-"))
    spark = (SparkSession.builder.master("local[2]").appName("streaming-during-faults")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.local.dir", str(work / "local")).config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    with ScenarioRun.from_file(HERE / "streaming-faults.yaml", progress=sys.stderr) as run:
        clicks = (spark.readStream.format("mockbroker").option("kafka.bootstrap.servers", run.bootstrap_servers)
                  .option("subscribe", "clicks").option("startingOffsets", "earliest").load())
        query = (clicks.selectExpr("CAST(value AS STRING) AS click", "partition", "offset").writeStream
                 .format("memory").queryName("clicks_seen").option("checkpointLocation", str(work / "checkpoint"))
                 .trigger(processingTime="1 second").start())
        produced = threading.Event()
        threading.Thread(target=produce, args=(run.bootstrap_servers, produced), daemon=True).start()
        deadline = time.monotonic() + 150
        seen = 0
        while time.monotonic() < deadline:
            seen = spark.sql("SELECT count(*) FROM clicks_seen").collect()[0][0]
            if produced.is_set() and seen >= CLICKS:
                break
            time.sleep(1)
        run.wait_steps(timeout=30)
        query.stop()
        distinct = spark.sql("SELECT count(DISTINCT click) FROM clicks_seen").collect()[0][0]
    spark.stop()
    assert run.result is not None
    print(run.result.report())
    print(f"spark saw {seen:,} clicks, {distinct:,} distinct, of {CLICKS:,} produced")
    ok = run.result.passed and seen == distinct == CLICKS
    print("example PASSED" if ok else "example FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
