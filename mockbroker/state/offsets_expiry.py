"""Committed offsets' expiry, as Kafka's group coordinator runs it every
``offsets.retention.check.interval.ms`` (OffsetMetadataManager.cleanupExpiredOffsets):

- which groups' offsets may expire (the group's offsetExpirationCondition): a classic group that is
  Empty, counted from when it became empty (GroupMetadata's currentStateTimestamp; the commit time when
  unknown); a classic consumer group that is Stable, for the topics its members no longer subscribe to,
  counted from the commit; a group without a protocol type (a "simple" group: offsets committed with no
  membership), from the commit; a KIP-848 group, for the topics no member subscribes to, from the commit.
  A classic group rebalancing expires nothing;
- an offset expires once ``offsets.retention.minutes`` have passed since that time, or at the expire
  timestamp an OffsetCommit v2-4 retention time set; an offset an open transaction also holds stays;
- each expired offset goes with an OffsetCommit tombstone; a group left with no offsets and no open
  transaction that is empty is deleted, its records tombstoned (GroupMetadataManager.maybeDeleteGroup).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mockbroker.state.group_offsets import EMPTY, STABLE, subscription_topics


def _base(coordinator: Any, group: Any) -> tuple[Callable[[tuple[str, int]], int], set[str]] | None:
    """(the time each offset's retention counts from, the topics that keep their offsets), or None when
    the group's offsets do not expire now."""
    times = group.offset_times

    def committed(key: tuple[str, int]) -> int:
        return int(times.get(key, (0, -1))[0])

    if group.consumer is not None:
        logic = coordinator.consumer_logic
        subscribed: set[str] = set()
        if logic is not None:
            for names in logic.subscriptions(group.consumer, logic.topics()).values():
                subscribed |= names
        return committed, subscribed
    if not group.protocol_type:
        return committed, set()
    if group.state == EMPTY:
        emptied = group.state_ms
        return ((lambda key: emptied) if emptied >= 0 else committed), set()
    if group.protocol_type == "consumer" and group.state == STABLE:
        topics: set[str] = set()
        for m in group.members.values():
            topics |= subscription_topics(dict(m.protocols).get(group.protocol_name or "", b""))
        return committed, topics
    return None


def expire_offsets(coordinator: Any, now_ms: int, retention_ms: int) -> list[str]:
    """Expire ``coordinator``'s (a GroupCoordinator) offsets as of ``now_ms``; the groups deleted."""
    deleted = []
    for group_id, group in list(coordinator.groups.items()):
        condition = _base(coordinator, group)
        if condition is None:
            continue
        base, subscribed = condition
        held = {key for pending in group.pending_txn.values() for key in pending}
        expired = []
        for key in group.offsets:
            if key[0] in subscribed or key in held:
                continue
            expire_at = group.offset_times.get(key, (0, -1))[1]
            if (now_ms >= expire_at) if expire_at >= 0 else (now_ms - base(key) >= retention_ms):
                expired.append(key)
        for key in expired:
            del group.offsets[key]
            group.offset_times.pop(key, None)
        if expired and coordinator.records is not None:
            coordinator.records.offset_tombstones(group_id, expired)
        empty = not group.members and not group.pending_ids and group.state == EMPTY and (
            group.consumer is None or not group.consumer.members)
        if not group.offsets and not group.pending_txn and empty:
            del coordinator.groups[group_id]
            if coordinator.records is not None:
                coordinator.records.group_deleted(group_id, [])
            deleted.append(group_id)
    return sorted(deleted)
