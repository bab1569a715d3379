"""ConsumerGroupDescribe: v0 (KIP-848 consumer groups).

Behavior: per group id, on its coordinator (else NOT_COORDINATOR): state (Empty, Assigning,
Reconciling, Stable), group and assignment epochs, the assignor in use, and every member with its
subscription, current assignment and target assignment. Unknown groups -> GROUP_ID_NOT_FOUND;
classic and share groups -> GROUP_ID_NOT_FOUND ("not a consumer group"), as Kafka answers. With ACLs on:
DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it. include_authorized_operations: the
group's authorized operations (all supported ones when ACLs are off), else -2147483648.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz
from mockbroker.handlers.groups_common import not_coordinator
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.consumer_group_describe_request import ConsumerGroupDescribeRequest

RESP = api.response_module(69)
NO_OPERATIONS = authz.NO_OPERATIONS


def _assignment(ctx: RequestContext, parts: dict[str, set[int]]) -> Any:
    topics = ctx.cluster.topics
    return RESP.Assignment(topic_partitions=[
        RESP.TopicPartitions(topic_id=topics[name].topic_id, topic_name=name, partitions=sorted(p))
        for name, p in sorted(parts.items()) if name in topics])


def _describe(ctx: RequestContext, group_id: str, with_operations: bool) -> Any:
    out = RESP.DescribedGroup(group_id=group_id, group_state="", group_epoch=-1, assignment_epoch=-1,
                              assignor_name="", members=[], authorized_operations=NO_OPERATIONS)
    if not authz.authorize(ctx, authz.DESCRIBE, authz.GROUP, group_id):
        out.error_code = ErrorCode.GROUP_AUTHORIZATION_FAILED
        return out
    code = not_coordinator(ctx, group_id)
    group = ctx.cluster.groups.groups.get(group_id)
    if not code and (group is None or group.consumer is None):
        code = ErrorCode.GROUP_ID_NOT_FOUND
        known = group is not None or ctx.cluster.share.is_share_group(group_id)
        out.error_message = f"Group {group_id} is not a consumer group." if known else f"Group {group_id} not found."
    if code:
        out.error_code = code
        return out
    assert group is not None and group.consumer is not None  # (else GROUP_ID_NOT_FOUND above)
    state = group.consumer
    out.authorized_operations = authz.operations_if(ctx, with_operations, authz.GROUP, group_id)
    out.group_state, out.group_epoch = state.state_name(), state.group_epoch
    out.assignment_epoch, out.assignor_name = state.assignment_epoch, state.assignor
    out.members = [
        RESP.Member(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.epoch,
                    client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=sorted(m.subscribed),
                    subscribed_topic_regex=m.regex, assignment=_assignment(ctx, m.assigned),
                    target_assignment=_assignment(ctx, state.target.get(m.member_id, {})))
        for m in state.members.values() if not m.left_static
    ]
    return out


@register(69, 0, 0)
def handle(ctx: RequestContext, req: ConsumerGroupDescribeRequest) -> Any:
    return RESP.ConsumerGroupDescribeResponse(groups=[_describe(ctx, g, req.include_authorized_operations)
                                                      for g in req.group_ids])
