"""CreateAcls: v0-3.

Behavior:
- Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED for every creation); with
  authorization off (no `authorizer.class.name`) every creation answers SECURITY_DISABLED.
- Each creation is checked as Kafka (broker, then controller) does, first failure answering it
  with INVALID_REQUEST: a CLUSTER resource not named `kafka-cluster`, an empty name, resource
  type UNKNOWN/ANY, pattern type other than LITERAL/PREFIXED, operation UNKNOWN/ANY, permission
  other than ALLOW/DENY, a principal not of the form `Type:name`. The others are stored; creating
  an ACL that exists already succeeds and changes nothing.
- v0 has no pattern type: LITERAL. v1 adds pattern types; v2 flexible.
- Kafka refuses to parse a request carrying UNKNOWN (0) codes and closes the connection; the mock
  answers INVALID_REQUEST for that creation instead (and logs it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.state.acls import AclBinding, PatternType

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.create_acls_request import CreateAclsRequest

RESP = api.response_module(30)


def _all(req: CreateAclsRequest, code: int, message: str) -> Any:
    return RESP.CreateAclsResponse(results=[RESP.AclCreationResult(error_code=code, error_message=message)
                                            for _ in req.creations])


@register(30, 0, 3)
def handle(ctx: RequestContext, req: CreateAclsRequest) -> Any:
    if not authz.authorize_cluster(ctx, authz.ALTER):
        return _all(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    if not authz.enabled(ctx):
        return _all(req, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    acls = [AclBinding(c.resource_type, c.resource_name, c.resource_pattern_type if ctx.api_version >= 1
                       else PatternType.LITERAL, c.principal, c.host, c.operation, c.permission_type)
            for c in req.creations]
    results = ctx.cluster.acls.create(acls)
    return RESP.CreateAclsResponse(results=[
        RESP.AclCreationResult(error_code=0, error_message=None) if exc is None
        else RESP.AclCreationResult(error_code=exc.code, error_message=exc.message)
        for exc in results])
