"""DescribeCluster: v0-2.

Behavior:
- Cluster id, controller, and every broker (never fenced).
- endpoint_type (v1+): 1 (brokers) is served; any other type -> UNSUPPORTED_ENDPOINT_TYPE.
- cluster_authorized_operations is -2147483648 (not computed: there are no ACLs yet).
"""

from __future__ import annotations

from typing import Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

RESP = api.response_module(60)
BROKERS_ENDPOINT = 1
NO_OPERATIONS = -(2**31)


@register(60, 0, 2)
def handle(ctx: Any, req: Any) -> Any:
    cluster = ctx.cluster
    if ctx.api_version >= 1 and req.endpoint_type != BROKERS_ENDPOINT:
        return RESP.DescribeClusterResponse(error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                                            error_message=f"endpoint type {req.endpoint_type} is not served",
                                            endpoint_type=req.endpoint_type, cluster_id=cluster.cluster_id,
                                            controller_id=-1, brokers=[])
    return RESP.DescribeClusterResponse(
        error_code=0,
        endpoint_type=BROKERS_ENDPOINT,
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id,
        brokers=[RESP.DescribeClusterBroker(broker_id=b.node_id, host=b.host, port=b.port, rack=b.rack,
                                            is_fenced=False) for b in cluster.brokers.values()],
        cluster_authorized_operations=NO_OPERATIONS,
    )
