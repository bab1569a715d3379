"""SyncGroup: v0-5 (classic protocol).

Behavior:
- The leader's assignments are handed to every member; followers wait for the leader.
- In Kafka's order: v5+ without a protocol type or name -> INCONSISTENT_GROUP_PROTOCOL; with ACLs on,
  READ on the group, else GROUP_AUTHORIZATION_FAILED; INVALID_GROUP_ID; NOT_COORDINATOR on the wrong
  broker; then the group's (GroupCoordinator.sync): UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID,
  ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL (v5: a protocol type or name not the group's),
  REBALANCE_IN_PROGRESS (a new rebalance started). v5 echoes the protocol type and name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.groups_common import not_coordinator, reply_future
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.sync_group_request import SyncGroupRequest

RESP = api.response_module(14)


def _response(ctx: RequestContext, req: SyncGroupRequest, code: int, assignment: bytes) -> Any:
    group = ctx.cluster.groups.groups.get(req.group_id)
    return RESP.SyncGroupResponse(error_code=code, assignment=assignment,
                                  protocol_type=group.protocol_type if group else None,
                                  protocol_name=group.protocol_name if group else None)


@register(14, 0, 5)
def handle(ctx: RequestContext, req: SyncGroupRequest) -> Any:
    if ctx.api_version >= 5 and (req.protocol_type is None or req.protocol_name is None):
        return RESP.SyncGroupResponse(error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL, assignment=b"")
    if not authz.authorize(ctx, authz.READ, authz.GROUP, req.group_id):
        return RESP.SyncGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, assignment=b"")
    code = not_coordinator(ctx, req.group_id)
    if code:
        return RESP.SyncGroupResponse(error_code=code, assignment=b"")
    future, reply = reply_future()
    assignments = {a.member_id: bytes(a.assignment) for a in req.assignments}
    try:
        ctx.cluster.groups.sync(req.group_id, req.member_id, req.generation_id, assignments, reply,
                                req.group_instance_id if ctx.api_version >= 3 else None,
                                (req.protocol_type, req.protocol_name) if ctx.api_version >= 5 else (None, None))
    except KafkaError as exc:  # refused at once (unknown member, fenced, generation, protocol, rebalancing)
        return _response(ctx, req, exc.code, b"")
    if future.done():
        return _response(ctx, req, *future.result())
    return _wait(ctx, req, future)


async def _wait(ctx: RequestContext, req: SyncGroupRequest, future: Any) -> Any:
    return _response(ctx, req, *(await future))
