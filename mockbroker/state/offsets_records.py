"""The group coordinator's records in ``__consumer_offsets``, in Kafka's on-disk framing.

Kafka (CoordinatorRecordSerde) writes a record key as an int16 version followed by the key struct
written at that version, and the version *is* the record type: 0/1 OffsetCommit, 2 GroupMetadata,
3 ConsumerGroupMetadata, 4 ConsumerGroupPartitionMetadata, 5 ConsumerGroupMemberMetadata,
6 ConsumerGroupTargetAssignmentMetadata, 7 ConsumerGroupTargetAssignmentMember and
8 ConsumerGroupCurrentMemberAssignment.  A value is an int16 value version and the value struct;
a tombstone is a null value.  The structs are the generated codecs of Kafka's own message
definitions (tools/protogen/spec-overlay/*Key.json, *Value.json).  Pure: no state, no I/O.
"""

from __future__ import annotations

import struct
from types import ModuleType
from typing import Any

from mockbroker.codec_errors import CodecError
from mockbroker.protocol import api
from mockbroker.state import coordinator_records

OFFSET_COMMIT = 1  # the key version Kafka writes (0 is the pre-0.10 form of the same key)
GROUP_METADATA = 2
CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_PARTITION_METADATA = 4
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8

# record type -> the message name of its key and value (OffsetCommit's type 0 reads as type 1)
_NAMES = {
    0: "OffsetCommit",
    OFFSET_COMMIT: "OffsetCommit",
    GROUP_METADATA: "GroupMetadata",
    CONSUMER_GROUP_METADATA: "ConsumerGroupMetadata",
    CONSUMER_GROUP_PARTITION_METADATA: "ConsumerGroupPartitionMetadata",
    CONSUMER_GROUP_MEMBER_METADATA: "ConsumerGroupMemberMetadata",
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: "ConsumerGroupTargetAssignmentMetadata",
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: "ConsumerGroupTargetAssignmentMember",
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: "ConsumerGroupCurrentMemberAssignment",
}
# the value versions Kafka 4.x writes (OffsetCommitValue: 1 when an expire timestamp is set, else 3)
OFFSET_VALUE_VERSION, OFFSET_VALUE_VERSION_EXPIRING = 3, 1
GROUP_METADATA_VALUE_VERSION = 3
_VERSION = struct.Struct(">h")


class RecordError(ValueError):
    """A ``__consumer_offsets`` record that is not one of the group coordinator's."""


def record_name(record_type: int) -> str:
    """The message name stem of a record type's key and value (``OffsetCommit``: OffsetCommitKey/Value)."""
    return _NAMES[record_type]


def key_module(record_type: int) -> ModuleType:
    return api.module(_NAMES[record_type] + "Key")


def value_module(record_type: int) -> ModuleType:
    return api.module(_NAMES[record_type] + "Value")


def encode_key(record_type: int, **fields: Any) -> bytes:
    """A record key: ``record_type`` as the version, then the key struct at that version."""
    mod = key_module(record_type)
    return coordinator_records.encode_with(mod, record_type, mod.ROOT(**fields))


def encode_value(record_type: int, version: int, **fields: Any) -> bytes:
    """A record value: ``version``, then the value struct of ``record_type`` at that version."""
    mod = value_module(record_type)
    return coordinator_records.encode_with(mod, version, mod.ROOT(**fields))


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return encode_key(OFFSET_COMMIT, group=group, topic=topic, partition=partition)


def offset_value(offset: int, leader_epoch: int, metadata: str | None, commit_ms: int, expire_ms: int = -1) -> bytes:
    """OffsetCommitValue as Kafka's GroupCoordinatorRecordHelpers.newOffsetCommitRecord writes it: v3
    (with the leader epoch), or v1 when the commit set an expire timestamp (OffsetCommit v2-4's
    retention time)."""
    version = OFFSET_VALUE_VERSION_EXPIRING if expire_ms >= 0 else OFFSET_VALUE_VERSION
    mod = _OFFSET_VALUE or _offset_value_module()
    value = mod.ROOT(offset, leader_epoch, metadata or "", commit_ms, expire_ms)
    return coordinator_records.encode_with(mod, version, value)


_OFFSET_VALUE: ModuleType | None = None


def _offset_value_module() -> ModuleType:
    global _OFFSET_VALUE
    _OFFSET_VALUE = value_module(OFFSET_COMMIT)
    return _OFFSET_VALUE


def decode(key: bytes | memoryview, value: bytes | memoryview | None) -> tuple[int, Any, int, Any]:
    """(record type, key struct, value version, value struct or None for a tombstone); RecordError when
    the bytes are not a group coordinator record (another coordinator's, or damaged)."""
    try:
        (record_type,) = _VERSION.unpack_from(key, 0)
        if record_type not in _NAMES:
            raise RecordError(f"record type {record_type} is not a group coordinator record")
        key_obj, _ = api.decode_message(key_module(record_type), record_type, memoryview(key), 2)
        if value is None:
            return record_type, key_obj, -1, None
        (version,) = _VERSION.unpack_from(value, 0)
        value_obj, _ = api.decode_message(value_module(record_type), version, memoryview(value), 2)
    except (CodecError, struct.error) as exc:
        raise RecordError(f"unreadable group coordinator record: {exc}") from None
    return (OFFSET_COMMIT if record_type == 0 else record_type), key_obj, version, value_obj
