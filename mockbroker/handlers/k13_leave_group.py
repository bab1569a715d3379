"""LeaveGroup: v0-5 (classic protocol).

Behavior: removes the member (v0-2) or the listed members (v3+, each answered) and rebalances the
rest. Refusals in Kafka's order: with ACLs on, READ on the group, else GROUP_AUTHORIZATION_FAILED (top
level); INVALID_GROUP_ID; NOT_COORDINATOR on the wrong broker; then per member
(GroupCoordinator.leave): UNKNOWN_MEMBER_ID for members the group does not have, FENCED_INSTANCE_ID
for an instance id held by another member id. A pending member (given its id by MEMBER_ID_REQUIRED,
not yet joined) may leave.
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
    from mockbroker.protocol.generated.leave_group_request import LeaveGroupRequest

RESP = api.response_module(13)


@register(13, 0, 5)
def handle(ctx: RequestContext, req: LeaveGroupRequest) -> Any:
    if not authz.authorize(ctx, authz.READ, authz.GROUP, req.group_id):
        return RESP.LeaveGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    code = not_coordinator(ctx, req.group_id)
    if code:
        return RESP.LeaveGroupResponse(error_code=code)
    groups = ctx.cluster.groups
    if ctx.api_version < 3:
        return RESP.LeaveGroupResponse(error_code=refusal(groups.leave, req.group_id, req.member_id))
    members = [RESP.MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                   error_code=refusal(groups.leave, req.group_id, m.member_id,
                                                      m.group_instance_id))
               for m in req.members]
    return RESP.LeaveGroupResponse(error_code=0, members=members)
