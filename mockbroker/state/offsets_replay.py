"""Rebuilding the group coordinator from ``__consumer_offsets``, as Kafka's coordinator loads its
partitions (GroupCoordinatorShard.replay) when it becomes their leader.

Every partition's batches are read in offset order; for each key the newest record wins and a
tombstone removes it.  Control batches are skipped; a transactional batch (Kafka's TxnOffsetCommit
records; the mock itself writes its transactional offsets only once committed) counts once its
producer's COMMIT marker follows in the partition and never after an ABORT.  Then:

- committed offsets: offset, leader epoch, metadata, commit and expire timestamps;
- classic groups (GroupMetadata): protocol type, generation, protocol, leader and the members, restored
  as Kafka restores them: each with its subscription (as its one protocol) and assignment, its session
  starting at load (a member that does not heartbeat within its session timeout is removed, and the
  group rebalances or turns empty, as after a coordinator move in Kafka); the group is Stable with
  members, else Empty;
- KIP-848 consumer groups: group epoch, assignment epoch, members (metadata, epochs, assigned and
  pending-revocation partitions; sessions starting at load), target assignment.  Topic ids no longer
  in the cluster are left out of assignments.

Records that are not the group coordinator's (or do not decode) are skipped with a logged line.  The
writer (state.offsets_topic) is told which group records are live, so a later deletion tombstones them.
"""

from __future__ import annotations

import logging
from typing import Any

from mockbroker import records as rec
from mockbroker.state import offsets_records as recs
from mockbroker.state.consumer_groups import ConsumerGroupState, ConsumerMember
from mockbroker.state.group_offsets import EMPTY, STABLE
from mockbroker.state.groups import Member
from mockbroker.state.inspect import decoded_batches
from mockbroker.state.internal_topics import CONSUMER_OFFSETS

log = logging.getLogger("mockbroker.state")
Decoded = tuple[int, Any, int, Any]  # record type, key, value version, value


def live_records(partition: Any) -> dict[bytes, tuple[Decoded, bytes]]:
    """The partition's live group coordinator records: key bytes -> (decoded, value bytes), in the order
    their keys were last written."""
    live: dict[bytes, tuple[Decoded, bytes]] = {}
    # producer id -> records of its open transaction
    pending: dict[int, list[tuple[bytes, tuple[Decoded, bytes] | None]]] = {}
    for batch in decoded_batches(partition):
        header = batch.header
        if header.is_control:
            held = pending.pop(header.producer_id, [])
            if batch.records and rec.parse_control_record(batch.records[0])[1] == 1:  # COMMIT
                for held_key, held_entry in held:
                    _apply(live, held_key, held_entry)
            continue
        for r in batch.records:
            if r.key is None:
                continue
            key = bytes(r.key)
            try:
                decoded = recs.decode(key, None if r.value is None else bytes(r.value))
            except recs.RecordError as exc:
                log.info("%s-%d: record at %d skipped: %s", CONSUMER_OFFSETS, partition.index,
                         header.base_offset + r.offset_delta, exc)
                continue
            entry: tuple[Decoded, bytes] | None = None if r.value is None else (decoded, bytes(r.value))
            if header.is_transactional:
                pending.setdefault(header.producer_id, []).append((key, entry))
            else:
                _apply(live, key, entry)
    return live


def _apply(live: dict[bytes, tuple[Decoded, bytes]], key: bytes, entry: tuple[Decoded, bytes] | None) -> None:
    live.pop(key, None)
    if entry is not None:
        live[key] = entry


