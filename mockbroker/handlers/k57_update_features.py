"""UpdateFeatures: v0-2.

Behavior:
- Changes the cluster's finalized feature levels (see mockbroker.state.features: metadata.version,
  kraft.version, transaction.version, group.version with Kafka 4.0's ranges and checks). ApiVersions
  v3+ advertises the result and the finalized-features epoch, which moves by one per applied request.
- v0: allow_downgrade means SAFE_DOWNGRADE; v1+: upgrade_type 1 UPGRADE, 2 SAFE_DOWNGRADE,
  3 UNSAFE_DOWNGRADE; v1+ validate_only checks without changing anything.
- All or nothing: the first bad update (INVALID_UPDATE_VERSION with Kafka's message) becomes the
  top-level error and nothing changes. v0-1 list one result per feature (error 0) on success and none
  on error, as Kafka; v2 has no per-feature results.
- Any broker answers (Kafka forwards to the controller); timeout_ms is ignored.
- With ACLs on: ALTER on the cluster, else top-level CLUSTER_AUTHORIZATION_FAILED (default message), no
  results, nothing changes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.state.features import SAFE_DOWNGRADE, UPGRADE

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.update_features_request import UpdateFeaturesRequest

RESP = api.response_module(57)
log = logging.getLogger("mockbroker.handlers")


@register(57, 0, 2)
def handle(ctx: RequestContext, req: UpdateFeaturesRequest) -> Any:
    if not authz.authorize_cluster(ctx, authz.ALTER):
        return RESP.UpdateFeaturesResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                           error_message="Cluster authorization failed.", results=[])
    version = ctx.api_version
    updates: dict[str, tuple[int, int]] = {}  # Kafka keys updates by feature name: the last one counts
    for u in req.feature_updates:
        kind = u.upgrade_type if version >= 1 else (SAFE_DOWNGRADE if u.allow_downgrade else UPGRADE)
        updates[u.feature] = (u.max_version_level, kind)
    validate_only = req.validate_only if version >= 1 else False
    try:
        ctx.cluster.features.update([(name, level, kind) for name, (level, kind) in updates.items()], validate_only)
    except KafkaError as exc:
        log.info("broker %s: UpdateFeatures refused: %s", ctx.broker_id, exc.message)
        return RESP.UpdateFeaturesResponse(error_code=exc.code, error_message=exc.message, results=[])
    return RESP.UpdateFeaturesResponse(error_code=0, error_message=None, results=[
        RESP.UpdatableFeatureResult(feature=name, error_code=0, error_message=None) for name in updates
    ])
