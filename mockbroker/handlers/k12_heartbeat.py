"""Heartbeat: v0-4 (classic protocol).

Behavior: keeps a member's session alive. Refusals in Kafka's order: with ACLs on, READ on the group,
else GROUP_AUTHORIZATION_FAILED; INVALID_GROUP_ID; NOT_COORDINATOR on the wrong broker; then the
group's (GroupCoordinator.heartbeat): UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
and REBALANCE_IN_PROGRESS while the group prepares a rebalance.
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
    from mockbroker.protocol.generated.heartbeat_request import HeartbeatRequest

RESP = api.response_module(12)


@register(12, 0, 4)
def handle(ctx: RequestContext, req: HeartbeatRequest) -> Any:
    if not authz.authorize(ctx, authz.READ, authz.GROUP, req.group_id):
        return RESP.HeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    code = not_coordinator(ctx, req.group_id) or refusal(
        ctx.cluster.groups.heartbeat, req.group_id, req.member_id, req.generation_id,
        req.group_instance_id if ctx.api_version >= 3 else None)
    return RESP.HeartbeatResponse(error_code=code)
