"""The mockbroker Spark data source on local[2] against a real mock cluster and confluent-kafka: batch and
streaming reads match what confluent-kafka produced record for record, options behave as Spark's Kafka
source's do, read_committed hides aborted transactions, a streaming query restarts from its checkpoint
without duplicates, empty topics and partitions emptied by DeleteRecords or retention read as no rows (batch
and streaming, failOnDataLoss as Spark's), and the sink's records read back with confluent-kafka."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from mockbroker.cluster import MockCluster

pytestmark = [pytest.mark.spark, pytest.mark.clients, pytest.mark.slow]
BASE_TS = 1_790_000_000_000


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=2, topics={"events": 3, "txn": 2}) as running:
        yield running


@pytest.fixture(scope="module", autouse=True)
def produced(cluster: MockCluster) -> list[tuple[Any, ...]]:
    """600 records with keys, headers and timestamps; (partition, offset, key, value, headers, ts) each.
    Every test here reads them (autouse: under xdist a worker may get any subset of the tests)."""
    out: list[tuple[Any, ...]] = []

    def headers(i: int) -> list[tuple[str, bytes | None]]:
        return [("n", str(i).encode()), ("empty", None)] if i % 2 else []

    def report(err: Any, msg: Any) -> None:
        assert err is None
        i = int(msg.value().split(b"-")[1])
        out.append((msg.partition(), msg.offset(), msg.key(), msg.value(), headers(i), msg.timestamp()[1]))

    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5})
    for i in range(600):
        key = None if i % 7 == 0 else f"k{i}".encode()
        p.produce("events", f"value-{i}".encode(), key=key, partition=i % 3, headers=headers(i),
                  timestamp=BASE_TS + i, on_delivery=report)
    assert p.flush(15) == 0
    return sorted(out)


def reader(spark: Any, cluster: MockCluster, **options: str) -> Any:
    r = spark.read.format("mockbroker").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def test_batch_read_matches_the_producer_record_for_record(spark: Any, cluster: MockCluster,
                                                          produced: list[tuple[Any, ...]]) -> None:
    df = reader(spark, cluster, subscribe="events", includeHeaders="true")
    assert [f.name for f in df.schema.fields] == ["key", "value", "topic", "partition", "offset", "timestamp",
                                                  "timestampType", "headers"]
    rows = sorted((r.partition, r.offset, r.key, r.value, [(h.key, h.value) for h in r.headers],
                   int(r.timestamp.replace(tzinfo=UTC).timestamp() * 1000) if r.timestamp.tzinfo is None
                   else int(r.timestamp.timestamp() * 1000)) for r in df.collect())
    assert [r[:4] for r in rows] == [(p[0], p[1], p[2], p[3]) for p in produced]
    assert [r[4] for r in rows] == [[(k, v) for k, v in p[4]] for p in produced]
    assert {r.topic for r in df.select("topic").distinct().collect()} == {"events"}
    assert [r[5] for r in rows] == [p[5] for p in produced]


def test_streaming_read_matches_the_producer_record_for_record(spark: Any, cluster: MockCluster,
                                                              produced: list[tuple[Any, ...]], tmp_path: Path) -> None:
    stream = (spark.readStream.format("mockbroker").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("subscribe", "events").option("startingOffsets", "earliest").option("includeHeaders", "true")
              .load())
    query = (stream.writeStream.format("memory").queryName("events_stream")
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    rows = sorted((r.partition, r.offset, r.key, r.value, [(h.key, h.value) for h in r.headers],
                   int(r.timestamp.timestamp() * 1000)) for r in spark.sql("SELECT * FROM events_stream").collect())
    assert rows == [(p, o, k, v, list(h), t) for p, o, k, v, h, t in produced]


def test_assign_with_starting_and_ending_offsets(spark: Any, cluster: MockCluster) -> None:
    df = reader(spark, cluster, assign='{"events":[0,2]}', startingOffsets='{"events":{"0":10,"2":-2}}',
                endingOffsets='{"events":{"0":20,"2":-1}}')
    got = {(r.partition, r.offset) for r in df.select("partition", "offset").collect()}
    assert got == {(0, o) for o in range(10, 20)} | {(2, o) for o in range(200)}


def test_pattern_timestamps_and_min_partitions(spark: Any, cluster: MockCluster) -> None:
    by_pattern = reader(spark, cluster, subscribePattern="ev.*", minPartitions="8")
    assert by_pattern.rdd.getNumPartitions() >= 8 and by_pattern.count() == 600
    since = reader(spark, cluster, subscribe="events", startingTimestamp=str(BASE_TS + 300))
    assert since.count() == 300  # records 300..599 have timestamps at or after it
    per_partition = reader(spark, cluster, subscribe="events", startingOffsetsByTimestamp=(
        f'{{"events":{{"0":{BASE_TS + 597},"1":{BASE_TS},"2":{BASE_TS + 10_000}}}}}'))
    assert sorted((r.partition, r.offset) for r in per_partition.select("partition", "offset").collect()) == \
        [(0, 199)] + [(1, o) for o in range(200)]


@pytest.mark.parametrize(("options", "message"), [
    ({"subscribe": "events", "assign": '{"events":[0]}'}, "exactly one of assign, subscribe"),
    ({}, "exactly one of assign, subscribe"),
    ({"subscribe": "events", "startingOffsets": "latest"}, "streaming queries only"),
    ({"subscribe": "events", "endingOffsets": "earliest"}, "cannot be earliest"),
    ({"subscribe": "events", "kafka.isolation.level": "serializable"}, "kafka.isolation.level"),
    ({"assign": "events"}, "assign must be JSON"),
])
def test_bad_options_are_refused(spark: Any, cluster: MockCluster, options: dict[str, str], message: str) -> None:
    with pytest.raises(Exception, match=message):
        reader(spark, cluster, **options).count()


def test_read_committed_hides_aborted_transactions(spark: Any, cluster: MockCluster) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "spark-txn"})
    p.init_transactions(10)
    for t in range(6):
        p.begin_transaction()
        for i in range(10):
            p.produce("txn", f"t{t}-{i}".encode(), partition=i % 2)
        p.flush(10)
        (p.commit_transaction if t % 2 == 0 else p.abort_transaction)(10)
    committed = reader(spark, cluster, subscribe="txn", **{"kafka.isolation.level": "read_committed"})
    values = sorted(r.value.decode() for r in committed.select("value").collect())
    assert values == sorted(f"t{t}-{i}" for t in (0, 2, 4) for i in range(10))
    everything = reader(spark, cluster, subscribe="txn")
    assert everything.count() == 60  # every data record, never a control record


def test_streaming_available_now_restarts_from_its_checkpoint(spark: Any, cluster: MockCluster,
                                                              tmp_path: Path) -> None:
    cluster.create_topic("stream", 2)
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 2})

    def produce(start: int, count: int) -> None:
        for i in range(start, start + count):
            p.produce("stream", f"s{i}".encode(), partition=i % 2)
        assert p.flush(10) == 0

    def run_once() -> None:
        stream = (spark.readStream.format("mockbroker").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
                  .option("subscribe", "stream").option("startingOffsets", "earliest")
                  .option("maxOffsetsPerTrigger", "70").load())
        query = (stream.selectExpr("CAST(value AS STRING) AS value", "partition", "offset").writeStream
                 .format("parquet").option("path", str(tmp_path / "out"))
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
        query.awaitTermination(120)
        assert query.exception() is None

    produce(0, 300)
    run_once()
    first = spark.read.parquet(str(tmp_path / "out")).count()
    produce(300, 150)
    run_once()
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert first == 300
    assert sorted(r.value for r in rows) == sorted(f"s{i}" for i in range(450))  # no duplicates, nothing lost
    commits = list((tmp_path / "checkpoint" / "commits").iterdir())
    assert len(commits) >= 450 // 70  # maxOffsetsPerTrigger split the backlog into several micro-batches


def test_the_sink_writes_what_confluent_reads(spark: Any, cluster: MockCluster) -> None:
    from pyspark.sql import Row

    cluster.create_topic("sunk", 3)
    rows = [Row(key=f"k{i}".encode() if i % 3 else None, value=f"v{i}", partition=(i % 3) if i % 5 == 0 else None,
                headers=[Row(key="src", value=b"spark")], timestamp=datetime.fromtimestamp(1_790_000_000 + i, UTC))
            for i in range(300)]
    df = spark.createDataFrame(rows, "key binary, value string, partition int, "
                                     "headers array<struct<key:string,value:binary>>, timestamp timestamp")
    (df.write.format("mockbroker").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
     .option("topic", "sunk").option("kafka.compression.type", "zstd").mode("append").save())
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "sink-check"})
    c.assign([TopicPartition("sunk", p, 0) for p in range(3)])
    got: dict[str, Any] = {}
    deadline = time.monotonic() + 20
    while len(got) < 300 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got[m.value().decode()] = m
    c.close()
    assert sorted(got) == sorted(f"v{i}" for i in range(300))
    for i in range(300):
        m = got[f"v{i}"]
        assert m.key() == (f"k{i}".encode() if i % 3 else None)
        assert m.headers() == [("src", b"spark")] and m.timestamp()[1] == (1_790_000_000 + i) * 1000
        if i % 5 == 0:
            assert m.partition() == i % 3
    log = cluster.state.partition("sunk", 0)
    assert all(b.producer_id >= 0 for b in log.batches)  # idempotent batches


def test_streaming_sink_with_a_topic_column(spark: Any, cluster: MockCluster, tmp_path: Path) -> None:
    stream = (spark.readStream.format("mockbroker").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
              .option("subscribe", "events").option("startingOffsets", "earliest").load())
    query = (stream.selectExpr("'copied' AS topic", "key", "value").writeStream.format("mockbroker")
             .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    assert sum(log.high_watermark for log in cluster.state.topics["copied"].partitions) == 600


def test_fail_on_data_loss(spark: Any, cluster: MockCluster) -> None:
    cluster.create_topic("trimmed", 1)
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(10):
        p.produce("trimmed", f"x{i}".encode(), partition=0)
        p.flush(10)  # one batch per record, so the log can start mid-way

    def trim() -> None:
        log = cluster.state.partition("trimmed", 0)
        log.log_start_offset = 4  # as DeleteRecords or retention would leave it

    cluster.call(trim)
    options = {"subscribe": "trimmed", "startingOffsets": '{"trimmed":{"0":0}}'}
    with pytest.raises(Exception, match="are gone"):
        reader(spark, cluster, **options).count()
    kept = reader(spark, cluster, failOnDataLoss="false", **options)
    assert [r.offset for r in kept.select("offset").collect()] == list(range(4, 10))


def test_the_sink_needs_a_value_and_a_topic(spark: Any, cluster: MockCluster) -> None:
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    base = df.write.format("mockbroker").option("kafka.bootstrap.servers", cluster.bootstrap_servers).mode("append")
    with pytest.raises(Exception, match="give a topic option or a topic column"):
        base.save()
    with pytest.raises(Exception, match="needs a value column"):
        (df.selectExpr("key").write.format("mockbroker").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
         .option("topic", "x").mode("append").save())


def delete_records(cluster: MockCluster, *wanted: tuple[str, int, int]) -> None:
    """DeleteRecords through confluent-kafka's AdminClient (offset -1: the whole partition)."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for future in admin.delete_records([TopicPartition(t, p, o) for t, p, o in wanted]).values():
        future.result(10)


