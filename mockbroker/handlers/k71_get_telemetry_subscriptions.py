"""GetTelemetrySubscriptions: v0 (KIP-714 client metrics).

Behavior (logic in mockbroker.state.client_metrics, as Kafka's ClientMetricsManager):
- Advertised by ApiVersions only with a telemetry receiver (broker config mock.telemetry.receiver), as
  Kafka; a request that comes without it is answered all the same (Kafka serves it too).
- The zero client_instance_id gets a new random one; any other is kept (and its instance made if
  the broker does not know it).
- The instance is matched against the CLIENT_METRICS subscriptions (client_id from the request
  header, client_software_name/version from ApiVersions v3+, source address and port of the
  connection): requested_metrics are the matching subscriptions' metric prefixes (["*"] when one
  asks for all; [] with no match, and the client then pushes nothing), push_interval_ms the smallest
  of their interval.ms (300000 without), subscription_id a hash of both.
- accepted_compression_types zstd, lz4, gzip, snappy (Kafka's order); telemetry_max_bytes is the
  broker config telemetry.max.bytes; delta_temporality true.
- Asked again before the push interval ran out with the same subscriptions ->
  THROTTLING_QUOTA_EXCEEDED (not after an UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import KafkaError
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.state.client_metrics import ACCEPTED_COMPRESSION

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.get_telemetry_subscriptions_request import GetTelemetrySubscriptionsRequest

RESP = api.response_module(71)


def selectors(ctx: RequestContext) -> dict[str, str]:
    """What a CLIENT_METRICS match pattern may test, for the client on this connection."""
    name, _, version = (ctx.connection.client_software or "").partition("/")
    address, _, port = ctx.connection.peer.rpartition(":")
    return {"client_id": ctx.client_id or "", "client_software_name": name, "client_software_version": version,
            "client_source_address": address.strip("[]"), "client_source_port": port}


@register(71, 0, 0)
def handle(ctx: RequestContext, req: GetTelemetrySubscriptionsRequest) -> Any:
    metrics = ctx.cluster.config_admin.client_metrics
    try:
        inst = metrics.get_subscriptions(req.client_instance_id, selectors(ctx), ctx.cluster.clock.now_ms())
    except KafkaError as exc:
        return RESP.GetTelemetrySubscriptionsResponse(error_code=exc.code, client_instance_id=req.client_instance_id)
    return RESP.GetTelemetrySubscriptionsResponse(
        error_code=0, client_instance_id=inst.instance_id, subscription_id=inst.subscription_id,
        accepted_compression_types=list(ACCEPTED_COMPRESSION), push_interval_ms=inst.interval_ms,
        telemetry_max_bytes=ctx.cluster.config["telemetry.max.bytes"], delta_temporality=True,
        requested_metrics=list(inst.metrics))
