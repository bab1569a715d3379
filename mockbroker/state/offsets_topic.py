"""The group coordinator's changes written to ``__consumer_offsets`` as Kafka writes them.

Each change appends one plain (non-transactional) v2 batch, CreateTime = the clock's now, to the
partition Kafka keeps the group in (``internal_topics.partition_for(group_id, partitions)``; the
topic is created with Kafka's settings when missing):

- OffsetCommit: one OffsetCommit record per partition (key v1; value v3, or v1 with an expire
  timestamp); TxnOffsetCommit offsets are written, plain, when their transaction commits (nothing on
  abort).  Deviation: Kafka writes them at once in a transactional batch that the COMMIT/ABORT marker
  settles (the loader, state.offsets_replay, reads that form too);
- OffsetDelete, a deleted topic's offsets, expired offsets (state.offsets_expiry) and DeleteGroups:
  OffsetCommit tombstones;
- a classic group: GroupMetadata (value v3) when a rebalance ends (the leader's SyncGroup, a static
  member replaced without rebalance) and when the group turns empty, its tombstone on deletion;
- a KIP-848 consumer group: ConsumerGroupMemberMetadata, ConsumerGroupMetadata (the group epoch),
  ConsumerGroupTargetAssignmentMember/Metadata and ConsumerGroupCurrentMemberAssignment whenever they
  change, tombstones for a member that leaves and for the whole group on deletion (or when it turns
  classic).  ConsumerGroupPartitionMetadata (type 4) is not written: Kafka 4.0 still writes it, 4.1+ writes
  a metadata hash instead (KIP-1101); the mock recomputes what it needs from the topics.

Group records are written by difference: the writer keeps, per group, the records it last wrote
(key -> value) and writes what differs from the group's present image.  Deviation: Kafka also writes an
empty GroupMetadata when a classic group is created by its first JoinGroup; the mock writes it when
that join completes (or the group turns empty).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mockbroker.state import coordinator_records
from mockbroker.state import offsets_records as recs
from mockbroker.state.group_offsets import COMPLETING, PREPARING
from mockbroker.state.internal_topics import CONSUMER_OFFSETS

OffsetRow = tuple[str, int, int, int, str | None]  # topic, partition, offset, leader epoch, metadata
_MEMBER_TYPES = (recs.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, recs.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
                 recs.CONSUMER_GROUP_MEMBER_METADATA)
Image = dict[bytes, bytes]  # a group's records: key -> value
KEYS_KEPT = 100_000  # OffsetCommit keys kept encoded (each commit of a partition writes the same key again)


def _frozen(parts: dict[str, set[int]]) -> tuple[Any, ...]:
    return tuple(sorted((t, tuple(sorted(p))) for t, p in parts.items()))


def _member_facts(m: Any) -> tuple[Any, ...]:
    return (m.member_id, m.instance_id, m.rack_id, m.client_id, m.client_host, tuple(m.subscribed), m.regex,
            m.rebalance_timeout_ms, m.assignor, m.epoch, m.previous_epoch, m.left_static, _frozen(m.assigned),
            _frozen(m.revoking))


def _consumer_facts(g: Any) -> tuple[Any, ...]:
    """Everything a KIP-848 group's records are made of, as plain values (cheaper than encoding them)."""
    return (g.group_epoch, g.assignment_epoch,
            tuple(sorted((mid, _frozen(parts)) for mid, parts in g.target.items())),
            tuple(sorted(_member_facts(m) for m in g.members.values())))


def _quick_facts(g: Any) -> tuple[Any, ...]:
    """What a heartbeat may change in a KIP-848 group besides its own member: the epochs (a new target
    assignment moves the assignment epoch) and who the members are."""
    return g.group_epoch, g.assignment_epoch, tuple(g.members)


