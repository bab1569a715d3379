"""AddOffsetsToTxn: v0-4.

Behavior:
- Adds a consumer group to the producer's transaction, so TxnOffsetCommit may commit its offsets
  (visible when the transaction commits).
- NOT_COORDINATOR on the wrong broker; an empty group id -> INVALID_GROUP_ID; unknown transactional
  id or another producer id -> INVALID_PRODUCER_ID_MAPPING; another epoch -> PRODUCER_FENCED
  (INVALID_PRODUCER_EPOCH before v2); markers still being written -> CONCURRENT_TRANSACTIONS.
- With ACLs on (checked first, as Kafka): WRITE on the transactional id, else
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED; READ on the group, else GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.handlers.txn_common import for_version, not_txn_coordinator
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.add_offsets_to_txn_request import AddOffsetsToTxnRequest

RESP = api.response_module(25)


@register(25, 0, 4)
def handle(ctx: RequestContext, req: AddOffsetsToTxnRequest) -> Any:
    if not authz.authorize(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, req.transactional_id):
        return RESP.AddOffsetsToTxnResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not authz.authorize(ctx, authz.READ, authz.GROUP, req.group_id):
        return RESP.AddOffsetsToTxnResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    code = not_txn_coordinator(ctx, req.transactional_id)
    if not code and not req.group_id:
        code = ErrorCode.INVALID_GROUP_ID
    if not code:
        try:
            ctx.cluster.transactions.add_offsets(req.transactional_id, req.producer_id, req.producer_epoch,
                                                 req.group_id)
        except KafkaError as exc:
            code = for_version(exc.code, ctx.api_version, 2)
    return RESP.AddOffsetsToTxnResponse(error_code=code)
