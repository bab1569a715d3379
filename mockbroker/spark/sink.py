"""The ``mockbroker`` Spark sink: DataFrame rows become records, as with Spark's Kafka sink.

Columns: ``value`` (required, binary or string), ``key``, ``headers`` (array<struct<key,value>>),
``partition`` (int) and ``topic`` (string) optional; the ``topic`` option wins over the column.  Keyed
records without a partition go where Kafka's default partitioner puts them (murmur2), others round-robin.
Each task is an idempotent producer (one producer id, sequences per partition), so retried batches are
stored once; ``kafka.compression.type`` (or ``compression``) picks the codec.  At-least-once, like Spark's
sink: a task retried by Spark writes its rows again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from mockbroker import records as rec
from mockbroker.client import KafkaClient
from mockbroker.client.partitioner import partition_for_key
from mockbroker.spark.columns import encode_columns
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
    """Per-task idempotent producer: rows grouped per partition, sent as batches in order, one in flight."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts
        self.client = KafkaClient(opts.bootstrap, client_id="mockbroker-spark-sink")
        self.producer_id, self.epoch = self.client.init_producer_id()
        self.sequences: dict[tuple[str, int], int] = {}
        self.round_robin: dict[str, int] = {}
        self.written: dict[str, int] = {}
        self.count = 0

    def place(self, topic: str, keys: list[bytes | None], partitions: list[int | None]) -> list[int]:
        """The partition of every row: the given one, murmur2 of the key, or round-robin."""
        count = self.client.partition_count(topic)
        out = []
        turn = self.round_robin.get(topic, 0)
        for key, chosen in zip(keys, partitions, strict=True):
            if chosen is None:
                if key is not None:
                    chosen = partition_for_key(key, count)
                else:
                    chosen = turn % count
                    turn += 1
            elif not 0 <= chosen < count:
                raise OptionError(f"partition {chosen} does not exist in {topic} ({count} partitions)")
            out.append(chosen)
        self.round_robin[topic] = turn
        return out

    def send(self, topic: str, partition: int, keys: list[bytes | None], values: list[bytes | None],
             headers: list[Any] | None, stamps: list[int]) -> None:
        """Write rows to one partition in batches of at most BATCH_RECORDS records / ~BATCH_BYTES bytes."""
        start = 0
        while start < len(values):
            stop, size = start, 0
            while stop < len(values) and stop - start < BATCH_RECORDS and size < BATCH_BYTES:
                size += len(values[stop] or b"") + len(keys[stop] or b"") + 16
                stop += 1
            base_ts = stamps[start]
            deltas = [t - base_ts for t in stamps[start:stop]]
            body = encode_columns(keys[start:stop], values[start:stop],
                                  headers[start:stop] if headers is not None else None, deltas)
            tp = (topic, partition)
            sequence = self.sequences.get(tp, 0)
            n = stop - start
            batch = rec.batch_from_body(body, n, n - 1, base_ts, base_ts + max(deltas),
                                        compression=self.opts.compression, producer_id=self.producer_id,
                                        producer_epoch=self.epoch, base_sequence=sequence)
            self.client.produce(topic, partition, batch, acks=self.opts.acks)
            self.sequences[tp] = (sequence + n) % 2**31
            self.written[f"{topic}-{partition}"] = self.written.get(f"{topic}-{partition}", 0) + n
            self.count += n
            start = stop


def write_batches(opts: SinkOptions, batches: Iterator[pa.RecordBatch]) -> SinkCommit:
    producer = _Producer(opts)
    now = int(time.time() * 1000)
    try:
        for batch in batches:
            n = batch.num_rows
            names = batch.schema.names
            values = [_bytes(v) for v in batch.column(names.index("value")).to_pylist()]
            keys = [_bytes(k) for k in batch.column(names.index("key")).to_pylist()] if "key" in names else [None] * n
            parts = batch.column(names.index("partition")).to_pylist() if "partition" in names else [None] * n
            if opts.topic is not None:
                topics = [opts.topic] * n
            else:
                topics = batch.column(names.index("topic")).to_pylist()
                if None in topics:
                    raise OptionError("a row has no topic (null topic column and no topic option)")
            headers = None
            if "headers" in names:
                headers = [[(h["key"], _bytes(h["value"])) for h in row] if row else []
                           for row in batch.column(names.index("headers")).to_pylist()]
            if "timestamp" in names:
                stamps = [int(t.timestamp() * 1000) if t is not None else now
                          for t in batch.column(names.index("timestamp")).to_pylist()]
            else:
                stamps = [now] * n
            groups: dict[tuple[str, int], list[int]] = {}
            for topic in dict.fromkeys(topics):
                rows = [i for i in range(n) if topics[i] == topic] if opts.topic is None else list(range(n))
                placed = producer.place(topic, [keys[i] for i in rows], [parts[i] for i in rows])
                for i, partition in zip(rows, placed, strict=True):
                    groups.setdefault((topic, partition), []).append(i)
            for (topic, partition), rows in groups.items():
                producer.send(topic, partition, [keys[i] for i in rows], [values[i] for i in rows],
                              [headers[i] for i in rows] if headers is not None else None, [stamps[i] for i in rows])
    finally:
        producer.client.close()
    return SinkCommit(producer.count, producer.written)


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
