"""ApiVersions: v0-4.

Behavior:
- Lists every API the registry serves, with the version ranges the handlers registered, but
  GetTelemetrySubscriptions and PushTelemetry unless a client telemetry receiver is configured (the broker
  config ``mock.telemetry.receiver``), as Kafka's ApiVersionsResponse.brokerApiVersions: a client is told
  of them only when its metrics would go somewhere (requests that come anyway are still served).
- A version newer than we speak is answered (by the dispatcher) with v0 and UNSUPPORTED_VERSION.
- v3+: the client's software name and version must match Kafka's pattern (letters, digits, '-' and
  '.', starting and ending with a letter or digit), else the answer is INVALID_REQUEST with no API
  list (ApiVersionsRequest.isValid / getErrorResponse); valid ones are remembered on the connection.
- v3+: the cluster's features (mockbroker.state.features): supported ranges (below v4 without those
  whose minimum is 0, as Kafka does for old clients, KAFKA-17492), finalized levels above 0 and the
  finalized-features epoch (UpdateFeatures changes them).
- The response header is always v0, so any client can read it (done by the codec).

Every connection starts with this request, and the API list it answers is the same each time: it is
built once and keeps its encoding (registry.api_version_keys), which takes an answer from ~90 to
~30 us (v3) and ~115 to ~15 us (v0), in-process.  The feature lists keep theirs too: the supported
ones never change, the finalized ones are kept per set of levels (UpdateFeatures makes a new one).
A valid request read straight from a connection's staging buffer is answered there, in C, with
:func:`usual_answer_body`'s bytes (native/lanes/api_versions_staging.h); this handler answers the rest.
The whole answer's encoding is kept as well (:func:`_encode`, the codec's encoder for this API),
per version and per the values of its fields: a client connection's life ~27k instructions (~9 %)
less broker work.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers.registry import api_version_keys, register
from mockbroker.protocol import api
from mockbroker.protocol.runtime import EncodedList
from mockbroker.state.features import SUPPORTED

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.api_versions_request import ApiVersionsRequest
    from mockbroker.state.cluster import ClusterState

RESP = api.response_module(18)
TELEMETRY = "mock.telemetry.receiver"  # static: read per answer, the same for the cluster's life
log = logging.getLogger("mockbroker.handlers")
SOFTWARE_NAME_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")  # Kafka's ApiVersionsRequest
# v3 leaves out the features whose minimum is 0 (KAFKA-17492), v4 lists them all
_SUPPORTED = {
    v4: EncodedList(RESP.SupportedFeatureKey(name=name, min_version=lo, max_version=hi)
                    for name, (lo, hi) in SUPPORTED.items() if lo > 0 or v4)
    for v4 in (False, True)
}
_FINALIZED: dict[tuple[tuple[str, int], ...], EncodedList] = {}  # levels -> their entries, encoded once
# (version, the answer's fields) -> (its body's bytes, the lists whose ids are in the key, kept alive)
_ENCODED: dict[tuple[Any, ...], tuple[bytes, tuple[Any, ...]]] = {}
_BODIES: dict[tuple[int, int, int, bool], tuple[bytes, Any]] = {}  # usual_answer_body's, with the features they are of


def _finalized(levels: dict[str, int]) -> EncodedList:
    key = tuple(levels.items())
    entries = _FINALIZED.get(key)
    if entries is None:
        if len(_FINALIZED) >= 64:  # each UpdateFeatures may make a new set: keep the cache small
            _FINALIZED.clear()
        entries = _FINALIZED[key] = EncodedList(
            RESP.FinalizedFeatureKey(name=name, min_version_level=level, max_version_level=level)
            for name, level in levels.items())
    return entries


@register(18, 0, 4)
def handle(ctx: RequestContext, req: ApiVersionsRequest) -> Any:
    if ctx.api_version >= 3:
        name, version = req.client_software_name, req.client_software_version
        if not (SOFTWARE_NAME_VERSION.fullmatch(name) and SOFTWARE_NAME_VERSION.fullmatch(version)):
            log.warning("broker %s: ApiVersions v%s from %s: client software name %r and version %r must match "
                        "%s (Kafka's rule): INVALID_REQUEST", ctx.broker_id, ctx.api_version, ctx.connection.peer,
                        name, version, SOFTWARE_NAME_VERSION.pattern)
            return RESP.ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST, api_keys=[])
        ctx.connection.client_software = f"{name}/{version}"
    return _usual(ctx.cluster, ctx.api_version)


def _usual(cluster: ClusterState, version: int) -> Any:
    """The answer to a valid request: no error, every API, the cluster's features from v3."""
    response = RESP.ApiVersionsResponse(error_code=0, api_keys=api_version_keys(cluster.config[TELEMETRY]))
    if version >= 3:
        features = cluster.features
        response.supported_features = _SUPPORTED[version >= 4]
        response.finalized_features = _finalized(features.finalized_nonzero())
        response.finalized_features_epoch = features.epoch
    return response


def usual_answer_body(cluster: ClusterState, version: int) -> bytes:
    """The encoded body of :func:`_usual`'s answer: what the staging lane writes when it answers a
    valid request itself (native/lanes/api_versions_staging.h), the handler's bytes.  Kept per version,
    features epoch (every change of the levels moves the epoch) and telemetry receiver; the entry holds the
    features object, so its id in the key is never another's."""
    features = cluster.features
    key = (version, id(features), features.epoch, cluster.config[TELEMETRY])
    kept = _BODIES.get(key)
    if kept is None:
        out = bytearray()
        _encode(_usual(cluster, version), version, out)
        if len(_BODIES) >= 64:
            _BODIES.clear()
        kept = _BODIES[key] = (bytes(out), features)
    return kept[0]


def _encode(body: Any, version: int, out: bytearray, holes: list[Any] | None = None) -> bool | None:
    """Write an answer's body from the kept encoding of an equal one (None: let the codec write it).
    Its lists are told by identity (the kept ones above; an empty list by its emptiness), and the
    entry keeps them alive, so an id in a key is never another list's."""
    if body.unknown_tags:
        return None
    lists = (body.api_keys, body.supported_features, body.finalized_features)
    key = (version, body.error_code, body.throttle_time_ms, body.finalized_features_epoch, body.zk_migration_ready,
           *[id(x) if x else None for x in lists])
    kept = _ENCODED.get(key)
    if kept is None:
        start = len(out)
        api.encode_message(RESP, version, body, out, [])
        if len(_ENCODED) >= 64:
            _ENCODED.clear()
        _ENCODED[key] = (bytes(out[start:]), lists)
        return True
    out += kept[0]
    return True


api.set_response_encoder(18, _encode)
