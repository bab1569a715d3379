"""The audit: a Spark job that checks what Kafka-protocol topics hold.

    mockbroker audit --bootstrap-server 127.0.0.1:9092 --topic orders [--topic ...] [--json report.json]
    report = run_audit(spark, bootstrap, ["orders"])

It reads every batch (control markers and aborted records included, with producer id, epoch and
sequence), works out each transactional record's fate from the next marker of its producer, and finds:
offset gaps that are neither markers nor aborted records, duplicate (producer, epoch, sequence) pairs,
aborted (or still open) records that a read_committed reader is shown, and per-key order violations
(a later offset with a lower producer sequence or, without one, an earlier timestamp).

Exit status: 0 when it found nothing wrong (an empty topic included), 1 when it found a problem, 2 when it
could not run (no Java 17+, a broker it cannot reach or a topic the broker lacks: one line, before Spark
starts).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

CHECKS = ("gaps", "duplicates", "visible_aborted", "order_violations")


@dataclass
class AuditReport:
    topics: list[str]
    records: int = 0
    control_markers: int = 0
    committed: int = 0
    aborted: int = 0
    open: int = 0
    gaps: int = 0
    duplicates: int = 0
    visible_aborted: int = 0
    order_violations: int = 0
    examples: dict[str, list[str]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not any(getattr(self, name) for name in CHECKS)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}

    def table(self) -> str:
        rows = [("topics", ", ".join(self.topics)), ("data records", f"{self.records:,}"),
                ("committed (visible to read_committed)", f"{self.committed:,}"), ("aborted", f"{self.aborted:,}"),
                ("in open transactions", f"{self.open:,}"), ("control markers", f"{self.control_markers:,}"),
                ("offset gaps", f"{self.gaps:,}"), ("duplicate producer sequences", f"{self.duplicates:,}"),
                ("aborted records visible to read_committed", f"{self.visible_aborted:,}"),
                ("per-key order violations", f"{self.order_violations:,}"),
                ("verdict", "PASSED" if self.passed else "FAILED")]
        width = max(len(k) for k, _ in rows)
        lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
        for check, examples in self.examples.items():
            lines += [f"  {check}: {e}" for e in examples]
        return "\n".join(lines)


def _reader(spark: Any, bootstrap: str, topics: list[str], **options: str) -> Any:
    r = (spark.read.format("mockbroker").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", ",".join(topics)).option("failOnDataLoss", "false"))
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def run_audit(spark: Any, bootstrap: str, topics: list[str], examples: int = 5, check: bool = True) -> AuditReport:
    """Read ``topics`` whole and account for every record.  ``check=False`` skips the executors' probe (one
    Spark job) when the caller has just made it, as ``ship`` does."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from mockbroker.spark import register

    register(spark, check=check)  # checks the executors first (ExecutorSetupError)
    full = _reader(spark, bootstrap, topics, **{"mockbroker.audit": "true"})
    # control record key: version int16, type int16 (0 ABORT, 1 COMMIT)
    marked = full.withColumn("markerType", F.when(F.col("isControl"), F.conv(F.hex(F.substring("key", 3, 2)), 16, 10)
                                                   .cast("int")))
    # the next marker of the same producer: offsets descending with a growing frame (linear in Spark; a
    # currentRow..unboundedFollowing frame is recomputed for every row)
    by_producer = (Window.partitionBy("topic", "partition", "producerId").orderBy(F.col("offset").desc())
                   .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    fate = marked.withColumn("nextMarker", F.last("markerType", ignorenulls=True).over(by_producer)).withColumn(
        "state", F.when(~F.col("isTransactional"), F.lit("committed"))
        .when(F.col("nextMarker") == 1, F.lit("committed")).when(F.col("nextMarker") == 0, F.lit("aborted"))
        .otherwise(F.lit("open"))).cache()
    data = fate.where(~F.col("isControl"))
    report = AuditReport(sorted(topics))
    counts = {r["state"]: r["count"] for r in data.groupBy("state").count().collect()}
    report.committed, report.aborted, report.open = (counts.get(k, 0) for k in ("committed", "aborted", "open"))
    report.records = sum(counts.values())
    report.control_markers = fate.where(F.col("isControl")).count()

    by_offset = Window.partitionBy("topic", "partition").orderBy("offset")
    gaps = (fate.select("topic", "partition", "offset").withColumn("previous", F.lag("offset").over(by_offset))
            .where(F.col("offset") - F.col("previous") > 1))
    report.gaps = gaps.count()
    report.examples["gaps"] = [f"{r.topic}-{r.partition}: {r.previous} -> {r.offset}" for r in gaps.limit(examples)
                               .collect()]

    dupes = (data.where((F.col("producerId") >= 0) & (F.col("sequence") >= 0))
             .groupBy("topic", "partition", "producerId", "producerEpoch", "sequence")
             .agg(F.count("*").alias("copies"), F.collect_list("offset").alias("offsets")).where("copies > 1"))
    report.duplicates = int(dupes.agg(F.sum(F.col("copies") - 1)).collect()[0][0] or 0)
    report.examples["duplicates"] = [f"{r.topic}-{r.partition}: producer {r.producerId} sequence {r.sequence} at "
                                     f"offsets {sorted(r.offsets)}" for r in dupes.limit(examples).collect()]

    visible = _reader(spark, bootstrap, topics, **{"kafka.isolation.level": "read_committed"}).select(
        "topic", "partition", "offset")
    leaked = data.where(F.col("state") != "committed").join(visible, ["topic", "partition", "offset"])
    report.visible_aborted = leaked.count()
    report.examples["visible_aborted"] = [f"{r.topic}-{r.partition} offset {r.offset} ({r.state})"
                                          for r in leaked.limit(examples).collect()]

    by_key = Window.partitionBy("topic", "partition", "key", "producerId", "producerEpoch").orderBy("offset")
    ordered = (data.where(F.col("key").isNotNull())
               .withColumn("prevSeq", F.lag("sequence").over(by_key))
               .withColumn("prevTs", F.lag("timestamp").over(by_key))
               .where(F.when(F.col("sequence") >= 0, F.col("prevSeq") > F.col("sequence"))
                      .otherwise(F.col("prevTs") > F.col("timestamp"))))
    report.order_violations = ordered.count()
    report.examples["order_violations"] = [f"{r.topic}-{r.partition} offset {r.offset}" for r in
                                           ordered.limit(examples).collect()]
    report.examples = {k: v for k, v in report.examples.items() if v}
    fate.unpersist()
    return report


def missing_extra() -> str | None:
    """One line naming the extra to install when this install lacks what the audit imports (the runtime
    install has no Spark), or None."""
    import importlib.util

    absent = [name for name in ("pyspark", "pyarrow") if importlib.util.find_spec(name) is None]
    if not absent:
        return None
    return (f"mockbroker audit: this install lacks {' and '.join(absent)} (the audit is a Spark job); "
            "add the extra: pip install 'mockbroker[spark]' (Spark also needs Java 17+)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``mockbroker audit`` (the command line, mockbroker.cli, makes the parser)."""
    parser.add_argument("--bootstrap-server", "--bootstrap", dest="bootstrap", required=True,
                        help="bootstrap servers, host:port[,host:port] (as Kafka's tools name it; --bootstrap "
                             "is an alias)")
    parser.add_argument("--topic", action="append", required=True, help="a topic to audit (repeatable)")
    parser.add_argument("--json", dest="json_path", help="also write the report here as JSON")
    parser.add_argument("--master", default="local[2]",
                        help="Spark master (default local[2]); on any other master (spark://, yarn, k8s://) the "
                             "executors get mockbroker as an archive (mockbroker.spark.ship)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting, as spark-submit's --conf (repeatable), e.g. spark.executor.memory=4g")


def _spark_settings(pairs: list[str]) -> dict[str, str] | str:
    """``--conf KEY=VALUE`` pairs as a dict, or the one line saying which pair is malformed."""
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            return f"mockbroker audit: --conf {pair!r} is not KEY=VALUE (e.g. --conf spark.executor.memory=4g)"
        settings[key.strip()] = value
    return settings


def main(args: argparse.Namespace) -> int:
    """``mockbroker audit`` with its parsed options: the report's table, exit status 0 when it passed."""
    import os
    import sys

    from mockbroker.spark.preflight import broker_problem, java_problem

    missing = missing_extra()
    settings = _spark_settings(args.conf)
    problem = missing or (isinstance(settings, str) and settings) or java_problem()
    if not problem:  # the broker and topics, before Spark starts (a JVM's start, and its traces, for nothing)
        broker = broker_problem(args.bootstrap, args.topic)
        problem = broker and f"mockbroker audit: error: {broker}"
    if problem:
        print(problem if problem.startswith("mockbroker audit") else f"mockbroker audit: {problem}", file=sys.stderr)
        return 2
    assert isinstance(settings, dict)
    local = args.master.startswith("local")
    if local:  # executors are this machine's Python processes: the one running this command has mockbroker
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from mockbroker.spark import ExecutorSetupError, ship

    builder = (SparkSession.builder.master(args.master).appName("mockbroker-audit")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4"))
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        if not local:
            ship(spark)  # probes the executors once it has sent the archive
        report = run_audit(spark, args.bootstrap, args.topic, check=local)
    except ExecutorSetupError as error:
        print(f"mockbroker audit: {error}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    print(report.table())
    if args.json_path:
        with open(args.json_path, "w") as out:
            json.dump(report.to_dict(), out, indent=2, sort_keys=True)
    return 0 if report.passed else 1
