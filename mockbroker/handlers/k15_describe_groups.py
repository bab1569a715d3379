"""DescribeGroups: v0-6 (classic groups).

Behavior: state, protocol type and name, and every member with its metadata (for the chosen
protocol) and assignment; an unknown group is described as Dead with no members (Kafka does the
same; v6 answers GROUP_ID_NOT_FOUND for it); a KIP-848 consumer group or a KIP-932 share group is not a
classic group: Dead, or GROUP_ID_NOT_FOUND ("Group X is not a classic group.") from v6
(ConsumerGroupDescribe / ShareGroupDescribe describe them); NOT_COORDINATOR on the wrong broker.
With ACLs on: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED for it. v3+ with
include_authorized_operations: the group's authorized operations (all supported ones when ACLs are off).
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
    from mockbroker.protocol.generated.describe_groups_request import DescribeGroupsRequest

RESP = api.response_module(15)
NO_OPERATIONS = authz.NO_OPERATIONS


def _describe(ctx: RequestContext, group_id: str, with_operations: bool) -> Any:
    if not authz.authorize(ctx, authz.DESCRIBE, authz.GROUP, group_id):
        return RESP.DescribedGroup(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=group_id,
                                   group_state="", protocol_type="", protocol_data="", members=[],
                                   authorized_operations=NO_OPERATIONS)
    code = not_coordinator(ctx, group_id)
    group = None if code else ctx.cluster.groups.groups.get(group_id)
    if code or group is None or group.consumer is not None or not (group.members or group.offsets):
        message = None
        if not code and ctx.api_version >= 6:
            code = ErrorCode.GROUP_ID_NOT_FOUND
            foreign = (group is not None and group.consumer) or ctx.cluster.share.is_share_group(group_id)
            message = f"Group {group_id} is not a classic group." if foreign else None
        return RESP.DescribedGroup(error_code=code, error_message=message, group_id=group_id, group_state="Dead",
                                   protocol_type="", protocol_data="", members=[],
                                   authorized_operations=authz.operations_if(ctx, with_operations, authz.GROUP,
                                                                             group_id))
    members = []
    for m in group.members.values():
        metadata = dict(m.protocols).get(group.protocol_name or "", b"")
        members.append(RESP.DescribedGroupMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                                 client_id=m.client_id, client_host=m.client_host,
                                                 member_metadata=metadata, member_assignment=m.assignment))
    return RESP.DescribedGroup(error_code=0, group_id=group_id, group_state=group.state,
                               protocol_type=group.protocol_type or "", protocol_data=group.protocol_name or "",
                               members=members,
                               authorized_operations=authz.operations_if(ctx, with_operations, authz.GROUP, group_id))


@register(15, 0, 6)
def handle(ctx: RequestContext, req: DescribeGroupsRequest) -> Any:
    with_operations = ctx.api_version >= 3 and req.include_authorized_operations
    return RESP.DescribeGroupsResponse(groups=[_describe(ctx, g, with_operations) for g in req.groups])
