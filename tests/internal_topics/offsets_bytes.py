"""Test helpers: ``__consumer_offsets`` read back with a real client (confluent-kafka) and its OffsetCommit
records decoded by hand from Kafka's layout (independent of mockbroker's generated codec, so the tests
check the bytes): key = int16 version (0/1: OffsetCommit) + group, topic (int16-length strings) +
int32 partition; value = int16 version + int64 offset, [v3+: int32 leader epoch], string metadata,
int64 commit timestamp, [v1: int64 expire timestamp]."""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(frozen=True)
class Rec:
    partition: int
    key: bytes
    value: bytes | None

    @property
    def record_type(self) -> int:
        return int(struct.unpack_from(">h", self.key)[0])


def _string(buf: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">h", buf, pos)
    return buf[pos + 2:pos + 2 + n].decode(), pos + 2 + n


def offset_key(key: bytes) -> tuple[str, str, int] | None:
    """(group, topic, partition) of an OffsetCommitKey, None for another record type."""
    (version,) = struct.unpack_from(">h", key)
    if version not in (0, 1):
        return None
    group, pos = _string(key, 2)
    topic, pos = _string(key, pos)
    (partition,) = struct.unpack_from(">i", key, pos)
    assert pos + 4 == len(key)
    return group, topic, partition


def offset_value(value: bytes) -> dict[str, object]:
    """An OffsetCommitValue (v1 or v3) as a dict."""
    (version,) = struct.unpack_from(">h", value)
    (offset,) = struct.unpack_from(">q", value, 2)
    pos, epoch = 10, -1
    if version >= 3:
        (epoch,) = struct.unpack_from(">i", value, pos)
        pos += 4
    metadata, pos = _string(value, pos)
    (commit_ms,) = struct.unpack_from(">q", value, pos)
    pos += 8
    expire_ms = -1
    if version == 1:
        (expire_ms,) = struct.unpack_from(">q", value, pos)
        pos += 8
    assert pos == len(value), "trailing bytes"
    return {"version": version, "offset": offset, "epoch": epoch, "metadata": metadata, "commit_ms": commit_ms,
            "expire_ms": expire_ms}


def group_key(key: bytes) -> str | None:
    """The group of a GroupMetadataKey (type 2) or a consumer group record (types 3-8: the key starts with
    the group id), None for OffsetCommit."""
    (version,) = struct.unpack_from(">h", key)
    return None if version in (0, 1) else _string(key, 2)[0]


def read_offsets_topic(bootstrap: str, timeout: float = 20) -> list[Rec]:
    """Every record of every ``__consumer_offsets`` partition, read from the beginning by a consumer."""
    # (librdkafka has no exclude.internal.topics: an assigned internal partition is read like any other)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "offsets-reader", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    try:
        partitions = list(c.list_topics(OFFSETS_TOPIC, timeout=10).topics[OFFSETS_TOPIC].partitions)
        ends = {p: c.get_watermark_offsets(TopicPartition(OFFSETS_TOPIC, p), timeout=10)[1] for p in partitions}
        todo = {p for p, end in ends.items() if end > 0}
        c.assign([TopicPartition(OFFSETS_TOPIC, p, OFFSET_BEGINNING) for p in sorted(todo)])
        out: list[Rec] = []
        deadline = time.monotonic() + timeout
        while todo and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    todo.discard(m.partition())
                continue
            out.append(Rec(m.partition(), bytes(m.key()), None if m.value() is None else bytes(m.value())))
        assert not todo, f"partitions not read to their end: {sorted(todo)}"
        return out
    finally:
        c.close()


def offsets_of(records: list[Rec]) -> dict[tuple[str, str, int], list[tuple[int, dict[str, object] | None]]]:
    """(group, topic, partition) -> [(its __consumer_offsets partition, value or None for a tombstone)], in order."""
    out: dict[tuple[str, str, int], list[tuple[int, dict[str, object] | None]]] = {}
    for r in records:
        key = offset_key(r.key)
        if key is not None:
            out.setdefault(key, []).append((r.partition, None if r.value is None else offset_value(r.value)))
    return out
