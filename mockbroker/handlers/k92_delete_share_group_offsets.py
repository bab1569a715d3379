"""DeleteShareGroupOffsets: v0 (KIP-932).

Behavior (as Kafka's KafkaApis and GroupCoordinatorShard.initiateDeleteShareGroupOffsets):
- Deletes the group's share-partition state (start offset and in-flight records) of whole topics: the
  next fetch starts those partitions where share.auto.offset.reset says. Results are per topic.
- Only an empty group: members -> NON_EMPTY_GROUP ("The group is not empty."); an unknown group or one of
  another type -> GROUP_ID_NOT_FOUND (Kafka's messages); NOT_COORDINATOR on the wrong broker. These are
  top-level errors with no per-topic results.
- An unknown topic -> UNKNOWN_TOPIC_OR_PARTITION; a topic the group never started a partition of ->
  UNKNOWN_TOPIC_OR_PARTITION ("There is no offset information to delete."), as Kafka; results for
  deleted topics come first, then the refused ones, as Kafka orders them.
- share.version finalized at 0 -> UNSUPPORTED_VERSION.
- With ACLs on: DELETE on the group, else GROUP_AUTHORIZATION_FAILED (top level, checked first); topics
  without READ -> TOPIC_AUTHORIZATION_FAILED (listed first).
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
    from mockbroker.protocol.generated.delete_share_group_offsets_request import DeleteShareGroupOffsetsRequest

RESP = api.response_module(92)
NOTHING_TO_DELETE = "There is no offset information to delete."


def _refused(code: int, message: str | None = None) -> Any:
    return RESP.DeleteShareGroupOffsetsResponse(error_code=code, error_message=message or error_message(code),
                                                responses=[])


def _topic(name: str, code: int = 0, message: str | None = None, topic_id: Any = None) -> Any:
    out = RESP.DeleteShareGroupOffsetsResponseTopic(topic_name=name, error_code=code,
                                                    error_message=message or (error_message(code) if code else None))
    if topic_id is not None:
        out.topic_id = topic_id
    return out


@register(92, 0, 0)
def handle(ctx: RequestContext, req: DeleteShareGroupOffsetsRequest) -> Any:
    code, message = share_common.offsets_change_refusal(ctx, req.group_id, authz.DELETE)
    if code:
        return _refused(code, message)
    share = ctx.cluster.share
    denied = authz.denied_names(ctx, authz.READ, authz.TOPIC, (t.topic_name for t in req.topics))
    started = {topic for topic, _index in share.offsets_summary(req.group_id)}
    failed = [_topic(t.topic_name, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for t in req.topics if t.topic_name in denied]
    deleted, refused = [], []
    for t in req.topics:
        topic = ctx.cluster.topics.get(t.topic_name)
        if t.topic_name in denied:
            continue
        if topic is None:
            refused.append(_topic(t.topic_name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        elif t.topic_name not in started:
            refused.append(_topic(t.topic_name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NOTHING_TO_DELETE))
        else:
            share.delete_offsets(req.group_id, t.topic_name)
            deleted.append(_topic(t.topic_name, topic_id=topic.topic_id))
    return RESP.DeleteShareGroupOffsetsResponse(error_code=0, responses=failed + deleted + refused)
