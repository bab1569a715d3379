"""ShareGroupDescribe: v1 (KIP-932 share groups; v0 was Kafka 4.0's early access and is not served).

Behavior (the group model: mockbroker.state.share_groups):
- Per group id, on its coordinator (else NOT_COORDINATOR; an empty id -> INVALID_GROUP_ID): state (Empty,
  Stable), group and assignment epochs, the assignor ("simple"), and every member with its rack, client
  id and host, subscribed topic names and assignment (topic id, topic name, partitions).
- Unknown groups -> GROUP_ID_NOT_FOUND ("Group X not found."); a classic or consumer group ->
  GROUP_ID_NOT_FOUND ("Group X is not a share group."), Kafka's messages.
- share.version finalized at 0 (UpdateFeatures) -> UNSUPPORTED_VERSION for every group, as Kafka.
- With ACLs on: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it; a group whose members
  are assigned a topic the principal may not DESCRIBE -> TOPIC_AUTHORIZATION_FAILED, as Kafka.
  include_authorized_operations: the group's authorized operations (all supported ones when ACLs are
  off), else -2147483648.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz, share_common
from mockbroker.handlers.groups_common import not_coordinator
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.share_group_describe_request import ShareGroupDescribeRequest

RESP = api.response_module(77)
NO_OPERATIONS = authz.NO_OPERATIONS
UNAUTHORIZED_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


def _refused(group_id: str, code: int, message: str | None = None) -> Any:
    return RESP.DescribedGroup(error_code=code, error_message=message, group_id=group_id, group_state="",
                               group_epoch=0, assignment_epoch=0, assignor_name="", members=[],
                               authorized_operations=NO_OPERATIONS)


def _describe(ctx: RequestContext, group_id: str, with_operations: bool) -> Any:
    if not authz.authorize(ctx, authz.DESCRIBE, authz.GROUP, group_id):
        return _refused(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    code = not_coordinator(ctx, group_id)
    if code:
        return _refused(group_id, code)
    share = ctx.cluster.share
    try:
        share.share_group(group_id)
        described = share.groups.describe(group_id)
    except KafkaError as exc:
        return _refused(group_id, exc.code, exc.message)
    topics = {name for m in described.members for _tid, name, _parts in m.assignment}
    if authz.denied_names(ctx, authz.DESCRIBE, authz.TOPIC, topics):
        return _refused(group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, UNAUTHORIZED_TOPICS)
    members = [
        RESP.Member(member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
                    client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
                    assignment=RESP.Assignment(topic_partitions=[
                        RESP.TopicPartitions(topic_id=topic_id, topic_name=name, partitions=list(parts))
                        for topic_id, name, parts in m.assignment]))
        for m in described.members
    ]
    return RESP.DescribedGroup(error_code=0, group_id=group_id, group_state=described.state,
                               group_epoch=described.group_epoch, assignment_epoch=described.assignment_epoch,
                               assignor_name=described.assignor_name, members=members,
                               authorized_operations=authz.operations_if(ctx, with_operations, authz.GROUP, group_id))


@register(77, 1, 1)
def handle(ctx: RequestContext, req: ShareGroupDescribeRequest) -> Any:
    if not ctx.cluster.share.enabled():
        off = share_common.SHARE_GROUPS_OFF
        return RESP.ShareGroupDescribeResponse(groups=[_refused(g, ErrorCode.UNSUPPORTED_VERSION, off)
                                                       for g in req.group_ids])
    return RESP.ShareGroupDescribeResponse(groups=[_describe(ctx, g, req.include_authorized_operations)
                                                   for g in req.group_ids])
