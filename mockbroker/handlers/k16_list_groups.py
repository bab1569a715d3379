"""ListGroups: v0-5.

Behavior: the groups this broker coordinates, with protocol type, state (v4+ filter by state) and
type, "classic" or "consumer" for KIP-848 groups (v5+ filter by type); KIP-932 share groups are listed
too, with type and protocol type "share" and state Empty or Stable. Group ids are spread over
brokers, as in Kafka, so a client asks every broker. With ACLs on: every group for DESCRIBE on the
cluster, else only the groups the principal may DESCRIBE.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.list_groups_request import ListGroupsRequest
    from mockbroker.state.groups import Group
    from mockbroker.state.share_groups import ShareGroup

RESP = api.response_module(16)


@register(16, 0, 5)
def handle(ctx: RequestContext, req: ListGroupsRequest) -> Any:
    states = {s.lower() for s in (req.states_filter or [])} if ctx.api_version >= 4 else set()
    types = {t.lower() for t in (req.types_filter or [])} if ctx.api_version >= 5 else set()
    listed = []
    check = authz.enabled(ctx) and not authz.authorize_cluster(ctx, authz.DESCRIBE, log_denied=False)
    every: list[Group | ShareGroup] = [*ctx.cluster.groups.listed(), *ctx.cluster.share.groups.listed()]
    for group in every:
        if ctx.cluster.coordinator_for(group.group_id).node_id != ctx.broker_id:
            continue
        if states and group.state_name.lower() not in states:
            continue
        if types and group.group_type not in types:
            continue
        if check and not authz.authorize(ctx, authz.DESCRIBE, authz.GROUP, group.group_id, log_denied=False):
            continue
        listed.append(RESP.ListedGroup(group_id=group.group_id, protocol_type=group.protocol_type or "",
                                       group_state=group.state_name, group_type=group.group_type))
    return RESP.ListGroupsResponse(error_code=0, groups=listed)
