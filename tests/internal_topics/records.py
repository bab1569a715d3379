"""Helpers for the internal-topic tests, written from Kafka's formats (not from mockbroker's codec): a
struct reader for TransactionLog and ShareSnapshot / ShareUpdate keys and values, Java's String.hashCode
placement, reading an internal topic's records over the wire, and copying a cluster's logs into a fresh
ClusterState (what a data directory or a snapshot hands the loaders)."""

from __future__ import annotations

import base64
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from mockbroker.batches import stored_batch
from mockbroker.state import internal_topics
from mockbroker.state.cluster import ClusterState

STATES = ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
          "PrepareEpochFence"]


def java_partition(key: str, partitions: int = 50) -> int:
    """Utils.abs(key.hashCode()) % partitions, String.hashCode over UTF-16 code units."""
    h = 0
    data = key.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (h * 31 + int.from_bytes(data[i:i + 2], "big")) % 2**32
    signed = h - 2**32 if h >= 2**31 else h
    return (0 if signed == -2**31 else abs(signed)) % partitions


def uuid_text(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class Reader:
    """Big-endian fields, classic and compact (flexible) forms."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> Any:
        (value,) = struct.unpack_from(">" + fmt, self.data, self.pos)
        self.pos += struct.calcsize(">" + fmt)
        return value

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7

    def string(self, compact: bool) -> str:
        n = self.uvarint() - 1 if compact else self.take("h")
        text = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return text

    def count(self, compact: bool) -> int:
        return self.uvarint() - 1 if compact else int(self.take("i"))

    def tags(self) -> dict[int, bytes]:
        out = {}
        for _ in range(self.uvarint()):
            tag, size = self.uvarint(), self.uvarint()
            out[tag] = self.data[self.pos:self.pos + size]
            self.pos += size
        return out


@dataclass
class TxnValue:
    producer_id: int
    epoch: int
    timeout_ms: int
    state: str
    partitions: dict[str, list[int]] | None
    last_update_ms: int
    start_ms: int
    tags: dict[int, bytes] = field(default_factory=dict)


def txn_key(data: bytes) -> str:
    r = Reader(data)
    assert r.take("h") == 0, "TransactionLogKey version"
    return r.string(False)


def txn_value(data: bytes) -> tuple[int, TxnValue]:
    r = Reader(data)
    version = r.take("h")
    flexible = version >= 1
    pid, epoch, timeout, status = r.take("q"), r.take("h"), r.take("i"), r.take("b")
    n = r.count(flexible)
    partitions: dict[str, list[int]] | None = None if n < 0 else {}
    for _ in range(max(n, 0)):
        topic = r.string(flexible)
        ids = [r.take("i") for _ in range(r.count(flexible))]
        if flexible:
            r.tags()
        assert partitions is not None
        partitions[topic] = ids
    last, start = r.take("q"), r.take("q")
    tags = r.tags() if flexible else {}
    assert r.pos == len(data), "bytes left over"
    return version, TxnValue(pid, epoch, timeout, STATES[status], partitions, last, start, tags)


@dataclass
class ShareState:
    kind: str  # "snapshot" / "update"
    group_id: str
    topic_id: bytes
    partition: int
    snapshot_epoch: int = -1
    state_epoch: int = -1
    leader_epoch: int = -1
    start_offset: int = -1
    batches: list[tuple[int, int, int, int]] = field(default_factory=list)
    tombstone: bool = False


def share_record(key: bytes, value: bytes | None) -> ShareState:
    r = Reader(key)
    record_type = r.take("h")
    kind = {0: "snapshot", 1: "update"}[record_type]
    group, topic_id, partition = r.string(False), r.data[r.pos:r.pos + 16], None
    r.pos += 16
    partition = r.take("i")
    out = ShareState(kind, group, topic_id, partition)
    if value is None:
        out.tombstone = True
        return out
    v = Reader(value)
    assert v.take("h") == 0, "value version"
    out.snapshot_epoch = v.take("H")
    if kind == "snapshot":
        out.state_epoch = v.take("i")
    out.leader_epoch, out.start_offset = v.take("i"), v.take("q")
    for _ in range(v.count(True)):
        out.batches.append((v.take("q"), v.take("q"), v.take("b"), v.take("h")))
        v.tags()
    v.tags()
    assert v.pos == len(value), "bytes left over"
    return out


def read_topic(bootstrap: str, topic: str, partition: int, count: int, timeout: float = 15) -> list[Any]:
    """The first ``count`` records of ``topic``-``partition``, fetched by a confluent-kafka consumer."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "internal-topic-reader",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        out: list[Any] = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                out.append(m)
        return out
    finally:
        consumer.close()


def copy_logs(src: ClusterState, dst: ClusterState) -> None:
    """Every topic of ``src`` (same topic ids) with its batches, into ``dst``: what a data directory keeps."""
    for name, topic in src.topics.items():
        if internal_topics.is_internal(name):
            made = internal_topics.ensure(dst, name)
        else:
            made = dst.create_topic(name, len(topic.partitions), 1)
        del dst.topics_by_id[made.topic_id]
        made.topic_id = topic.topic_id
        dst.topics_by_id[made.topic_id] = made
        for old, new in zip(topic.partitions, made.partitions, strict=True):
            for b in old.batches:
                data = memoryview(b"".join(bytes(x) for x in b.buffers))
                new.append(stored_batch(data, b.base_offset, old.leader_epoch))