class OffsetsTopicWriter:
    """Appends the group coordinator's records to ``__consumer_offsets`` of ``cluster`` (a ClusterState)."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.written: dict[str, dict[bytes, bytes]] = {}  # group id -> its live group records (key -> value)
        self._keys: dict[tuple[str, str, int], bytes] = {}
        # group id -> what its KIP-848 records were last made from: a heartbeat changing nothing encodes nothing
        self._seen: dict[str, tuple[Any, ...]] = {}
        # group id -> (its _quick_facts, each member's _member_facts) when its records were last made: a
        # member's heartbeat that changed neither costs one member's facts, not the whole group's
        self._quick: dict[str, tuple[tuple[Any, ...], dict[str, tuple[Any, ...]]]] = {}

    # -- appending ---------------------------------------------------------------------------------
    def append(self, group_id: str, items: list[tuple[bytes, bytes | None]], now: int | None = None) -> None:
        """One batch with ``items`` (key, value or None) in the group's partition; CreateTime ``now`` (None:
        the clock's now)."""
        if not items:
            return
        coordinator_records.append(self.cluster, CONSUMER_OFFSETS, group_id, items, now)

    def offset_key(self, group_id: str, topic: str, partition: int) -> bytes:
        key = self._keys.get((group_id, topic, partition))
        if key is None:
            if len(self._keys) >= KEYS_KEPT:
                self._keys.clear()
            key = self._keys[(group_id, topic, partition)] = recs.offset_key(group_id, topic, partition)
        return key

    # -- offsets -----------------------------------------------------------------------------------
    def offsets(self, group_id: str, rows: Iterable[OffsetRow], expire_ms: int = -1, now: int | None = None) -> None:
        """OffsetCommit records of ``rows``, committed at ``now`` (None: the clock's now)."""
        now = self.cluster.clock.now_ms() if now is None else now
        self.append(group_id, [(self.offset_key(group_id, topic, partition),
                                recs.offset_value(offset, epoch, metadata, now, expire_ms))
                               for topic, partition, offset, epoch, metadata in rows], now)

    def offset_tombstones(self, group_id: str, partitions: Iterable[tuple[str, int]]) -> None:
        self.append(group_id, [(recs.offset_key(group_id, t, p), None) for t, p in partitions])

    # -- groups ------------------------------------------------------------------------------------
    def group_changed(self, group: Any, member_id: str | None = None) -> None:
        """Write what changed in ``group`` (a groups.Group) since its records were last written;
        ``member_id``: the KIP-848 member whose heartbeat this follows (nothing else of the members changed)."""
        gid = group.group_id
        g = group.consumer
        if g is not None:
            quick = self._quick.get(gid)
            if member_id is not None and quick is not None and gid in self.written and quick[0] == _quick_facts(g):
                member = g.members.get(member_id)
                if member is None or quick[1].get(member_id) == _member_facts(member):
                    return
            seen = _consumer_facts(g)
            self._quick[gid] = (_quick_facts(g), {mid: _member_facts(m) for mid, m in g.members.items()})
            if self._seen.get(gid) == seen and gid in self.written:
                return
            self._seen[gid] = seen
        else:
            self._seen.pop(gid, None)
            self._quick.pop(gid, None)
        image = self.image(group)
        if image is None:
            return
        old = self.written.get(group.group_id, {})
        member_gone: list[tuple[bytes, bytes | None]] = []
        group_gone: list[tuple[bytes, bytes | None]] = []
        for key in old:
            if key not in image:
                (member_gone if key[1] in _MEMBER_TYPES else group_gone).append((key, None))
        upserts = [(key, value) for key, value in image.items() if old.get(key) != value]
        # as Kafka: a member's current assignment, target and metadata; a group's target epoch, then its epoch
        member_gone.sort(key=lambda item: -item[0][1])
        group_gone.sort(key=lambda item: -item[0][1])
        items: list[tuple[bytes, bytes | None]] = [*member_gone, *upserts, *group_gone]
        if items:
            self.written[group.group_id] = image
            self.append(group.group_id, items)

    def group_deleted(self, group_id: str, partitions: Iterable[tuple[str, int]]) -> None:
        """DeleteGroups: tombstones for the group's offsets and for its group records."""
        self._seen.pop(group_id, None)
        self._quick.pop(group_id, None)
        items: list[tuple[bytes, bytes | None]] = [(recs.offset_key(group_id, t, p), None) for t, p in partitions]
        items += [(key, None) for key in sorted(self.written.pop(group_id, {}), key=lambda key: -key[1])]
        self.append(group_id, items)

    def image(self, group: Any) -> Image | None:
        """The group records ``group`` stands for now; None while a classic group rebalances (Kafka
        writes nothing until the rebalance ends)."""
        if group.consumer is not None:
            return self._consumer_image(group.group_id, group.consumer)
        if group.state in (PREPARING, COMPLETING):
            return None
        key = recs.encode_key(recs.GROUP_METADATA, group=group.group_id)
        members = [dict(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                        client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
                        session_timeout=m.session_timeout_ms,
                        subscription=dict(m.protocols).get(group.protocol_name or "", b""), assignment=m.assignment)
                   for m in group.members.values()]
        mod = recs.value_module(recs.GROUP_METADATA)
        value = recs.encode_value(recs.GROUP_METADATA, recs.GROUP_METADATA_VALUE_VERSION,
                                  protocol_type=group.protocol_type or "", generation=group.generation,
                                  protocol=group.protocol_name, leader=group.leader,
                                  current_state_timestamp=group.state_ms,
                                  members=[mod.MemberMetadata(**m) for m in members])
        return {key: value}

    def _consumer_image(self, group_id: str, g: Any) -> Image:
        topics = self.cluster.topics
        vmod = {t: recs.value_module(t) for t in (recs.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
                                                    recs.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT)}

        def parts(mod: Any, assigned: dict[str, set[int]]) -> list[Any]:
            struct = mod.TopicPartition if hasattr(mod, "TopicPartition") else mod.TopicPartitions
            return [struct(topic_id=topics[t].topic_id, partitions=sorted(p))
                    for t, p in sorted(assigned.items()) if p and t in topics]

        out: Image = {}

        def put(record_type: int, key_fields: dict[str, Any], **value: Any) -> None:
            key = recs.encode_key(record_type, group_id=group_id, **key_fields)
            out[key] = recs.encode_value(record_type, 0, **value)

        members = sorted(g.members.values(), key=lambda m: m.member_id)
        for m in members:
            put(recs.CONSUMER_GROUP_MEMBER_METADATA, {"member_id": m.member_id}, instance_id=m.instance_id,
                rack_id=m.rack_id, client_id=m.client_id, client_host=m.client_host,
                subscribed_topic_names=sorted(m.subscribed), subscribed_topic_regex=m.regex,
                rebalance_timeout_ms=m.rebalance_timeout_ms, server_assignor=m.assignor, classic_member_metadata=None)
        put(recs.CONSUMER_GROUP_METADATA, {}, epoch=g.group_epoch)
        mod = vmod[recs.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER]
        for member_id in sorted(g.target):
            put(recs.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, {"member_id": member_id},
                topic_partitions=parts(mod, g.target[member_id]))
        put(recs.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, {}, assignment_epoch=g.assignment_epoch)
        mod = vmod[recs.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT]
        for m in members:
            put(recs.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, {"member_id": m.member_id},
                member_epoch=-2 if m.left_static else m.epoch, previous_member_epoch=m.previous_epoch,
                state=1 if m.revoking else 0, assigned_partitions=parts(mod, m.assigned),
                partitions_pending_revocation=parts(mod, m.revoking))
        return out
