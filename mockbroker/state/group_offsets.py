"""Committed offsets of consumer groups (both protocols): OffsetCommit checks, offsets held by open
transactions until they end, OffsetDelete, and what a group subscribes to.

A mixin of :class:`~mockbroker.state.groups.GroupCoordinator`, kept apart so membership and
offsets each fit in one room.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from mockbroker.codec_errors import CodecError
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.protocol import api
from mockbroker.state.internal_topics import CONSUMER_OFFSETS, partition_for

if TYPE_CHECKING:
    from mockbroker.state.consumer_groups import ConsumerGroupLogic
    from mockbroker.state.groups import Group, Member

_SUBSCRIPTION = api.module("ConsumerProtocolSubscription")
# the classic group states (groups.py imports them from here)
EMPTY, PREPARING, COMPLETING, STABLE = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable"


def offsets_partition(group_id: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition (of ``partitions``) that keeps ``group_id``'s offsets, as
    Kafka's coordinator computes it: Utils.abs(groupId.hashCode) % partitions."""
    return partition_for(group_id, partitions)


def offsets_partitions(cluster: Any) -> int:
    """How many partitions ``__consumer_offsets`` has: the topic's own count once it exists, else
    ``offsets.topic.num.partitions`` (what Kafka creates it with)."""
    topic = cluster.topics.get(CONSUMER_OFFSETS)
    return len(topic.partitions) if topic is not None else int(cluster.config["offsets.topic.num.partitions"])


def subscription_topics(metadata: bytes) -> set[str]:
    """The topics in a classic consumer's ConsumerProtocolSubscription (empty when unreadable)."""
    if len(metadata) < 2:
        return set()
    version = min(struct.unpack_from(">h", metadata)[0], max(_SUBSCRIPTION.READERS))
    try:
        sub, _ = api.decode_message(_SUBSCRIPTION, version, memoryview(metadata), 2)
    except CodecError:
        return set()
    return set(sub.topics)


def validate_member(group: Group | None, member_id: str, instance_id: str | None) -> Member:
    """Kafka's ClassicGroup.validateMember: with an instance id, the static member holding it must be
    ``member_id`` (no holder: UNKNOWN_MEMBER_ID, another: FENCED_INSTANCE_ID); then ``member_id`` must be a
    member (UNKNOWN_MEMBER_ID).  The member, else a KafkaError is raised."""
    if instance_id is not None:
        holder = next((m for m in group.members.values() if m.group_instance_id == instance_id), None) \
            if group is not None else None
        if holder is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"no member has instance {instance_id}")
        if holder.member_id != member_id:
            raise KafkaError(ErrorCode.FENCED_INSTANCE_ID, f"instance {instance_id} is held by another member")
    member = group.members.get(member_id) if group is not None else None
    if member is None:
        group_id = group.group_id if group is not None else "?"
        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {member_id} is not in group {group_id}")
    return member


