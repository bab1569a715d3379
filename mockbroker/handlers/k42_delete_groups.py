"""DeleteGroups: v0-2.

Behavior: deletes empty groups with their committed offsets; NON_EMPTY_GROUP while members remain,
GROUP_ID_NOT_FOUND for unknown groups, NOT_COORDINATOR on the wrong broker. With ACLs on: groups
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


@register(42, 0, 2)
def handle(ctx: RequestContext, req: DeleteGroupsRequest) -> Any:
    allowed = authz.authorized(ctx, authz.DELETE, authz.GROUP, req.groups_names)
    delete = ctx.cluster.groups.delete
    results = [RESP.DeletableGroupResult(group_id=g, error_code=not_coordinator(ctx, g) or refusal(delete, g))
               for g in allowed]
    if len(allowed) != len(req.groups_names):
        results += [RESP.DeletableGroupResult(group_id=g, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
                    for g in req.groups_names if g not in allowed]
    return RESP.DeleteGroupsResponse(results=results)
