"""DescribeCluster: v0-2.

Behavior:
- Cluster id, controller id, and every broker with rack and the host and port of the listener the
  request arrived on (never fenced, so
  include_fenced_brokers, v2, changes nothing).
- endpoint_type (v1+): 1 (brokers) is served; any other type -> UNSUPPORTED_ENDPOINT_TYPE.
- cluster_authorized_operations is -2147483648 (not asked) unless include_cluster_authorized_operations
  is set; then, with ACLs off (as a Kafka broker without an authorizer), every operation the CLUSTER
  resource supports: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
  IDEMPOTENT_WRITE (bits 5, 7-12 = 8096); with ACLs on, those the principal is allowed, or 0 without
  DESCRIBE on the cluster (Kafka answers the rest of the request either way).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.describe_cluster_request import DescribeClusterRequest

RESP = api.response_module(60)
BROKERS_ENDPOINT = 1
NO_OPERATIONS = -(2**31)


def _operations(ctx: RequestContext) -> int:
    if not authz.authorize_cluster(ctx, authz.DESCRIBE):
        return 0
    return authz.operations(ctx, authz.CLUSTER, authz.CLUSTER_NAME)


@register(60, 0, 2)
def handle(ctx: RequestContext, req: DescribeClusterRequest) -> Any:
    cluster = ctx.cluster
    if ctx.api_version >= 1 and req.endpoint_type != BROKERS_ENDPOINT:
        return RESP.DescribeClusterResponse(
            error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"The request was sent to an endpoint of type {BROKERS_ENDPOINT} (brokers), "
                          f"but it wanted endpoint type {req.endpoint_type}.",
            endpoint_type=BROKERS_ENDPOINT, cluster_id=cluster.cluster_id, controller_id=-1, brokers=[])
    return RESP.DescribeClusterResponse(
        error_code=0,
        endpoint_type=BROKERS_ENDPOINT,
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id,
        brokers=[RESP.DescribeClusterBroker(broker_id=b.node_id, host=host, port=port, rack=b.rack,
                                            is_fenced=False)
                 for b in cluster.brokers.values() for host, port in (b.endpoint(ctx.connection.listener),)],
        cluster_authorized_operations=_operations(ctx) if req.include_cluster_authorized_operations
        else NO_OPERATIONS,
    )
