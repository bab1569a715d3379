"""DescribeAcls: v0-3.

Behavior:
- Needs DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED, top level); with authorization
  off (no `authorizer.class.name`) -> SECURITY_DISABLED, as Kafka without an authorizer.
- The filter: resource type (ANY = all), name (null = any), pattern type (ANY = any, MATCH = every
  LITERAL, `*` or PREFIXED pattern that applies to the named resource, LITERAL / PREFIXED exact),
  principal and host (null = any), operation and permission type (ANY = any). A filter with UNKNOWN
  codes -> INVALID_REQUEST (top level).
- The answer groups the matching ACLs by resource pattern, in creation order.
- v0 has no pattern type: LITERAL (and the wildcard `*` name is LITERAL too); v1 adds pattern types;
  v2 flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.state.acls import AclBinding, AclFilter, PatternType

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.describe_acls_request import DescribeAclsRequest

RESP = api.response_module(29)


def resources(acls: list[AclBinding]) -> list[Any]:
    """ACLs grouped by resource pattern, as DescribeAclsResponse.aclsResources does."""
    grouped: dict[tuple[int, str, int], list[Any]] = {}
    for acl in acls:
        grouped.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
            RESP.AclDescription(principal=acl.principal, host=acl.host, operation=acl.operation,
                                permission_type=acl.permission_type))
    return [RESP.DescribeAclsResource(resource_type=rt, resource_name=name, pattern_type=pt, acls=entries)
            for (rt, name, pt), entries in grouped.items()]


@register(29, 0, 3)
def handle(ctx: RequestContext, req: DescribeAclsRequest) -> Any:
    if not authz.authorize_cluster(ctx, authz.DESCRIBE):
        return RESP.DescribeAclsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                         error_message="Cluster authorization failed.")
    if not authz.enabled(ctx):
        return RESP.DescribeAclsResponse(error_code=ErrorCode.SECURITY_DISABLED,
                                         error_message="No Authorizer is configured on the broker")
    pattern = req.pattern_type_filter if ctx.api_version >= 1 else PatternType.LITERAL
    flt = AclFilter(req.resource_type_filter, req.resource_name_filter, pattern, req.principal_filter,
                    req.host_filter, req.operation, req.permission_type)
    try:
        found = ctx.cluster.acls.describe(flt)
    except KafkaError as exc:
        authz.log.warning("DescribeAcls from %s refused: %s", ctx.principal, exc.message)
        return RESP.DescribeAclsResponse(error_code=exc.code, error_message=exc.message)
    return RESP.DescribeAclsResponse(error_code=0, error_message=None, resources=resources(found))
