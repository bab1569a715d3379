"""The share coordinator's records in ``__share_group_state``: each share-partition's state written when it
changes, read back into a fresh cluster's share-partitions.

Kafka's share-partition leaders persist their state through the share coordinator, which writes it to
``__share_group_state`` partition ``partition_for("groupId:topicId:partition", partitions)`` (topic id
in Kafka's base64 form): a ShareSnapshot (key type 0: start offset, state epoch, leader epoch and the
state batches -- first/last offset, delivery state 0 Available / 2 Acknowledged / 4 Archived, delivery
count) the first time, then ShareUpdate records (key type 1) over it until
``share.coordinator.snapshot.update.records.per.snapshot`` of them, then a new ShareSnapshot with the next
snapshot epoch.  Values are int16 version 0 and the message; deleting a share-partition's state writes a
tombstone.

The mock writes when a share-partition starts (its start offset, as Kafka's InitializeShareGroupState),
after acknowledgements, releases (a member gone, a share session closed), expired acquisition locks, a
start offset moved by the log's start or AlterShareGroupOffsets (a new state epoch), and writes a
tombstone when the state is deleted (DeleteShareGroupOffsets, the group deleted).  Deviation: each
ShareUpdate carries the whole in-flight state (Kafka's carries the changed batches), and an ACQUIRED
record is written as Available with its delivery count (acquisitions are not persisted, as in Kafka, so
a loaded share-partition offers it again).  A deleted topic's share-partitions get no tombstone: the
loader skips keys whose topic id no topic has.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mockbroker.codec_errors import CodecError
from mockbroker.protocol import api
from mockbroker.state import coordinator_records
from mockbroker.state.ids import uuid_text
from mockbroker.state.internal_topics import SHARE_GROUP_STATE
from mockbroker.state.share_partitions import InFlightRecord, RecordState, SharePartition, SharePartitionKey

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState

log = logging.getLogger("mockbroker.state")

SNAPSHOT, UPDATE = 0, 1  # record types (the key's int16 version)
# record type -> the message names of its key and value
RECORD_NAMES = {SNAPSHOT: ("ShareSnapshotKey", "ShareSnapshotValue"), UPDATE: ("ShareUpdateKey", "ShareUpdateValue")}
_PERSISTED = {RecordState.AVAILABLE: 0, RecordState.ACQUIRED: 0, RecordState.ACKNOWLEDGED: 2, RecordState.ARCHIVED: 4}
_LOADED = {0: RecordState.AVAILABLE, 2: RecordState.ACKNOWLEDGED, 4: RecordState.ARCHIVED}

StateBatch = tuple[int, int, int, int]  # first offset, last offset, delivery state id, delivery count


def coordinator_key(group_id: str, topic_id: bytes, partition: int) -> str:
    """SharePartitionKey.asCoordinatorKey: what places the share-partition's records."""
    return f"{group_id}:{uuid_text(topic_id)}:{partition}"


def state_batches(sp: SharePartition) -> list[StateBatch]:
    """The share-partition's records at or past its start offset as runs of one state and delivery count."""
    out: list[StateBatch] = []
    for r in sp.state()["records"]:
        offset = r["offset"]
        if offset < sp.start_offset:
            continue
        state, count = _PERSISTED[RecordState[r["state"]]], r["delivery_count"]
        if out and out[-1][1] == offset - 1 and out[-1][2:] == (state, count):
            out[-1] = (out[-1][0], offset, state, count)
        else:
            out.append((offset, offset, state, count))
    return out


@dataclass
class Written:
    """What has been written for one share-partition (Kafka's shareStateMap and snapshotUpdateCount)."""

    snapshot_epoch: int = 0
    state_epoch: int = 0
    updates: int = 0  # ShareUpdate records since the last ShareSnapshot


