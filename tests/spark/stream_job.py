"""The driver of tests/spark/test_cluster.py's streaming test, run as its own process so the test can kill
it: reads topic ``stream`` with maxOffsetsPerTrigger into Parquet files with a checkpoint.

    python stream_job.py MASTER BOOTSTRAP OUT CHECKPOINT run     # until killed
    python stream_job.py MASTER BOOTSTRAP OUT CHECKPOINT drain   # what is left (AvailableNow), then writes
                                                                 # OUT.json: [[partition, offset, value], ...]
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

from mockbroker.spark import ship

PER_TRIGGER = 4000


def main(master: str, bootstrap: str, out: str, checkpoint: str, mode: str) -> None:
    spark = (SparkSession.builder.master(master).appName(f"mockbroker-stream-{mode}")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.cores.max", "2").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    ship(spark)
    stream = (spark.readStream.format("mockbroker").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", "stream").option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(PER_TRIGGER)).load())
    writer = (stream.selectExpr("CAST(value AS STRING) AS value", "partition", "offset").writeStream
              .format("parquet").option("path", out).option("checkpointLocation", checkpoint))
    if mode == "run":
        query = writer.start()
        print("started", flush=True)
        query.awaitTermination()
        return
    query = writer.trigger(availableNow=True).start()
    query.awaitTermination()
    if query.exception() is not None:
        raise SystemExit(f"the drain failed: {query.exception()}")
    rows = spark.read.parquet(out).collect()  # through _spark_metadata: committed files only
    with open(out + ".json", "w") as f:
        json.dump([[r.partition, r.offset, r.value] for r in rows], f)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:6])
