"""Committed offsets of consumer groups (both protocols): OffsetCommit checks, offsets held by open
transactions until they end, OffsetDelete, and what a group subscribes to.

A mixin of :class:`~mockbroker.state.groups.GroupCoordinator`, kept apart so membership and
offsets each fit in one room.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from mockbroker.codec_errors import CodecError
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.state.groups import Group

_SUBSCRIPTION = api.module("ConsumerProtocolSubscription")
COMPLETING = "CompletingRebalance"  # the classic group state in which commits must wait


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


class GroupOffsets:
    groups: dict[str, Group]
    consumer_logic: Any

    def group(self, group_id: str) -> Group:  # provided by GroupCoordinator
        raise NotImplementedError

    def fenced(self, group_id: str, member_id: str, instance_id: str | None) -> int:
        raise NotImplementedError

    def commit(self, group_id: str, member_id: str, generation: int,
               offsets: list[tuple[str, int, int, int, str | None]], instance_id: str | None = None) -> int:
        if self.fenced(group_id, member_id, instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        group = self.group(group_id)
        if group.consumer is not None and self.consumer_logic is not None:
            code = self.consumer_logic.validate_commit(group.consumer, member_id, generation)
            if code:
                return code
        elif generation >= 0 or member_id:
            if member_id not in group.members:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if group.state == COMPLETING:
                return ErrorCode.REBALANCE_IN_PROGRESS
            if generation != group.generation:
                return ErrorCode.ILLEGAL_GENERATION
            # while PreparingRebalance the old generation may still commit (commit on revoke), as in Kafka
        elif group.members:
            return ErrorCode.ILLEGAL_GENERATION  # a simple commit into a group with members
        for topic, partition, offset, epoch, metadata in offsets:
            group.offsets[(topic, partition)] = (offset, epoch, metadata)
        return 0

    def txn_commit(self, group_id: str, producer_id: int, member_id: str, generation: int,
                   offsets: list[tuple[str, int, int, int, str | None]]) -> int:
        """TxnOffsetCommit: hold the offsets until the producer's transaction ends."""
        group = self.group(group_id)
        if generation >= 0 or member_id:
            if member_id not in group.members:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if generation != group.generation:
                return ErrorCode.ILLEGAL_GENERATION
        pending = group.pending_txn.setdefault(producer_id, {})
        for topic, partition, offset, epoch, metadata in offsets:
            pending[(topic, partition)] = (offset, epoch, metadata)
        return 0

    def complete_txn(self, group_id: str, producer_id: int, commit: bool) -> None:
        group = self.groups.get(group_id)
        pending = group.pending_txn.pop(producer_id, None) if group else None
        if pending and commit:
            group.offsets.update(pending)

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

    def validate_member(self, group_id: str, member_id: str, member_epoch: int) -> int:
        """OffsetFetch v9+ from a KIP-848 member: its id and epoch must be current (classic groups: 0)."""
        group = self.groups.get(group_id)
        if group is None or group.consumer is None or self.consumer_logic is None:
            return 0
        return self.consumer_logic.validate_commit(group.consumer, member_id, member_epoch)

    # -- OffsetDelete ------------------------------------------------------------------------------
    def offsets_deletable(self, group_id: str) -> int:
        """GROUP_ID_NOT_FOUND / NON_EMPTY_GROUP when OffsetDelete cannot touch the group, else 0."""
        group = self.groups.get(group_id)
        active = group is not None and (group.members or (group.consumer is not None and group.consumer.members))
        if group is None or not (active or group.offsets):
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members and group.protocol_type != "consumer":
            return ErrorCode.NON_EMPTY_GROUP
        return 0

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
        if group is not None:
            group.offsets.pop((topic, partition), None)