class ShareStateLog:
    """ShareCoordinator.log: share-partition states written as Kafka's share coordinator writes them."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.written: dict[SharePartitionKey, Written] = {}

    def write(self, key: SharePartitionKey, sp: SharePartition, new_state_epoch: bool = False) -> None:
        """Record ``sp``'s state: a ShareSnapshot first (and every ``...records.per.snapshot`` updates, or
        with ``new_state_epoch``: its start offset was reset), else a ShareUpdate."""
        group_id, topic_name, partition = key
        topic = self.state.topics.get(topic_name)
        if topic is None:
            return
        seen = self.written.get(key)
        per_snapshot = int(self.state.config["share.coordinator.snapshot.update.records.per.snapshot"])
        leader_epoch = topic.partitions[partition].leader_epoch if partition < len(topic.partitions) else 0
        batches = state_batches(sp)
        if seen is None or new_state_epoch or seen.updates >= per_snapshot:
            if seen is None:
                seen = self.written[key] = Written()
            else:
                seen.snapshot_epoch = (seen.snapshot_epoch + 1) & 0xFFFF
                seen.state_epoch += 1 if new_state_epoch else 0
                seen.updates = 0
            mod = api.module("ShareSnapshotValue")
            value: Any = mod.ShareSnapshotValue(
                snapshot_epoch=seen.snapshot_epoch, state_epoch=seen.state_epoch, leader_epoch=leader_epoch,
                start_offset=sp.start_offset, state_batches=[_batch(mod, b) for b in batches])
            self._append(SNAPSHOT, group_id, topic.topic_id, partition, value)
            return
        seen.updates += 1
        mod = api.module("ShareUpdateValue")
        value = mod.ShareUpdateValue(snapshot_epoch=seen.snapshot_epoch, leader_epoch=leader_epoch,
                                     start_offset=sp.start_offset, state_batches=[_batch(mod, b) for b in batches])
        self._append(UPDATE, group_id, topic.topic_id, partition, value)

    def delete(self, key: SharePartitionKey) -> None:
        """The share-partition's state is gone: a ShareSnapshot tombstone (when anything was written)."""
        if self.written.pop(key, None) is None:
            return
        topic = self.state.topics.get(key[1])
        if topic is not None:
            self._append(SNAPSHOT, key[0], topic.topic_id, key[2], None)

    def forget_topic(self, topic_name: str) -> None:
        """A deleted topic's share-partitions: nothing written for them any more (no tombstone: the topic id
        is gone, and the loader skips keys no topic has)."""
        for key in [k for k in self.written if k[1] == topic_name]:
            del self.written[key]

    def _append(self, kind: int, group_id: str, topic_id: bytes, partition: int, value: Any) -> None:
        key_name, value_name = RECORD_NAMES[kind]
        key = api.module(key_name).ROOT(group_id=group_id, topic_id=bytes(topic_id), partition=partition)
        coordinator_records.append(
            self.state, SHARE_GROUP_STATE, coordinator_key(group_id, topic_id, partition),
            [(coordinator_records.encode(key_name, kind, key),
              None if value is None else coordinator_records.encode(value_name, 0, value))])


def _batch(mod: Any, b: StateBatch) -> Any:
    return mod.StateBatch(first_offset=b[0], last_offset=b[1], delivery_state=b[2], delivery_count=b[3])


# ---- loading ------------------------------------------------------------------------------------------


@dataclass
class _Loaded:
    start_offset: int
    records: dict[int, tuple[int, int]]  # offset -> (delivery state id, delivery count)
    written: Written


def _apply(loaded: dict[tuple[str, bytes, int], _Loaded], kind: int, key: Any, value: Any) -> None:
    ident = (key.group_id, bytes(key.topic_id), key.partition)
    if value is None:
        loaded.pop(ident, None)
        return
    current = loaded.get(ident)
    if kind == SNAPSHOT:
        current = loaded[ident] = _Loaded(value.start_offset, {}, Written(value.snapshot_epoch, value.state_epoch))
    elif current is None:  # an update with no snapshot before it (Kafka takes it as the state)
        current = loaded[ident] = _Loaded(value.start_offset, {}, Written(value.snapshot_epoch))
    else:
        current.written.updates += 1
        if value.start_offset >= 0:
            current.start_offset = value.start_offset
    for b in value.state_batches:
        for offset in range(b.first_offset, b.last_offset + 1):
            current.records[offset] = (b.delivery_state, b.delivery_count)
    current.records = {o: r for o, r in current.records.items() if o >= current.start_offset}


def _share_partition(loaded: _Loaded) -> SharePartition:
    sp = SharePartition(loaded.start_offset)
    records = {o: InFlightRecord(_LOADED.get(state, RecordState.AVAILABLE), count)
               for o, (state, count) in sorted(loaded.records.items())}
    sp._records = records  # restored in offset order, as acquisition would have left them
    sp.end_offset = max(records, default=loaded.start_offset - 1) + 1
    return sp


def load_share_state(state: ClusterState) -> None:
    """Rebuild the share coordinator's share-partitions from ``__share_group_state`` (nothing when empty)."""
    loaded: dict[tuple[str, bytes, int], _Loaded] = {}
    for partition, offset, key_data, value_data in coordinator_records.read(state, SHARE_GROUP_STATE):
        try:
            kind = coordinator_records.record_type(key_data)
            if kind not in RECORD_NAMES:
                continue  # Kafka: an unknown record type is skipped
            key_name, value_name = RECORD_NAMES[kind]
            key = coordinator_records.decode(key_name, key_data, 0)
            value = None if value_data is None else coordinator_records.decode(value_name, value_data)
        except (ValueError, CodecError) as exc:
            log.warning("%s-%d offset %d: record skipped: %s", SHARE_GROUP_STATE, partition, offset, exc)
            continue
        _apply(loaded, kind, key, value)
    if not loaded:
        return
    coordinator = state.share
    for (group_id, topic_id, index), found in sorted(loaded.items()):
        topic = state.topics_by_id.get(topic_id)
        if topic is None or index >= len(topic.partitions):
            continue
        sp_key: SharePartitionKey = (group_id, topic.name, index)
        coordinator.partitions.restore(sp_key, _share_partition(found))
        coordinator.log.written[sp_key] = found.written