def test_empty_and_emptied_partitions_read_as_no_rows(spark: Any, cluster: MockCluster) -> None:
    """Spark's Kafka source plans empty ranges and returns 0 rows for them: a topic never written, a partition
    never written among full ones, partitions emptied by DeleteRecords and by retention.  An explicit start
    below the log's start is data loss: an error with failOnDataLoss (the default), skipped without."""
    cluster.create_topic("vacant", 2)
    cluster.create_topic("sparse", 3)  # partition 1 is never written
    cluster.create_topic("deleted", 2)  # DeleteRecords: all of partition 0, partition 1 up to offset 2
    cluster.create_topic("expired", 2, config={"retention.ms": "60000"})  # partition 0's records are older
    now = int(time.time() * 1000)
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    for i in range(6):
        p.produce("sparse", f"s{i}".encode(), partition=(0, 2)[i % 2])
        p.produce("deleted", f"d{i}".encode(), partition=i % 2)
        p.produce("expired", f"e{i}".encode(), partition=i % 2, timestamp=now - 600_000 if i % 2 == 0 else now)
    assert p.flush(10) == 0
    delete_records(cluster, ("deleted", 0, -1), ("deleted", 1, 2))
    cluster.run_retention()
    expired = cluster.state.partition("expired", 0)
    assert expired.log_start_offset == expired.high_watermark == 3  # emptied (by this pass or the tick's)

    def rows(**options: str) -> list[tuple[str, int, int, str]]:
        df = reader(spark, cluster, **options).select("topic", "partition", "offset", "value")
        return sorted((r.topic, r.partition, r.offset, r.value.decode()) for r in df.collect())

    assert reader(spark, cluster, subscribe="vacant").count() == 0
    assert rows(assign='{"sparse":[1]}') == []
    assert rows(assign='{"deleted":[0]}') == []
    assert rows(assign='{"expired":[0]}') == []
    assert rows(subscribePattern="vacant|deleted|expired", minPartitions="4",
                **{"kafka.isolation.level": "read_committed"}) == [("deleted", 1, 2, "d5")] + [
        ("expired", 1, o, f"e{2 * o + 1}") for o in range(3)]
    assert rows(subscribe="sparse") == sorted([("sparse", 0, o, f"s{2 * o}") for o in range(3)]
                                              + [("sparse", 2, o, f"s{2 * o + 1}") for o in range(3)])
    from_zero = {"assign": '{"deleted":[0]}', "startingOffsets": '{"deleted":{"0":0}}'}
    with pytest.raises(Exception, match="are gone"):
        reader(spark, cluster, **from_zero).count()
    assert rows(failOnDataLoss="false", **from_zero) == []


