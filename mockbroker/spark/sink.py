"""The ``mockbroker`` Spark sink: DataFrame rows become records, as with Spark's Kafka sink.

Columns: ``value`` (required, binary or string), ``key``, ``headers`` (array<struct<key,value>>),
``partition`` (int) and ``topic`` (string) optional; the ``topic`` option wins over the column.  Keyed
records without a partition go where Kafka's default partitioner puts them (murmur2), others round-robin.
Each task is an idempotent producer (one producer id, sequences per partition), so retried batches are
stored once; ``kafka.compression.type`` (or ``compression``) picks the codec.  At-least-once, like Spark's
sink: a task retried by Spark writes its rows again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from mockbroker import records as rec
from mockbroker.client import KafkaClient
from mockbroker.client.partitioner import partition_for_key
from mockbroker.spark.options import OptionError

CODECS = {"none": rec.NONE, "gzip": rec.GZIP, "snappy": rec.SNAPPY, "lz4": rec.LZ4, "zstd": rec.ZSTD}
BATCH_RECORDS = 4096
BATCH_BYTES = 900_000


@dataclass
class SinkOptions:
    bootstrap: str
    topic: str | None
    compression: int = rec.NONE
    acks: int = -1


@dataclass
class SinkCommit(WriterCommitMessage):
    records: int = 0
    partitions: dict[str, int] = field(default_factory=dict)


def parse_sink(options: Mapping[str, str], schema: StructType) -> SinkOptions:
    bootstrap = options.get("kafka.bootstrap.servers")
    if not bootstrap:
        raise OptionError("option kafka.bootstrap.servers is required")
    names = {f.name for f in schema.fields}
    if "value" not in names:
        raise OptionError("the sink needs a value column (binary or string)")
    topic = options.get("topic")
    if topic is None and "topic" not in names:
        raise OptionError("give a topic option or a topic column")
    codec = (options.get("kafka.compression.type") or options.get("compression") or "none").lower()
    if codec not in CODECS:
        raise OptionError(f"compression must be one of {', '.join(CODECS)}, not {codec!r}")
    acks = options.get("kafka.acks") or "all"
    if acks not in ("all", "-1", "1"):
        raise OptionError(f"kafka.acks must be all, -1 or 1 (the sink waits for answers), not {acks!r}")
    return SinkOptions(bootstrap, topic, CODECS[codec], -1 if acks in ("all", "-1") else 1)


def _bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    return value.encode() if isinstance(value, str) else bytes(value)


class _Producer:
    """Per-task idempotent producer: batches per partition, sent in order, one in flight."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts
        self.client = KafkaClient(opts.bootstrap, client_id="mockbroker-spark-sink")
        self.producer_id, self.epoch = self.client.init_producer_id()
        self.sequences: dict[tuple[str, int], int] = {}
        self.pending: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
        self.pending_bytes: dict[tuple[str, int], int] = {}
        self.round_robin: dict[str, int] = {}
        self.written: dict[str, int] = {}
        self.count = 0

    def add(self, topic: str, partition: int | None, key: bytes | None, value: bytes | None,
            headers: list[tuple[str, bytes | None]], timestamp_ms: int) -> None:
        partitions = self.client.partition_count(topic)
        if partition is None:
            if key is not None:
                partition = partition_for_key(key, partitions)
            else:
                partition = self.round_robin.get(topic, 0) % partitions
                self.round_robin[topic] = partition + 1
        elif not 0 <= partition < partitions:
            raise OptionError(f"partition {partition} does not exist in {topic} ({partitions} partitions)")
        tp = (topic, partition)
        self.pending.setdefault(tp, []).append((key, value, headers, timestamp_ms))
        size = self.pending_bytes.get(tp, 0) + len(key or b"") + len(value or b"") + 16
        self.pending_bytes[tp] = size
        if len(self.pending[tp]) >= BATCH_RECORDS or size >= BATCH_BYTES:
            self.flush(tp)

    def flush(self, tp: tuple[str, int]) -> None:
        items = self.pending.pop(tp, [])
        self.pending_bytes.pop(tp, None)
        if not items:
            return
        sequence = self.sequences.get(tp, 0)
        batch = rec.build_batch(items, compression=self.opts.compression, producer_id=self.producer_id,
                                producer_epoch=self.epoch, base_sequence=sequence)
        self.client.produce(tp[0], tp[1], batch, acks=self.opts.acks)
        self.sequences[tp] = (sequence + len(items)) % 2**31
        self.written[f"{tp[0]}-{tp[1]}"] = self.written.get(f"{tp[0]}-{tp[1]}", 0) + len(items)
        self.count += len(items)

    def close(self) -> SinkCommit:
        try:
            for tp in list(self.pending):
                self.flush(tp)
        finally:
            self.client.close()
        return SinkCommit(self.count, self.written)


def write_batches(opts: SinkOptions, batches: Iterator[pa.RecordBatch]) -> SinkCommit:
    import time

    producer = _Producer(opts)
    now = int(time.time() * 1000)
    try:
        for batch in batches:
            columns = {name: batch.column(i).to_pylist() for i, name in enumerate(batch.schema.names)}
            n = batch.num_rows
            values = columns["value"]
            keys = columns.get("key", [None] * n)
            parts = columns.get("partition", [None] * n)
            topics = [opts.topic] * n if opts.topic is not None else columns["topic"]
            headers = columns.get("headers", [None] * n)
            stamps = columns.get("timestamp", [None] * n)
            for i in range(n):
                if topics[i] is None:
                    raise OptionError("a row has no topic (null topic column and no topic option)")
                hdrs = [(h["key"], _bytes(h["value"])) for h in headers[i]] if headers[i] else []
                ts = int(stamps[i].timestamp() * 1000) if stamps[i] is not None else now
                producer.add(topics[i], parts[i], _bytes(keys[i]), _bytes(values[i]), hdrs, ts)
    except BaseException:
        producer.client.close()
        raise
    return producer.close()


class BatchWriter(DataSourceArrowWriter):
    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        return write_batches(self.opts, iterator)


class StreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        return write_batches(self.opts, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass  # every record was acknowledged before its task finished

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass
