"""FindCoordinator: v0-6.

Behavior:
- Group (key type 0) and transaction (key type 1) coordinators are spread over the brokers by a
  stable hash of the key; other key types -> INVALID_REQUEST.
- v0-3 answer one key; v4+ answer a batch (coordinator_keys).
- The first group key makes `__consumer_offsets`, the first transactional id `__transaction_state`
  (state/internal_topics.py), as Kafka does; here the answer names the coordinator at once.
- With ACLs on (checked first, as Kafka): a group key needs DESCRIBE on the group, else
  GROUP_AUTHORIZATION_FAILED; a transactional id needs DESCRIBE on it, else
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
- The coordinator's host and port are those of the listener the request arrived on.
- Requests that repeat byte for byte are answered from the answer kept for the first
  (handlers/kept_answers.py) while no broker or pinned coordinator changed (answer_epoch.BROKERS:
  topic changes leave them kept).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz, kept_answers
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.state import internal_topics
from mockbroker.state.internal_topics import CONSUMER_OFFSETS, TRANSACTION_STATE

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.find_coordinator_request import FindCoordinatorRequest
    from mockbroker.state.cluster import ClusterState

RESP = api.response_module(10)


def _find(ctx: RequestContext, key: str, key_type: int) -> tuple[int, str | None, Any]:
    if key_type == 0 and not authz.authorize(ctx, authz.DESCRIBE, authz.GROUP, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, None, None
    if key_type == 1 and not authz.authorize(ctx, authz.DESCRIBE, authz.TRANSACTIONAL_ID, key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None, None
    if key_type not in (0, 1):
        return ErrorCode.INVALID_REQUEST, f"key type {key_type} is not served", None
    if not key and key_type == 0:
        return ErrorCode.INVALID_REQUEST, "empty group id", None
    internal_topics.ensure(ctx.cluster, CONSUMER_OFFSETS if key_type == 0 else TRANSACTION_STATE)
    return 0, None, ctx.cluster.coordinator_for(key)


@kept_answers.keep(10)
def ordinary(cluster: ClusterState, version: int, req: FindCoordinatorRequest) -> bool:
    """Answered without errors, so its answer may be kept (kept_answers): group or transaction keys,
    no empty group id."""
    key_type = req.key_type if version >= 1 else 0
    keys = req.coordinator_keys if version >= 4 else [req.key]
    return key_type == 1 or (key_type == 0 and all(keys))


@register(10, 0, 6)
def handle(ctx: RequestContext, req: FindCoordinatorRequest) -> Any:
    key_type = req.key_type if ctx.api_version >= 1 else 0
    if ctx.api_version >= 4:
        coordinators = []
        for key in req.coordinator_keys:
            code, message, broker = _find(ctx, key, key_type)
            found = RESP.Coordinator(key=key, error_code=code, error_message=message, node_id=-1, host="", port=-1)
            if broker is not None:
                found.node_id = broker.node_id
                found.host, found.port = broker.endpoint(ctx.connection.listener)
            coordinators.append(found)
        return RESP.FindCoordinatorResponse(coordinators=coordinators)
    code, message, broker = _find(ctx, req.key, key_type)
    if broker is None:
        return RESP.FindCoordinatorResponse(error_code=code, error_message=message, node_id=-1, host="", port=-1)
    host, port = broker.endpoint(ctx.connection.listener)
    return RESP.FindCoordinatorResponse(error_code=0, node_id=broker.node_id, host=host, port=port)