def load(state: Any) -> None:
    """Rebuild ``state.groups`` (a ClusterState's coordinator) from its ``__consumer_offsets``."""
    topic = state.topics.get(CONSUMER_OFFSETS)
    if topic is None:
        return
    coordinator = state.groups
    by_group: dict[str, dict[bytes, tuple[Decoded, bytes]]] = {}
    for partition in topic.partitions:
        for key, entry in live_records(partition).items():
            record_type, record_key = entry[0][0], entry[0][1]
            group_id = record_key.group if record_type in (recs.OFFSET_COMMIT, recs.GROUP_METADATA) \
                else record_key.group_id
            by_group.setdefault(group_id, {})[key] = entry
    now = state.clock.now_ms()
    for group_id, records in by_group.items():
        group = coordinator.group(group_id)
        consumer: ConsumerGroupState | None = None
        for (record_type, key, _, value), _raw in records.values():
            if record_type == recs.OFFSET_COMMIT:
                group.offsets[(key.topic, key.partition)] = (value.offset, value.leader_epoch, value.metadata)
                group.offset_times[(key.topic, key.partition)] = (value.commit_timestamp, value.expire_timestamp)
            elif record_type == recs.GROUP_METADATA:
                _classic(group, value, now)
            else:
                if consumer is None:
                    consumer = ConsumerGroupState(group_id=group_id)
                _consumer_record(state, consumer, record_type, key, value, now)
        if consumer is not None:
            _finish_consumer(state, group, consumer)
        if coordinator.records is not None:  # the live group records, so later changes and deletion build on them
            coordinator.records.written[group_id] = {
                k: raw for k, ((record_type, *_), raw) in records.items() if record_type != recs.OFFSET_COMMIT}


def _classic(group: Any, value: Any, now: int) -> None:
    group.protocol_type = value.protocol_type or None
    group.generation = value.generation
    group.protocol_name = value.protocol
    group.leader = value.leader
    group.members = {}
    for m in value.members:
        member = Member(m.member_id, m.group_instance_id, m.client_id, m.session_timeout, m.rebalance_timeout,
                        [(value.protocol or "", bytes(m.subscription))], now, m.client_host, bytes(m.assignment))
        group.members[m.member_id] = member
    group.state = STABLE if group.members else EMPTY
    group.state_ms = value.current_state_timestamp
    if group.leader not in group.members:
        group.leader = next(iter(group.members), None)


def _names(state: Any, topic_partitions: list[Any]) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for tp in topic_partitions:
        topic = state.topics_by_id.get(bytes(tp.topic_id))
        if topic is not None and tp.partitions:
            out[topic.name] = set(tp.partitions)
    return out


def _member(g: ConsumerGroupState, member_id: str, now: int) -> ConsumerMember:
    member = g.members.get(member_id)
    if member is None:
        member = g.members[member_id] = ConsumerMember(member_id, None, None, "", "", -1, last_seen_ms=now)
    return member


def _consumer_record(state: Any, g: ConsumerGroupState, record_type: int, key: Any, value: Any, now: int) -> None:
    if record_type == recs.CONSUMER_GROUP_METADATA:
        g.group_epoch = value.epoch
    elif record_type == recs.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
        g.assignment_epoch = value.assignment_epoch
    elif record_type == recs.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
        g.target[key.member_id] = _names(state, value.topic_partitions)
    elif record_type == recs.CONSUMER_GROUP_MEMBER_METADATA:
        m = _member(g, key.member_id, now)
        m.instance_id, m.rack_id, m.client_id, m.client_host = (value.instance_id, value.rack_id, value.client_id,
                                                                value.client_host)
        m.subscribed, m.regex = list(value.subscribed_topic_names), value.subscribed_topic_regex
        m.rebalance_timeout_ms, m.assignor = value.rebalance_timeout_ms, value.server_assignor
    elif record_type == recs.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        m = _member(g, key.member_id, now)
        m.left_static = value.member_epoch == -2
        m.epoch = value.previous_member_epoch if m.left_static else value.member_epoch
        m.previous_epoch = value.previous_member_epoch
        m.assigned = _names(state, value.assigned_partitions)
        m.revoking = _names(state, value.partitions_pending_revocation)
        if m.revoking:
            m.revoke_deadline_ms = now + max(m.rebalance_timeout_ms, 0)
    # ConsumerGroupPartitionMetadata (type 4): Kafka 4.x ignores it; so does the mock


def _finish_consumer(state: Any, group: Any, g: ConsumerGroupState) -> None:
    """The loaded consumer group put on its Group; the subscribed topics' partition counts computed
    now, so the first heartbeat does not see a metadata change and bump the epoch."""
    coordinator = state.groups
    group.consumer = g
    group.protocol_type = "consumer"
    group.members = {}
    group.state = EMPTY
    logic = coordinator.consumer_logic
    if logic is not None:
        topics = logic.topics()
        subs = logic.subscriptions(g, topics)
        g.metadata = tuple(sorted((t, topics[t]) for t in set().union(*subs.values()))) if subs else ()
