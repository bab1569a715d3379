"""DeleteAcls: v0-3.

Behavior:
- Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED for every filter); with
  authorization off (no `authorizer.class.name`) every filter answers SECURITY_DISABLED.
- Each filter (same semantics as DescribeAcls: ANY codes and null strings match everything, MATCH
  every pattern applying to the named resource) deletes the ACLs it matches and lists them; a
  filter with UNKNOWN codes -> INVALID_REQUEST for that filter ("Unknown patternFilter." /
  "Unknown entryFilter."), as Kafka's controller.
- v0 has no pattern type: LITERAL (Kafka's client maps ANY to LITERAL for v0). v1 adds pattern
  types; v2 flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.state.acls import AclFilter, PatternType

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.delete_acls_request import DeleteAclsRequest

RESP = api.response_module(31)


def _all(req: DeleteAclsRequest, code: int, message: str) -> Any:
    return RESP.DeleteAclsResponse(filter_results=[
        RESP.DeleteAclsFilterResult(error_code=code, error_message=message, matching_acls=[]) for _ in req.filters])


def _delete(ctx: RequestContext, f: Any) -> Any:
    pattern = f.pattern_type_filter if ctx.api_version >= 1 else PatternType.LITERAL
    flt = AclFilter(f.resource_type_filter, f.resource_name_filter, pattern, f.principal_filter, f.host_filter,
                    f.operation, f.permission_type)
    try:
        gone = ctx.cluster.acls.delete(flt)
    except KafkaError as exc:
        authz.log.warning("DeleteAcls from %s: filter %s refused: %s", ctx.principal, flt, exc.message)
        return RESP.DeleteAclsFilterResult(error_code=exc.code, error_message=exc.message, matching_acls=[])
    return RESP.DeleteAclsFilterResult(error_code=0, error_message=None, matching_acls=[
        RESP.DeleteAclsMatchingAcl(error_code=0, error_message=None, resource_type=a.resource_type,
                                   resource_name=a.resource_name, pattern_type=a.pattern_type, principal=a.principal,
                                   host=a.host, operation=a.operation, permission_type=a.permission_type)
        for a in gone])


@register(31, 0, 3)
def handle(ctx: RequestContext, req: DeleteAclsRequest) -> Any:
    if not authz.authorize_cluster(ctx, authz.ALTER):
        return _all(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    if not authz.enabled(ctx):
        return _all(req, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    return RESP.DeleteAclsResponse(filter_results=[_delete(ctx, f) for f in req.filters])
