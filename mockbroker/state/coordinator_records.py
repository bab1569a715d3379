"""Coordinator records in an internal topic: one record appended as Kafka's coordinators append theirs, and
the records of a topic read back in log order for the loaders (state/coordinator_load.py).

Kafka's coordinators write the records of each change in a v2 batch (no compression, no producer id) to the
partition of the internal topic that :func:`~mockbroker.state.internal_topics.partition_for` gives their
key; the key and value are an int16 version (the record type for coordinator keys) and the message.
A null value is a tombstone.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from mockbroker import batches
from mockbroker import records as rec
from mockbroker.errors import KafkaError
from mockbroker.protocol import api
from mockbroker.records.varint import append_varint
from mockbroker.state import internal_topics
from mockbroker.state.log import PartitionLog, StoredBatch

log = logging.getLogger("mockbroker.state")

_VERSION = struct.Struct(">h")


def encode(name: str, version: int, message: Any) -> bytes:
    """``message`` (a generated ``name`` struct) as Kafka stores it: int16 ``version``, then its fields at
    ``version`` (for coordinator keys the version is the record type and the fields are version 0's)."""
    mod = api.module(name)
    return encode_with(mod, version, message, version if version in mod.WRITERS else 0)


def encode_with(mod: ModuleType, version: int, message: Any, fields_version: int | None = None) -> bytes:
    """``message`` of the generated module ``mod``: int16 ``version``, then its fields at ``fields_version``
    (default: ``version``)."""
    out = bytearray(_VERSION.pack(version))
    api.encode_message(mod, version if fields_version is None else fields_version, message, out, [])
    return bytes(out)  # (no holes: these structs carry no record sets)


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


def records_body(items: list[tuple[bytes, bytes | None]]) -> bytearray:
    """The records of a v2 batch (no attributes, timestamp delta 0, offset delta = index, no headers):
    what records.build_batch makes of them, without its general cases (a commit's cost)."""
    out = bytearray()
    for index, (key, value) in enumerate(items):
        one = bytearray(2)  # attributes 0, timestamp delta 0
        append_varint(one, index)
        append_varint(one, len(key))
        one += key
        if value is None:
            one.append(1)  # a null value: length -1
        else:
            append_varint(one, len(value))
            one += value
        one.append(0)  # no headers
        append_varint(out, len(one))
        out += one
    return out


def append(state: Any, topic_name: str, key: str, items: list[tuple[bytes, bytes | None]],
           now: int | None = None) -> PartitionLog:
    """Append ``items`` (record key, record value or None for a tombstone) in one batch to ``key``'s
    partition of ``topic_name``, CreateTime ``now`` (None: the cluster clock's now); the partition it went
    to.  Kafka's coordinators write the records of one change in one batch (all or none)."""
    plog = partition_of(state, topic_name, key)
    now = state.clock.now_ms() if now is None else now
    base, last = plog.next_offset, len(items) - 1
    data = rec.batch_from_body(records_body(items), len(items), last, now, now, base_offset=base,
                               partition_leader_epoch=plog.leader_epoch)
    size_before = plog.size_bytes
    plog.append(StoredBatch(base, base + last, now, len(data), (data,)))
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
            try:
                header, records = batches.decode_stored(stored)
            except KafkaError as exc:
                log.warning("%s-%d: batch at offset %d skipped: %s", topic_name, plog.index, stored.base_offset,
                            exc.message)
                continue
            for r in records:
                if r.key is None:
                    continue
                value = None if r.value is None else bytes(r.value)
                yield plog.index, header.base_offset + r.offset_delta, bytes(r.key), value
