"""JoinGroup: v0-9 (classic protocol).

Behavior:
- In Kafka's order: GROUP_AUTHORIZATION_FAILED (with ACLs on: READ on the group); INVALID_GROUP_ID for an
  empty id; INVALID_SESSION_TIMEOUT (below); NOT_COORDINATOR on the wrong broker; a member id of a group that
  does not exist -> UNKNOWN_MEMBER_ID; INCONSISTENT_GROUP_PROTOCOL when the protocol type or the offered
  assignors do not match the group's members, or when an empty group is joined with no protocol type or no
  protocols (as Kafka's ClassicGroup.supportsProtocols); then the member (FENCED_INSTANCE_ID,
  UNKNOWN_MEMBER_ID; an instance id no member holds, with a member id, is UNKNOWN_MEMBER_ID).
- v4+: a first join without a member id gets MEMBER_ID_REQUIRED and its new id.
- The answer waits until every known member has rejoined (or the rebalance timeout passes); the
  leader gets every member's metadata. A new group waits `group.initial.rebalance.delay.ms`
  (0 by default here, so tests settle fast; Kafka's default is 3000).
- v0 has no rebalance timeout: the session timeout serves for both, as in Kafka.
- INVALID_SESSION_TIMEOUT for a session timeout outside `group.min.session.timeout.ms` (6000) ..
  `group.max.session.timeout.ms` (1800000), checked after ACLs and before the coordinator, as Kafka.
- Static members (KIP-345): a known group.instance.id rejoining with an empty member id replaces its old
  member id (the old one is fenced); a stable group whose protocol stays the same does not rebalance
  (v9+: a rejoining leader gets every member and SkipAssignment, KIP-814; before v9 it is told the old
  leader id and acts as a follower).

KIP-848 groups have their own API (ConsumerGroupHeartbeat); a classic join of a non-empty consumer group is
INCONSISTENT_GROUP_PROTOCOL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.groups_common import client_host, not_coordinator, reply_future
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.state.groups import JoinResult

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.join_group_request import JoinGroupRequest

RESP = api.response_module(11)
# the refusals whose answer names the request's member id (INVALID_GROUP_ID and INCONSISTENT_GROUP_PROTOCOL
# from the group coordinator answer member_id "")
_ECHO_MEMBER_ID = frozenset((ErrorCode.FENCED_INSTANCE_ID, ErrorCode.UNKNOWN_MEMBER_ID))


def _response(ctx: RequestContext, req: JoinGroupRequest, result: JoinResult) -> Any:
    name = result.protocol_name
    if name is None and ctx.api_version < 7:
        name = ""  # nullable only from v7
    return RESP.JoinGroupResponse(
        error_code=result.error, generation_id=result.generation, protocol_type=req.protocol_type,
        protocol_name=name, leader=result.leader, member_id=result.member_id, skip_assignment=result.skip_assignment,
        members=[RESP.JoinGroupResponseMember(member_id=m, group_instance_id=i, metadata=meta)
                 for m, i, meta in result.members],
    )


@register(11, 0, 9)
def handle(ctx: RequestContext, req: JoinGroupRequest) -> Any:
    if not authz.authorize(ctx, authz.READ, authz.GROUP, req.group_id):
        return _response(ctx, req, JoinResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    low, high = ctx.cluster.config["group.min.session.timeout.ms"], ctx.cluster.config["group.max.session.timeout.ms"]
    code = 0
    if not req.group_id:
        code = ErrorCode.INVALID_GROUP_ID
    elif not low <= req.session_timeout_ms <= high:
        code = ErrorCode.INVALID_SESSION_TIMEOUT
    if code:  # Kafka echoes the member id for these two, checked before the coordinator
        return _response(ctx, req, JoinResult(code, member_id=req.member_id))
    code = not_coordinator(ctx, req.group_id)
    if code:
        return _response(ctx, req, JoinResult(code))
    future, reply = reply_future()
    rebalance_ms = req.rebalance_timeout_ms if ctx.api_version >= 1 else req.session_timeout_ms
    try:
        ctx.cluster.groups.join(req.group_id, req.member_id, req.group_instance_id, ctx.client_id or "",
                                req.session_timeout_ms, rebalance_ms, req.protocol_type,
                                [(p.name, bytes(p.metadata)) for p in req.protocols], ctx.api_version >= 4, reply,
                                skip_ok=ctx.api_version >= 9, client_host=client_host(ctx.connection.peer))
    except KafkaError as exc:  # refused at once
        member_id = req.member_id if exc.code in _ECHO_MEMBER_ID else ""
        return _response(ctx, req, JoinResult(exc.code, member_id=member_id))
    if future.done():
        return _response(ctx, req, future.result())
    return _wait(ctx, req, future)


async def _wait(ctx: RequestContext, req: JoinGroupRequest, future: Any) -> Any:
    return _response(ctx, req, await future)
