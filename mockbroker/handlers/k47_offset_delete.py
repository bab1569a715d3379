"""OffsetDelete: v0.

Behavior:
- Deletes a group's committed offsets for the listed partitions. NOT_COORDINATOR on the wrong broker;
  an unknown group (or one without offsets or members) -> GROUP_ID_NOT_FOUND; a classic group with
  members that is not a consumer group (protocol type other than "consumer") -> NON_EMPTY_GROUP.
- Partitions of topics the group's members subscribe to (classic subscriptions decoded from the
  members' ConsumerProtocolSubscription, KIP-848 names and regexes) -> GROUP_SUBSCRIBED_TO_TOPIC;
  unknown topics or partitions -> UNKNOWN_TOPIC_OR_PARTITION; others are deleted (a partition with
  no committed offset is answered 0, as Kafka does).
- With ACLs on: DELETE on the group, else GROUP_AUTHORIZATION_FAILED (top level, checked first);
  partitions of topics without READ -> TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz
from mockbroker.handlers.groups_common import not_coordinator, refusal
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.offset_delete_request import OffsetDeleteRequest

RESP = api.response_module(47)


def _partition_code(ctx: RequestContext, name: str, index: int, subscribed: set[str]) -> int:
    topic = ctx.cluster.topics.get(name)
    if topic is None or not 0 <= index < len(topic.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if name in subscribed else 0


@register(47, 0, 0)
def handle(ctx: RequestContext, req: OffsetDeleteRequest) -> Any:
    if not authz.authorize(ctx, authz.DELETE, authz.GROUP, req.group_id):
        return RESP.OffsetDeleteResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, topics=[])
    groups = ctx.cluster.groups
    code = not_coordinator(ctx, req.group_id) or refusal(groups.offsets_deletable, req.group_id)
    if code:
        return RESP.OffsetDeleteResponse(error_code=code, topics=[])
    subscribed = groups.subscribed_topics(req.group_id, ctx.cluster.partition_counts())
    denied = authz.denied_names(ctx, authz.READ, authz.TOPIC, (t.name for t in req.topics))
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            err: int
            if t.name in denied:
                err = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            else:
                err = _partition_code(ctx, t.name, p.partition_index, subscribed)
            if not err:
                groups.delete_offset(req.group_id, t.name, p.partition_index)
            parts.append(RESP.OffsetDeleteResponsePartition(partition_index=p.partition_index, error_code=err))
        topics.append(RESP.OffsetDeleteResponseTopic(name=t.name, partitions=parts))
    return RESP.OffsetDeleteResponse(error_code=0, topics=topics)
