"""Turning fetched record batches into Arrow record batches with the schema of Spark's Kafka source.

Columns match the declared Spark schema exactly (binary, not large_binary; timestamp[us, tz=UTC]; int32
partition), or Spark rejects the batch.  The audit adds producer and transaction columns.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from mockbroker import records as rec
from mockbroker.client import KafkaClient, KafkaClientError
from mockbroker.client.cluster import EARLIEST, FetchedBatch
from mockbroker.codec_errors import CodecError
from mockbroker.errors import ErrorCode
from mockbroker.spark.columns import decode_columns

SPARK_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, timestamp timestamp,"
                " timestampType int")
HEADERS_SCHEMA = ", headers array<struct<key:string,value:binary>>"
AUDIT_SCHEMA = (", producerId long, producerEpoch int, sequence int, isTransactional boolean, isControl boolean,"
                " isAborted boolean")
ROWS_PER_BATCH = 65_536

HEADER_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))


def spark_schema(include_headers: bool, audit: bool = False) -> str:
    return SPARK_SCHEMA + (HEADERS_SCHEMA if include_headers else "") + (AUDIT_SCHEMA if audit else "")


@dataclass
class Range:
    """What one Spark task reads: offsets [start, end) of one partition."""

    bootstrap: str
    topic: str
    partition: int
    start: int
    end: int
    isolation_level: int = 0
    include_headers: bool = False
    fail_on_data_loss: bool = True
    audit: bool = False


class DataLossError(RuntimeError):
    pass


def read_range(r: Range) -> Iterator[pa.RecordBatch]:
    if r.end <= r.start:
        return
    with KafkaClient(r.bootstrap, client_id="mockbroker-spark") as client:
        start = r.start
        earliest = client.list_offset(r.topic, r.partition, EARLIEST)
        if earliest > start:
            if r.fail_on_data_loss:
                raise DataLossError(f"{r.topic}-{r.partition}: offsets {start}..{earliest - 1} are gone (the log "
                                    f"starts at {earliest}); set failOnDataLoss=false to skip them")
            start = earliest
        if start >= r.end:
            return
        cols = _Columns(r)
        try:
            for batch in client.read_all(r.topic, r.partition, start, r.end, r.isolation_level, decode=False):
                if not r.audit and (batch.header.is_control or batch.aborted):
                    continue
                cols.add(batch, start, r.end)
                if cols.rows >= ROWS_PER_BATCH:
                    yield cols.flush()
        except KafkaClientError as exc:
            if exc.code == 1 and not r.fail_on_data_loss:  # OFFSET_OUT_OF_RANGE: deleted while we read
                return
            raise
        if cols.rows:
            yield cols.flush()


class _Columns:
    def __init__(self, r: Range) -> None:
        self.r = r
        self._reset()

    def _reset(self) -> None:
        self.rows = 0
        self.keys: list[Any] = []
        self.values: list[Any] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.types: list[int] = []
        self.headers: list[Any] = []
        self.audit: list[list[Any]] = [[], [], [], [], [], []]

    def add(self, batch: FetchedBatch, start: int, end: int) -> None:
        header = batch.header
        assert batch.raw is not None
        codec = header.compression
        keys: list[Any] = []
        values: list[Any] = []
        deltas: list[int] = []
        ts_deltas: list[int] = []
        headers: list[Any] | None = [] if self.r.include_headers else None
        try:
            if codec == rec.NONE:
                data, pos = bytes(batch.raw), rec.HEADER_SIZE
            else:
                data, pos = rec.decompress(codec, batch.raw[rec.HEADER_SIZE:]), 0
            decode_columns(data, pos, header.record_count, keys, values, deltas, ts_deltas, headers)
        except (CodecError, IndexError, ValueError) as exc:  # stored unchecked (mock.produce.validation=envelope)
            raise KafkaClientError(ErrorCode.CORRUPT_MESSAGE, f"{self.r.topic}-{self.r.partition} batch at offset "
                                   f"{header.base_offset}: its records do not decode ({exc})") from None
        base = header.base_offset
        first, last = start - base, end - base  # the wanted offset deltas: [first, last)
        if deltas and (deltas[0] < first or deltas[-1] >= last):
            keep = [i for i, d in enumerate(deltas) if first <= d < last]
            keys, values, deltas, ts_deltas = ([col[i] for i in keep] for col in (keys, values, deltas, ts_deltas))
            if headers is not None:
                headers = [headers[i] for i in keep]
        n = len(deltas)
        if not n:
            return
        self.keys += keys
        self.values += values
        self.offsets += [base + d for d in deltas]
        if header.timestamp_type:
            self.timestamps += [header.max_timestamp * 1000] * n
        else:
            base_ts = header.base_timestamp
            self.timestamps += [(base_ts + d) * 1000 for d in ts_deltas]
        self.types += [header.timestamp_type] * n
        if headers is not None:
            self.headers += headers
        if self.r.audit:
            producer, epoch, sequence, transactional, control, aborted = self.audit
            producer += [header.producer_id] * n
            epoch += [header.producer_epoch] * n
            sequence += [header.base_sequence + d if header.base_sequence >= 0 else -1 for d in deltas]
            transactional += [header.is_transactional] * n
            control += [header.is_control] * n
            aborted += [batch.aborted] * n
        self.rows += n

    def flush(self) -> pa.RecordBatch:
        n = self.rows
        arrays = [
            pa.array(self.keys, pa.binary()), pa.array(self.values, pa.binary()),
            pa.array([self.r.topic] * n, pa.string()), pa.array([self.r.partition] * n, pa.int32()),
            pa.array(self.offsets, pa.int64()), pa.array(self.timestamps, pa.timestamp("us", tz="UTC")),
            pa.array(self.types, pa.int32()),
        ]
        names = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
        if self.r.include_headers:
            arrays.append(pa.array(self.headers, HEADER_TYPE))
            names.append("headers")
        if self.r.audit:
            types = (pa.int64(), pa.int32(), pa.int32(), pa.bool_(), pa.bool_(), pa.bool_())
            arrays += [pa.array(col, t) for col, t in zip(self.audit, types, strict=True)]
            names += ["producerId", "producerEpoch", "sequence", "isTransactional", "isControl", "isAborted"]
        self._reset()
        return pa.RecordBatch.from_arrays(arrays, names=names)
