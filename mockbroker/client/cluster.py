"""A small blocking Kafka client: metadata, offsets, fetching decoded batches and idempotent producing.

Used where no Kafka client library may be assumed (Spark executors, the audit).  It talks to any
Kafka-protocol broker through :class:`Connection`; leaders come from Metadata and are refreshed on
NOT_LEADER_OR_FOLLOWER and similar retriable errors.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mockbroker import records as rec
from mockbroker.client.connection import BrokerError, Connection
from mockbroker.codec_errors import CodecError
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from mockbroker.protocol.errors import error_name

METADATA, LIST_OFFSETS, FETCH, PRODUCE, INIT_PRODUCER_ID = 3, 2, 1, 0, 22
EARLIEST, LATEST = -2, -1
RETRIABLE = {3, 5, 6, 7, 9, 13, 14, 15, 19, 20, 56, 74, 75}  # leader moves, timeouts, loading, not enough replicas
RETRIES = 20


class KafkaClientError(Exception):
    def __init__(self, code: int, where: str) -> None:
        super().__init__(f"{where}: {error_name(code)} ({code})")
        self.code = code


@dataclass
class FetchedBatch:
    header: rec.BatchHeader
    records: list[rec.Record]  # empty when fetched with decode=False
    aborted: bool = False  # read_committed: the batch belongs to an aborted transaction
    raw: memoryview | None = None  # the whole batch (CRC checked), when fetched with decode=False


@dataclass
class FetchResult:
    batches: list[FetchedBatch]
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int


@dataclass
class Cluster:
    """Topic partitions and their leaders, from Metadata."""

    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    leaders: dict[tuple[str, int], int] = field(default_factory=dict)
    partitions: dict[str, int] = field(default_factory=dict)


class KafkaClient:
    def __init__(self, bootstrap_servers: str, client_id: str = "mockbroker-client", timeout: float = 30.0) -> None:
        self.bootstrap = [(h, int(p)) for h, _, p in (s.strip().rpartition(":") for s in bootstrap_servers.split(","))
                          if h]
        if not self.bootstrap:
            raise ValueError(f"no host:port in bootstrap servers {bootstrap_servers!r}")
        self.client_id = client_id
        self.timeout = timeout
        self._connections: dict[int, Connection] = {}
        self.cluster = Cluster()
        self.refresh()

    # -- connections and metadata -------------------------------------------------------------------
    def _any(self) -> Connection:
        if self._connections:
            return next(iter(self._connections.values()))
        errors = []
        for host, port in self.bootstrap:
            try:
                return Connection(host, port, self.client_id, self.timeout)
            except BrokerError as exc:
                errors.append(str(exc))
        raise BrokerError("; ".join(errors))

    def request_any(self, api_key: int, version: int, body: Any) -> Any:
        """One request to any broker (an admin request a broker forwards to its controller, as Kafka's do)."""
        conn = self._any()
        try:
            return conn.request(api_key, version, body)
        finally:
            if conn not in self._connections.values():
                conn.close()

    def broker(self, node_id: int) -> Connection:
        conn = self._connections.get(node_id)
        if conn is None:
            if node_id not in self.cluster.brokers:
                self.refresh()
            host, port = self.cluster.brokers[node_id]
            conn = self._connections[node_id] = Connection(host, port, self.client_id, self.timeout)
        return conn

    def refresh(self, topics: list[str] | None = None, auto_create: bool = False) -> Cluster:
        m = api.request_module(METADATA)
        body = m.MetadataRequest(topics=None if topics is None else [m.MetadataRequestTopic(name=t) for t in topics],
                                 allow_auto_topic_creation=auto_create)
        answer = self.request_any(METADATA, 12, body)
        cluster = Cluster(brokers={b.node_id: (b.host, b.port) for b in answer.brokers})
        for topic in answer.topics:
            if topic.error_code or topic.name is None:
                continue
            cluster.partitions[topic.name] = len(topic.partitions)
            for p in topic.partitions:
                cluster.leaders[(topic.name, p.partition_index)] = p.leader_id
        if topics is not None:  # keep what we knew of other topics
            for key, leader in self.cluster.leaders.items():
                cluster.leaders.setdefault(key, leader)
            for name, count in self.cluster.partitions.items():
                cluster.partitions.setdefault(name, count)
        self.cluster = cluster
        return cluster

    def topics(self) -> dict[str, int]:
        return dict(self.refresh().partitions)

    def partition_count(self, topic: str, auto_create: bool = True) -> int:
        """Partitions of ``topic`` (asking the broker to create it when it allows auto-creation)."""
        count = self.cluster.partitions.get(topic)
        for attempt in range(RETRIES + 1):
            if count:
                return count
            self.refresh([topic], auto_create)
            count = self.cluster.partitions.get(topic)
            if not count and attempt < RETRIES:
                time.sleep(0.05)
        raise KafkaClientError(3, f"topic {topic}")

    def _leader(self, topic: str, partition: int) -> Connection:
        leader = self.cluster.leaders.get((topic, partition))
        if leader is None or leader < 0:
            self.refresh([topic])
            leader = self.cluster.leaders.get((topic, partition))
            if leader is None:
                raise KafkaClientError(3, f"{topic}-{partition}")
        return self.broker(leader)

    def _retry(self, code: int, where: str, attempt: int) -> None:
        if code not in RETRIABLE or attempt >= RETRIES:
            raise KafkaClientError(code, where)
        time.sleep(min(0.05 * (attempt + 1), 0.5))
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()
        self.refresh()

    def _partition_call(self, what: str, topic: str, partition: int, api_key: int, version: int, body: Any,
                        partition_of: Any) -> Any:
        """Send ``body`` to the partition's leader and return the partition's part of the answer, retrying
        (with a metadata refresh) on lost connections and retriable errors."""
        for attempt in range(RETRIES + 1):
            try:
                answer = self._leader(topic, partition).request(api_key, version, body)
            except BrokerError:
                self._retry(6, f"{topic}-{partition}", attempt)
                continue
            if getattr(answer, "error_code", 0):
                self._retry(answer.error_code, f"{what} {topic}-{partition}", attempt)
                continue
            part = partition_of(answer)
            if part is not None and part.error_code:
                self._retry(part.error_code, f"{what} {topic}-{partition}", attempt)
                continue
            return part
        raise AssertionError("unreachable")

    # -- offsets -------------------------------------------------------------------------------------
    def list_offset(self, topic: str, partition: int, timestamp: int, isolation_level: int = 0) -> int:
        """EARLIEST, LATEST (the last stable offset with read_committed), or the first offset at or after a
        timestamp (-1 when there is none)."""
        m = api.request_module(LIST_OFFSETS)
        body = m.ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level, topics=[m.ListOffsetsTopic(
            name=topic, partitions=[m.ListOffsetsPartition(partition_index=partition, timestamp=timestamp)])])
        part = self._partition_call("ListOffsets", topic, partition, LIST_OFFSETS, 7, body,
                                    lambda answer: answer.topics[0].partitions[0])
        return part.offset

    def latest_offset(self, topic: str, partition: int, isolation_level: int = 0) -> int:
        """The end of the partition (the last stable offset with read_committed): ListOffsets, checked
        against a Fetch's watermark there, because not every broker answers ListOffsets right (Tansu 0.6
        answers 1 for a partition holding one batch of many records)."""
        listed = self.list_offset(topic, partition, LATEST, isolation_level)
        fetched = self.fetch(topic, partition, listed, max_bytes=1, isolation_level=isolation_level, max_wait_ms=1,
                             decode=False)  # Tansu answers nothing at all to max_wait_ms=0
        mark = fetched.last_stable_offset if isolation_level and fetched.last_stable_offset >= 0 \
            else fetched.high_watermark
        return max(listed, mark)

    # -- fetch -----------------------------------------------------------------------------------------
    def fetch(self, topic: str, partition: int, offset: int, max_bytes: int = 8 << 20, isolation_level: int = 0,
              max_wait_ms: int = 100, decode: bool = True) -> FetchResult:
        m = api.request_module(FETCH)
        body = m.FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes,
                              isolation_level=isolation_level, topics=[m.FetchTopic(topic=topic, partitions=[
                                  m.FetchPartition(partition=partition, fetch_offset=offset,
                                                   partition_max_bytes=max_bytes)])])

        def partition_of(answer: Any) -> Any:
            if not answer.responses or not answer.responses[0].partitions:
                return None  # nothing said about the partition (Tansu, sometimes)
            return answer.responses[0].partitions[0]

        part = self._partition_call("Fetch", topic, partition, FETCH, 12, body, partition_of)
        if part is None:
            return FetchResult([], -1, -1, -1)
        return FetchResult(_batches(part, decode, f"{topic}-{partition}"), part.high_watermark,
                           part.last_stable_offset, part.log_start_offset)

    def read_all(self, topic: str, partition: int, start: int, end: int, isolation_level: int = 0,
                 decode: bool = True) -> Iterator[FetchedBatch]:
        """Every batch covering offsets [start, end), control batches included, aborted ones flagged
        (with ``decode=False`` the records are left in ``raw`` for the caller to decode)."""
        offset = start
        silent = 0
        while offset < end:
            fetched = self.fetch(topic, partition, offset, isolation_level=isolation_level, decode=decode)
            if fetched.high_watermark < 0:
                silent += 1
                if silent > RETRIES:
                    raise KafkaClientError(6, f"{topic}-{partition}: the broker keeps answering nothing")
                continue
            if not fetched.batches:
                limit = fetched.last_stable_offset if isolation_level else fetched.high_watermark
                if limit <= offset:
                    raise KafkaClientError(1, f"{topic}-{partition}: offsets {offset}..{end} are not there "
                                              f"(the log ends at {limit})")
                continue
            for batch in fetched.batches:
                if batch.header.next_offset <= offset:
                    continue
                if batch.header.base_offset >= end:
                    return
                yield batch
                offset = batch.header.next_offset

    # -- produce ---------------------------------------------------------------------------------------
    def init_producer_id(self) -> tuple[int, int]:
        m = api.request_module(INIT_PRODUCER_ID)
        body = m.InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000, producer_id=-1,
                                       producer_epoch=-1)
        for attempt in range(RETRIES + 1):
            answer = self._any().request(INIT_PRODUCER_ID, 4, body)
            if answer.error_code:
                self._retry(answer.error_code, "InitProducerId", attempt)
                continue
            return answer.producer_id, answer.producer_epoch
        raise AssertionError("unreachable")

    def produce(self, topic: str, partition: int, batch: bytes, acks: int = -1) -> int:
        """Send one record batch; returns its base offset (-1 with acks=0).  Retries resend the same bytes,
        so an idempotent batch is stored once."""
        m = api.request_module(PRODUCE)
        body = m.ProduceRequest(acks=acks, timeout_ms=30000, topic_data=[m.TopicProduceData(
            name=topic, partition_data=[m.PartitionProduceData(index=partition, records=batch)])])
        if acks == 0:
            self._leader(topic, partition).send_only(PRODUCE, 9, body)
            return -1
        part = self._partition_call("Produce", topic, partition, PRODUCE, 9, body,
                                    lambda answer: answer.responses[0].partition_responses[0])
        return part.base_offset

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    def __enter__(self) -> KafkaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _corrupt(where: str, offset: int | str, exc: CodecError) -> KafkaClientError:
    """What a Kafka consumer raises as CorruptRecordException: the partition and offset of a batch that
    does not decode (a broker storing batches unchecked, e.g. mockbroker's mock.produce.validation=envelope)."""
    return KafkaClientError(ErrorCode.CORRUPT_MESSAGE, f"{where} batch at offset {offset} does not decode ({exc})")


