"""OffsetDelete: v0.

Behavior:
- Deletes a group's committed offsets for the listed partitions. NOT_COORDINATOR on the wrong broker;
  an unknown group (or one without offsets or members) -> GROUP_ID_NOT_FOUND; a classic group with
  members that is not a consumer group (protocol type other than "consumer") -> NON_EMPTY_GROUP.
- Partitions of topics the group's members subscribe to (classic subscriptions decoded from the
  members' ConsumerProtocolSubscription, KIP-848 names and regexes) -> GROUP_SUBSCRIBED_TO_TOPIC;
  unknown topics or partitions -> UNKNOWN_TOPIC_OR_PARTITION; others are deleted (a partition with
  no committed offset is answered 0, as Kafka does).
"""

from __future__ import annotations

from typing import Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers.groups_common import not_coordinator
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

RESP = api.response_module(47)


def _partition_code(ctx: Any, name: str, index: int, subscribed: set[str]) -> int:
    topic = ctx.cluster.topics.get(name)
    if topic is None or not 0 <= index < len(topic.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if name in subscribed else 0


@register(47, 0, 0)
def handle(ctx: Any, req: Any) -> Any:
    groups = ctx.cluster.groups
    code = not_coordinator(ctx, req.group_id) or groups.offsets_deletable(req.group_id)
    if code:
        return RESP.OffsetDeleteResponse(error_code=code, topics=[])
    subscribed = groups.subscribed_topics(req.group_id, ctx.cluster.partition_counts())
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            err = _partition_code(ctx, t.name, p.partition_index, subscribed)
            if not err:
                groups.delete_offset(req.group_id, t.name, p.partition_index)
            parts.append(RESP.OffsetDeleteResponsePartition(partition_index=p.partition_index, error_code=err))
        topics.append(RESP.OffsetDeleteResponseTopic(name=t.name, partitions=parts))
    return RESP.OffsetDeleteResponse(error_code=0, topics=topics)
