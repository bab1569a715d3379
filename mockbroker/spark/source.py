"""The ``mockbroker`` Spark data source (Spark 4's Python Data Source API): batch and streaming reads of
Kafka-protocol topics with the schema and options of Spark's built-in Kafka source, and the sink.

    from mockbroker.spark import register
    register(spark)
    df = spark.read.format("mockbroker").option("kafka.bootstrap.servers", bootstrap) \\
        .option("subscribe", "orders").load()

Executors talk the Kafka protocol with the project's own client, so any Kafka-protocol broker works.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from mockbroker.client import KafkaClient
from mockbroker.spark.options import (
    Offsets,
    OptionError,
    SourceOptions,
    canonical,
    flat,
    parse_source,
    resolve_offsets,
)
from mockbroker.spark.rows import Range, read_range, spark_schema


class RangePartition(InputPartition):
    def __init__(self, r: Range) -> None:
        super().__init__(r)
        self.range = r


def _ranges(opts: SourceOptions, start: dict[tuple[str, int], int], end: dict[tuple[str, int], int],
            min_partitions: int, audit: bool = False) -> list[RangePartition]:
    """One task per partition with data, large partitions split so there are at least ``min_partitions``."""
    spans = [(tp, start.get(tp, 0), end[tp]) for tp in sorted(end) if end[tp] > start.get(tp, 0)]
    total = sum(e - s for _, s, e in spans)
    out = []
    for (topic, partition), s, e in spans:
        pieces = 1
        if min_partitions > len(spans) and total:
            pieces = max(1, math.ceil(min_partitions * (e - s) / total))
        step = math.ceil((e - s) / pieces)
        for lo in range(s, e, step):
            out.append(RangePartition(Range(opts.bootstrap, topic, partition, lo, min(lo + step, e),
                                            opts.isolation_level, opts.include_headers, opts.fail_on_data_loss,
                                            audit)))
    return out


def _read(partition: InputPartition) -> Iterator[Any]:
    """The rows of one planned range.  When ``partitions()`` finds nothing to read (an empty topic, or
    partitions emptied by DeleteRecords or retention), pyspark still runs one task, with a placeholder
    ``InputPartition(None)``: it reads no rows, as Spark's Kafka source returns none there."""
    if partition.value is None:
        return
    if not isinstance(partition, RangePartition):
        raise TypeError(f"the mockbroker source planned no {type(partition).__name__} (got {partition.value!r})")
    yield from read_range(partition.range)


class MockbrokerDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "mockbroker"

    def _audit(self) -> bool:
        return (self.options.get("mockbroker.audit") or "false").lower() == "true"

    def schema(self) -> str:
        headers = (self.options.get("includeheaders") or self.options.get("includeHeaders") or "false").lower()
        return spark_schema(headers == "true", self._audit())

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(parse_source(self.options, streaming=False), self._audit())

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(parse_source(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        from mockbroker.spark.sink import BatchWriter, parse_sink

        return BatchWriter(parse_sink(self.options, schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> Any:
        from mockbroker.spark.sink import StreamWriter, parse_sink

        return StreamWriter(parse_sink(self.options, schema))


class BatchReader(DataSourceReader):
    def __init__(self, opts: SourceOptions, audit: bool = False) -> None:
        self.opts = opts
        self.audit = audit

    def partitions(self) -> list[RangePartition]:
        with self.opts.client() as client:
            starting = self.opts.starting_timestamp is not None or self.opts.starting_by_timestamp is not None
            start = resolve_offsets(self.opts, client, self.opts.starting, "earliest", timestamps=starting)
            end = resolve_offsets(self.opts, client, self.opts.ending, "latest")
        return _ranges(self.opts, flat(start), flat(end), self.opts.min_partitions, self.audit)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        yield from _read(partition)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._client: KafkaClient | None = None
        self._target: Offsets | None = None  # Trigger.AvailableNow: never read past this

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_client": None}  # sockets do not travel

    @property
    def client(self) -> KafkaClient:
        if self._client is None:
            self._client = self.opts.client()
        return self._client

    def initialOffset(self) -> Offsets:
        timestamps = self.opts.starting_timestamp is not None or self.opts.starting_by_timestamp is not None
        return resolve_offsets(self.opts, self.client, self.opts.starting, "latest", timestamps=timestamps)

    def _latest(self) -> Offsets:
        out: Offsets = {}
        for topic, partition in self.opts.topic_partitions(self.client):
            out.setdefault(topic, {})[str(partition)] = self.client.latest_offset(topic, partition,
                                                                                  self.opts.isolation_level)
        return canonical(out)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest()

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> Offsets:
        latest = flat(self._target if self._target is not None else self._latest())
        begin = flat(start or {})
        for tp in latest:  # partitions added since the query started are read from their beginning
            begin.setdefault(tp, 0)
        end = {tp: max(latest[tp], begin[tp]) for tp in latest}
        if isinstance(limit, ReadMaxRows):
            end = _split_by_backlog(begin, end, limit.max_rows)
        out: Offsets = {}
        for (topic, partition), offset in end.items():
            out.setdefault(topic, {})[str(partition)] = offset
        return canonical(out)

    def partitions(self, start: dict, end: dict) -> list[RangePartition]:
        return _ranges(self.opts, flat(start), flat(end), self.opts.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        yield from _read(partition)

    def commit(self, end: dict) -> None:
        pass  # offsets live in Spark's checkpoint, as with Spark's Kafka source

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _split_by_backlog(begin: dict[tuple[str, int], int], end: dict[tuple[str, int], int],
                      limit: int) -> dict[tuple[str, int], int]:
    """At most ``limit`` offsets in all, shared out in proportion to each partition's backlog."""
    backlog = {tp: end[tp] - begin[tp] for tp in end}
    total = sum(backlog.values())
    if total <= limit:
        return end
    share = {tp: limit * lag // total for tp, lag in backlog.items()}
    left = limit - sum(share.values())
    for tp in sorted(backlog, key=lambda t: backlog[t] - share[t], reverse=True):
        if left <= 0:
            break
        if share[tp] < backlog[tp]:
            share[tp] += 1
            left -= 1
    return {tp: begin[tp] + share[tp] for tp in end}


__all__ = ["MockbrokerDataSource", "OptionError"]
