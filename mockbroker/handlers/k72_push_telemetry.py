"""PushTelemetry: v0 (KIP-714 client metrics).

Behavior (checks in mockbroker.state.client_metrics, in Kafka's ClientMetricsManager order):
- Unknown or zero client_instance_id -> UNKNOWN_SUBSCRIPTION_ID; a push after a terminating one ->
  INVALID_REQUEST; a subscription_id that is not the instance's current one (also after the
  subscriptions changed) -> UNKNOWN_SUBSCRIPTION_ID; a push before the push interval ran out since
  the previous push (the first after GetTelemetrySubscriptions is always let in; a terminating one
  too) -> THROTTLING_QUOTA_EXCEEDED; a compression type other than none, gzip, snappy, lz4, zstd ->
  UNSUPPORTED_COMPRESSION_TYPE; metrics larger than telemetry.max.bytes -> TELEMETRY_TOO_LARGE.
- Without a telemetry receiver (broker config mock.telemetry.receiver false, the default) a valid push is
  answered NONE and its metrics go nowhere, as Kafka's ClientMetricsManager exports to no plugin; the
  broker then does not advertise this API (k18_api_versions), so clients push only when asked to.
- With the receiver, the metrics are decompressed with the records codecs and read as OTLP MetricsData
  (mockbroker.telemetry.otlp); bytes that do not decode -> INVALID_RECORD, as Kafka answers when its
  receiver fails. The latest value of each metric is kept per client instance
  (MockCluster.telemetry(), GET /telemetry) and the metric names go into the journal entry's
  ``about`` as {"telemetry": {"client_instance_id", "metrics"}}.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mockbroker.codec_errors import DecompressionError, UnsupportedCompressionError
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.protocol.errors import error_name
from mockbroker.records.compression import decompress
from mockbroker.state.ids import uuid_text
from mockbroker.telemetry.otlp import OTLPError, decode_metrics_data

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.push_telemetry_request import PushTelemetryRequest

RESP = api.response_module(72)
logger = logging.getLogger("mockbroker.telemetry")


def _latest(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in metrics:
        points = m["data_points"]
        out[m["name"]] = {"type": m["type"], "unit": m["unit"], "data_points": points,
                          "value": points[-1].get("value", points[-1].get("sum")) if points else None}
    return out


@register(72, 0, 0)
def handle(ctx: RequestContext, req: PushTelemetryRequest) -> Any:
    cluster = ctx.cluster
    metrics = cluster.config_admin.client_metrics
    max_bytes = cluster.config["telemetry.max.bytes"]
    try:
        inst = metrics.push(req.client_instance_id, req.subscription_id, req.terminating, req.compression_type,
                            len(req.metrics), max_bytes, cluster.clock.now_ms())
    except KafkaError as exc:
        logger.info("broker %s: push telemetry from %s refused: %s %s", ctx.broker_id, ctx.client_id,
                    error_name(exc.code), exc.message)
        return RESP.PushTelemetryResponse(error_code=exc.code)
    if req.metrics and cluster.config["mock.telemetry.receiver"]:
        try:
            raw = decompress(req.compression_type, req.metrics, max_size=64 * max(max_bytes, 1))
            resource, decoded = decode_metrics_data(raw)
        except (DecompressionError, UnsupportedCompressionError, OTLPError) as exc:
            logger.info("broker %s: push telemetry from %s: unreadable metrics: %s", ctx.broker_id, ctx.client_id,
                        exc)
            inst.last_error = ErrorCode.INVALID_RECORD
            return RESP.PushTelemetryResponse(error_code=ErrorCode.INVALID_RECORD)
        latest = _latest(decoded)
        metrics.record(inst, {k: str(v) for k, v in resource.items()}, latest)
        if cluster.journal.enabled:
            cluster.journal.annotate(ctx.connection.peer, ctx.correlation_id, "telemetry", {
                "client_instance_id": uuid_text(inst.instance_id), "metrics": sorted(latest)})
    return RESP.PushTelemetryResponse(error_code=0)