def test_streaming_over_empty_and_emptied_partitions(spark: Any, cluster: MockCluster, tmp_path: Path) -> None:
    """A stream over topics with nothing in them reads nothing, then what is produced; a topic created empty
    while it runs adds nothing; offsets deleted under its checkpoint are data loss: the query fails with
    failOnDataLoss (Spark's default) and skips them without."""
    cluster.create_topic("quiet-a", 2)
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})

    def produce(topic: str, partition: int, *values: str) -> None:
        for value in values:
            p.produce(topic, value.encode(), partition=partition)
        assert p.flush(10) == 0

    def run(checkpoint: Path, fail_on_data_loss: str = "false", out: str = "out") -> Any:
        stream = (spark.readStream.format("mockbroker").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
                  .option("subscribePattern", "quiet-.*").option("startingOffsets", "earliest")
                  .option("failOnDataLoss", fail_on_data_loss).load())
        query = (stream.selectExpr("CAST(value AS STRING) AS value", "topic", "partition", "offset").writeStream
                 .format("parquet").option("path", str(tmp_path / out)).option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination(120)
        except Exception as error:  # StreamingQueryException: the query failed
            return error
        return query.exception()

    def values() -> list[str]:
        out = spark.read.schema("value string, topic string, partition int, offset long").parquet(str(tmp_path / "out"))
        return sorted(r.value for r in out.select("value").collect())

    checkpoint = tmp_path / "checkpoint"
    assert run(checkpoint) is None and values() == []  # nothing in either partition
    cluster.create_topic("quiet-b", 1)  # a new, empty topic: its partition appears at offset 0
    produce("quiet-a", 0, "a0", "a1")
    produce("quiet-a", 1, "b0")
    assert run(checkpoint) is None and values() == ["a0", "a1", "b0"]
    produce("quiet-a", 0, "a2", "a3")
    delete_records(cluster, ("quiet-a", 0, -1))  # a2 and a3 go before the stream reads them
    produce("quiet-b", 0, "c0")
    strict = tmp_path / "strict"
    shutil.copytree(checkpoint, strict)
    error = run(strict, fail_on_data_loss="true", out="strict-out")
    assert error is not None and "are gone" in str(error)
    assert run(checkpoint) is None and values() == ["a0", "a1", "b0", "c0"]
