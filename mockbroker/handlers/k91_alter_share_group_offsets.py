"""AlterShareGroupOffsets: v0 (KIP-932).

Behavior (as Kafka's KafkaApis and GroupCoordinatorShard.alterShareGroupOffsets):
- Sets the share-partition start offset (SPSO) of the listed partitions: the share-partition starts
  afresh there (its in-flight records are forgotten); StartOffset -1 (Kafka's uninitialized offset)
  forgets it, so the next fetch starts where share.auto.offset.reset says.
- Only an empty group: members -> NON_EMPTY_GROUP ("The group is not empty."); an unknown group or one of
  another type -> GROUP_ID_NOT_FOUND (Kafka's messages); NOT_COORDINATOR on the wrong broker. These are
  top-level errors with no per-topic results.
- Unknown topics and partitions past a topic's count -> UNKNOWN_TOPIC_OR_PARTITION per partition.
- share.version finalized at 0 -> UNSUPPORTED_VERSION.
- With ACLs on: READ on the group, else GROUP_AUTHORIZATION_FAILED (top level, checked first); topics
  without READ -> TOPIC_AUTHORIZATION_FAILED per partition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz, share_common
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.protocol.errors import error_message

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.alter_share_group_offsets_request import (
        AlterShareGroupOffsetsRequest,
        AlterShareGroupOffsetsRequestTopic,
    )

RESP = api.response_module(91)


def _refused(code: int, message: str | None = None) -> Any:
    return RESP.AlterShareGroupOffsetsResponse(error_code=code, error_message=message or error_message(code),
                                               responses=[])


def _partition(index: int, code: int = 0) -> Any:
    return RESP.AlterShareGroupOffsetsResponsePartition(partition_index=index, error_code=code,
                                                        error_message=error_message(code) if code else None)


def _topic(ctx: RequestContext, group_id: str, t: AlterShareGroupOffsetsRequestTopic, denied: set[str]) -> Any:
    topic = ctx.cluster.topics.get(t.topic_name)
    out = RESP.AlterShareGroupOffsetsResponseTopic(topic_name=t.topic_name, partitions=[])
    if t.topic_name in denied or topic is None:
        code = ErrorCode.TOPIC_AUTHORIZATION_FAILED if t.topic_name in denied else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        out.partitions = [_partition(p.partition_index, code) for p in t.partitions]
        return out
    out.topic_id = topic.topic_id
    for p in t.partitions:
        if 0 <= p.partition_index < len(topic.partitions):
            ctx.cluster.share.alter_start_offset(group_id, t.topic_name, p.partition_index, p.start_offset)
            out.partitions.append(_partition(p.partition_index))
        else:
            out.partitions.append(_partition(p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    return out


@register(91, 0, 0)
def handle(ctx: RequestContext, req: AlterShareGroupOffsetsRequest) -> Any:
    code, message = share_common.offsets_change_refusal(ctx, req.group_id, authz.READ)
    if code:
        return _refused(code, message)
    denied = authz.denied_names(ctx, authz.READ, authz.TOPIC, (t.topic_name for t in req.topics))
    return RESP.AlterShareGroupOffsetsResponse(error_code=0, responses=[_topic(ctx, req.group_id, t, denied)
                                                                        for t in req.topics])
