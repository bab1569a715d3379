"""DeleteGroups: v0-2.

Behavior: deletes empty groups with their committed offsets; NON_EMPTY_GROUP while members remain,
GROUP_ID_NOT_FOUND for unknown groups, NOT_COORDINATOR on the wrong broker. A KIP-932 share group goes
the same way, with its share-partition state (start offsets, in-flight records) and share sessions;
Kafka tries the share group first, then the other types, so an id no share group holds is deleted (or
refused) as a classic or consumer group. With ACLs on: groups
without DELETE -> GROUP_AUTHORIZATION_FAILED, listed after the others (as Kafka).
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
    from mockbroker.protocol.generated.delete_groups_request import DeleteGroupsRequest

RESP = api.response_module(42)


def _delete(ctx: RequestContext, group_id: str) -> int:
    share = ctx.cluster.share
    if share.is_share_group(group_id):
        return refusal(share.delete_group, group_id)
    return refusal(ctx.cluster.groups.delete, group_id)


@register(42, 0, 2)
def handle(ctx: RequestContext, req: DeleteGroupsRequest) -> Any:
    allowed = authz.authorized(ctx, authz.DELETE, authz.GROUP, req.groups_names)
    results = [RESP.DeletableGroupResult(group_id=g, error_code=not_coordinator(ctx, g) or _delete(ctx, g))
               for g in allowed]
    if len(allowed) != len(req.groups_names):
        results += [RESP.DeletableGroupResult(group_id=g, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
                    for g in req.groups_names if g not in allowed]
    return RESP.DeleteGroupsResponse(results=results)