def _batches(part: Any, decode: bool = True, where: str = "?") -> list[FetchedBatch]:
    data = part.records
    if not data:
        return []
    aborted_from = sorted((a.first_offset, a.producer_id) for a in (part.aborted_transactions or []))
    out: list[FetchedBatch] = []
    aborting: set[int] = set()
    pending = list(aborted_from)
    try:
        entries = list(rec.iter_batches(data, allow_partial_tail=True))
    except CodecError as exc:
        raise _corrupt(where, "?", exc) from None
    for _pos, magic, view in entries:
        if magic != 2:
            raise BrokerError(f"magic {magic} batch in a Fetch v4+ answer")
        try:
            if decode:
                (header, records), raw = rec.decode_batch(view), None
            else:
                header, records, raw = rec.verify_batch(view), [], view
        except CodecError as exc:
            raise _corrupt(where, int.from_bytes(view[:8], "big", signed=True), exc) from None
        while pending and pending[0][0] <= header.last_offset:
            aborting.add(pending.pop(0)[1])
        is_aborted = False
        if header.is_transactional and header.producer_id in aborting:
            if header.is_control:
                aborting.discard(header.producer_id)  # the ABORT marker closes it
            else:
                is_aborted = True
        out.append(FetchedBatch(header, records, is_aborted, raw))
    return out
