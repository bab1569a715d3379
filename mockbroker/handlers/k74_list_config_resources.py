"""ListConfigResources: v0-1 (v0 was ListClientMetricsResources; KIP-1142 made it list every type).

Behavior:
- v0: the names of the CLIENT_METRICS subscriptions (mockbroker.state.client_metrics).
- v1: resource_types filters; none given -> TOPIC (2), BROKER (4), BROKER_LOGGER (8),
  CLIENT_METRICS (16) and GROUP (32). TOPIC: every topic; BROKER: every broker id; BROKER_LOGGER:
  this broker's id; GROUP: the groups the coordinator knows plus those with group configs.
  Another type -> INVALID_REQUEST, nothing listed.
- With ACLs on: DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.list_config_resources_request import ListConfigResourcesRequest

RESP = api.response_module(74)
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
SUPPORTED = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)


def _names(ctx: RequestContext, kind: int) -> list[str]:
    cluster = ctx.cluster
    if kind == TOPIC:
        return sorted(cluster.topics)
    if kind == BROKER:
        return [str(b) for b in sorted(cluster.brokers)]
    if kind == BROKER_LOGGER:
        return [str(ctx.broker_id)]
    if kind == CLIENT_METRICS:
        return sorted(cluster.config_admin.client_metrics.subscriptions)
    return sorted(set(cluster.groups.groups) | set(cluster.config_admin.group_configs.overrides))


@register(74, 0, 1)
def handle(ctx: RequestContext, req: ListConfigResourcesRequest) -> Any:
    if authz.enabled(ctx) and not authz.authorize_cluster(ctx, authz.DESCRIBE_CONFIGS):
        return RESP.ListConfigResourcesResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    kinds = [CLIENT_METRICS] if ctx.api_version == 0 else list(dict.fromkeys(req.resource_types or SUPPORTED))
    if any(k not in SUPPORTED for k in kinds):
        return RESP.ListConfigResourcesResponse(error_code=ErrorCode.INVALID_REQUEST)
    return RESP.ListConfigResourcesResponse(error_code=0, config_resources=[
        RESP.ConfigResource(resource_name=name, resource_type=kind) for kind in kinds for name in _names(ctx, kind)])
