"""Coordinator records in an internal topic: one record appended as Kafka's coordinators append theirs, and
the records of a topic read back in log order for the loaders (state/coordinator_load.py).

Kafka's coordinators write each record in a v2 batch of its own (no compression, no producer id) to the
partition of the internal topic that :func:`~mockbroker.state.internal_topics.partition_for` gives their
key; the key and value are an int16 version (the record type for coordinator keys) and the message.
A null value is a tombstone.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator
from typing import Any

from mockbroker import records as rec
from mockbroker.codec_errors import CodecError
from mockbroker.protocol import api
from mockbroker.state import internal_topics
from mockbroker.state.log import PartitionLog, StoredBatch

log = logging.getLogger("mockbroker.state")

_VERSION = struct.Struct(">h")


def encode(name: str, version: int, message: Any) -> bytes:
    """``message`` (a generated ``name`` struct) as Kafka stores it: int16 ``version``, then its fields at
    ``version`` (for coordinator keys the version is the record type and the fields are version 0's)."""
    mod = api.module(name)
    out = bytearray(_VERSION.pack(version))
    api.encode_message(mod, version if version in mod.WRITERS else 0, message, out, [])
    return bytes(out)


def decode(name: str, data: bytes | memoryview, version: int | None = None) -> Any:
    """The ``name`` message after the int16 version prefix of ``data`` (read at ``version`` when given)."""
    view = memoryview(data)
    if len(view) < 2:
        raise ValueError(f"{name}: {len(view)} bytes, too short for its version")
    mod = api.module(name)
    stored = _VERSION.unpack_from(view, 0)[0]
    message, _end = api.decode_message(mod, stored if version is None else version, view, 2)
    return message


def record_type(key: bytes | memoryview) -> int:
    """The int16 version (record type) a coordinator key starts with (ValueError: the key is shorter)."""
    if len(key) < 2:
        raise ValueError(f"a {len(key)}-byte key, too short for its record type")
    return int(_VERSION.unpack_from(key, 0)[0])


def partition_of(state: Any, topic_name: str, key: str) -> PartitionLog:
    """The partition of ``topic_name`` (created with Kafka's settings when missing) holding ``key``."""
    topic = internal_topics.ensure(state, topic_name)
    return topic.partitions[internal_topics.partition_for(key, len(topic.partitions))]  # type: ignore[no-any-return]


def append(state: Any, topic_name: str, key: str, record_key: bytes, record_value: bytes | None) -> PartitionLog:
    """Append one record (``record_value`` None: a tombstone) in a batch of its own to ``key``'s partition
    of ``topic_name``, stamped with the cluster clock; the partition it went to."""
    plog = partition_of(state, topic_name, key)
    now = state.clock.now_ms()
    offset = plog.next_offset
    data = rec.build_batch([(record_key, record_value, None, now)], base_offset=offset, base_timestamp=now,
                           partition_leader_epoch=plog.leader_epoch)
    size_before = plog.size_bytes
    plog.append(StoredBatch(offset, offset, now, len(data), (data,)))
    state.memory_cap.added(plog, size_before)
    return plog


def read(state: Any, topic_name: str) -> Iterator[tuple[int, int, bytes, bytes | None]]:
    """Every keyed record of ``topic_name`` (partition by partition, in offset order) as (partition, offset,
    key, value); control batches and records without a key are skipped, an unreadable batch is logged and
    skipped (Kafka's loaders log and go on)."""
    topic = state.topics.get(topic_name)
    if topic is None:
        return
    for plog in topic.partitions:
        for stored in list(plog.batches):
            if stored.is_control:
                continue
            data = b"".join(bytes(b) for b in stored.buffers)
            try:
                header, records = rec.decode_batch(data)
            except CodecError as exc:
                log.warning("%s-%d: batch at offset %d skipped: %s", topic_name, plog.index, stored.base_offset, exc)
                continue
            for r in records:
                if r.key is None:
                    continue
                value = None if r.value is None else bytes(r.value)
                yield plog.index, header.base_offset + r.offset_delta, bytes(r.key), value