class GroupOffsets:
    groups: dict[str, Group]
    consumer_logic: ConsumerGroupLogic | None
    clock: Any
    records: Any  # the __consumer_offsets writer (state.offsets_topic), or None

    def group(self, group_id: str) -> Group:  # provided by GroupCoordinator
        raise NotImplementedError

    def _commit_ms(self) -> int:
        """The commit timestamp of offsets stored now (-1 for a coordinator made without a clock: unit tests)."""
        return self.clock.now_ms() if self.clock is not None else -1

    def commit(self, group_id: str, member_id: str, generation: int,
               offsets: list[tuple[str, int, int, int, str | None]], instance_id: str | None = None,
               api_version: int = 9) -> None:
        """OffsetCommit: :meth:`check_commit`, then store the offsets."""
        self.check_commit(group_id, member_id, generation, instance_id, api_version)
        self.store(group_id, offsets)

    def check_commit(self, group_id: str, member_id: str, generation: int, instance_id: str | None = None,
                     api_version: int = 9, transactional: bool = False) -> None:
        """May this OffsetCommit (TxnOffsetCommit when ``transactional``) go ahead?  Kafka's checks, in its
        order (OffsetMetadataManager.validateOffsetCommit, then the group's validateOffsetCommit); each refusal
        is raised as a KafkaError:

        - no such group: a commit with generation -1 creates a "simple" group; any other is refused with
          GROUP_ID_NOT_FOUND (OffsetCommit v9+) or ILLEGAL_GENERATION (older, and TxnOffsetCommit);
        - a classic group: generation -1 into an empty group passes; with a generation, a member id or an
          instance id, the member is validated (FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID) and then its
          generation (ILLEGAL_GENERATION); without any (an admin's or a v0 commit) a group with members
          answers UNKNOWN_MEMBER_ID (TxnOffsetCommit: accepted); last, a group completing a rebalance answers
          REBALANCE_IN_PROGRESS (not for TxnOffsetCommit).  A member's commit in a stable group or one
          preparing a rebalance keeps its session, as in Kafka;
        - a KIP-848 group: see ConsumerGroupLogic.validate_commit (STALE_MEMBER_EPOCH is ILLEGAL_GENERATION
          for TxnOffsetCommit)."""
        group = self.groups.get(group_id)
        if group is None:
            if generation >= 0:
                code = ErrorCode.GROUP_ID_NOT_FOUND if api_version >= 9 and not transactional \
                    else ErrorCode.ILLEGAL_GENERATION
                raise KafkaError(code, f"group {group_id} does not exist")
            self.group(group_id)  # a simple group
            return
        if group.consumer is not None and self.consumer_logic is not None:
            try:
                self.consumer_logic.validate_commit(group.consumer, member_id, generation, transactional,
                                                    api_version)
            except KafkaError as exc:
                if transactional and exc.code == ErrorCode.STALE_MEMBER_EPOCH:
                    raise KafkaError(ErrorCode.ILLEGAL_GENERATION, exc.message) from None
                raise
            return
        if generation < 0 and group.state == EMPTY:
            return  # an admin's commit, or a consumer that does not use group management
        if generation >= 0 or member_id or instance_id is not None:
            member = validate_member(group, member_id, instance_id)
            if generation != group.generation:
                raise KafkaError(ErrorCode.ILLEGAL_GENERATION, f"generation {generation} is not {group.generation}")
            if group.state in (STABLE, PREPARING) and not transactional:
                member.last_seen_ms = self.clock.now_ms()
        elif not transactional:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                             f"group {group_id} has members: a commit without a member id is refused")
        if not transactional and group.state == COMPLETING:
            raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS, f"group {group_id} is completing a rebalance")

    def store(self, group_id: str, offsets: list[tuple[str, int, int, int, str | None]], expire_ms: int = -1) -> None:
        """Store committed offsets (checked by :meth:`check_commit`); ``expire_ms``: the expire timestamp an
        OffsetCommit v2-4 retention time sets (-1: none), kept and written as Kafka does."""
        group = self.group(group_id)
        now = self._commit_ms()
        for topic, partition, offset, epoch, metadata in offsets:
            group.offsets[(topic, partition)] = (offset, epoch, metadata)
            group.offset_times[(topic, partition)] = (now, expire_ms)
        if self.records is not None:
            self.records.offsets(group_id, offsets, expire_ms, now)

    def txn_commit(self, group_id: str, producer_id: int, member_id: str, generation: int,
                   offsets: list[tuple[str, int, int, int, str | None]], instance_id: str | None = None) -> None:
        """TxnOffsetCommit: :meth:`check_commit` (transactional), then :meth:`store_pending`."""
        self.check_commit(group_id, member_id, generation, instance_id, transactional=True)
        self.store_pending(group_id, producer_id, offsets)

    def store_pending(self, group_id: str, producer_id: int,
                      offsets: list[tuple[str, int, int, int, str | None]]) -> None:
        """Hold transactional offsets until the producer's transaction ends."""
        pending = self.group(group_id).pending_txn.setdefault(producer_id, {})
        for topic, partition, offset, epoch, metadata in offsets:
            pending[(topic, partition)] = (offset, epoch, metadata)

    def complete_txn(self, group_id: str, producer_id: int, commit: bool) -> None:
        group = self.groups.get(group_id)
        pending = group.pending_txn.pop(producer_id, None) if group else None
        if pending and commit and group is not None:
            group.offsets.update(pending)
            now = self._commit_ms()
            group.offset_times.update(dict.fromkeys(pending, (now, -1)))
            if self.records is not None:  # written when the transaction commits (the mock's choice: see offsets_topic)
                self.records.offsets(group_id, [(t, p, *held) for (t, p), held in pending.items()], now=now)

    def complete_txn_in_partition(self, producer_id: int, partition: int, partitions: int, commit: bool) -> list[str]:
        """A COMMIT/ABORT marker of ``producer_id`` written to ``__consumer_offsets``-``partition`` (of
        ``partitions``), as WriteTxnMarkers does: the offsets the producer's transaction committed for the
        groups kept in that partition become visible (commit) or go (abort), as Kafka's group coordinator
        does on the marker (onTransactionCompleted).  The groups settled, in order."""
        settled = []
        for group_id, group in self.groups.items():
            if producer_id in group.pending_txn and offsets_partition(group_id, partitions) == partition:
                self.complete_txn(group_id, producer_id, commit)
                settled.append(group_id)
        return sorted(settled)

    def unstable(self, group_id: str, topic: str, partition: int) -> bool:
        """True while an open transaction holds an offset for the partition (OffsetFetch require_stable)."""
        group = self.groups.get(group_id)
        return group is not None and any((topic, partition) in p for p in group.pending_txn.values())

    def committed(self, group_id: str, topic: str, partition: int) -> tuple[int, int, str | None]:
        group = self.groups.get(group_id)
        if group is None:
            return -1, -1, ""
        return group.offsets.get((topic, partition), (-1, -1, ""))

    def committed_all(self, group_id: str) -> dict[tuple[str, int], tuple[int, int, str | None]]:
        group = self.groups.get(group_id)
        return dict(group.offsets) if group else {}

    def check_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> None:
        """OffsetFetch v9+: a KIP-848 group checks the member and its epoch (ConsumerGroupLogic.validate_fetch);
        classic groups and groups that do not exist check nothing, as in Kafka."""
        group = self.groups.get(group_id)
        if group is None or group.consumer is None or self.consumer_logic is None:
            return
        self.consumer_logic.validate_fetch(group.consumer, member_id, member_epoch)

    # -- OffsetDelete ------------------------------------------------------------------------------
    def offsets_deletable(self, group_id: str) -> None:
        """Raises GROUP_ID_NOT_FOUND / NON_EMPTY_GROUP when OffsetDelete cannot touch the group."""
        group = self.groups.get(group_id)
        active = group is not None and (group.members or (group.consumer is not None and group.consumer.members))
        if group is None or not (active or group.offsets):
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id} does not exist")
        if group.members and group.protocol_type != "consumer":
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, f"group {group_id} has members that are not consumers")

    def subscribed_topics(self, group_id: str, topics: dict[str, int]) -> set[str]:
        """Topics the group's current members subscribe to."""
        group = self.groups.get(group_id)
        if group is None:
            return set()
        out: set[str] = set()
        for m in group.members.values():
            protocols = dict(m.protocols)
            metadata = protocols.get(group.protocol_name or "") or next(iter(protocols.values()), b"")
            out |= subscription_topics(metadata)
        if group.consumer is not None and self.consumer_logic is not None:
            for names in self.consumer_logic.subscriptions(group.consumer, topics).values():
                out |= names
        return out

    def delete_offset(self, group_id: str, topic: str, partition: int) -> None:
        group = self.groups.get(group_id)
        if group is not None and group.offsets.pop((topic, partition), None) is not None:
            group.offset_times.pop((topic, partition), None)
            if self.records is not None:
                self.records.offset_tombstones(group_id, [(topic, partition)])

    def forget_topic(self, topic: str) -> None:
        """A deleted topic's committed (and transactionally pending) offsets go from every group, as
        Kafka's coordinator drops them on partition deletion: a topic re-created under the same name
        starts each group by its auto.offset.reset, not at an offset of the old topic."""
        for group_id, group in self.groups.items():
            gone: dict[tuple[str, int], None] = {}
            for held in (group.offsets, *group.pending_txn.values()):
                for key in [k for k in held if k[0] == topic]:
                    del held[key]
                    group.offset_times.pop(key, None)
                    gone[key] = None
            if gone and self.records is not None:  # Kafka's onPartitionsDeleted: a tombstone each
                self.records.offset_tombstones(group_id, list(gone))
