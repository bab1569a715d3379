"""DescribeCluster: v0-2.

Behavior:
- Cluster id, controller id, and every broker with rack and the host and port of the listener the
  request arrived on (never fenced, so
  include_fenced_brokers, v2, changes nothing).
- endpoint_type (v1+): 1 (brokers) is served; any other type -> UNSUPPORTED_ENDPOINT_TYPE.
- cluster_authorized_operations is -2147483648 (not asked) unless include_cluster_authorized_operations
  is set; then, as a Kafka broker without an authorizer, every operation the CLUSTER resource
  supports: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE
  (bits 5, 7-12 = 8096).
"""

from __future__ import annotations

from typing import Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

RESP = api.response_module(60)
BROKERS_ENDPOINT = 1
NO_OPERATIONS = -(2**31)
# AclOperation codes: CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
# IDEMPOTENT_WRITE 12
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


@register(60, 0, 2)
def handle(ctx: Any, req: Any) -> Any:
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
        cluster_authorized_operations=CLUSTER_OPERATIONS if req.include_cluster_authorized_operations
        else NO_OPERATIONS,
    )
