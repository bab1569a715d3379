"""EndTxn: v0-5.

Behavior:
- committed=true commits, false aborts: a COMMIT/ABORT marker goes to every partition of the
  transaction and the offsets it committed to groups become visible (or are dropped).
- A retried end of the transaction just completed succeeds again; the other outcome ->
  INVALID_TXN_STATE; no open transaction -> INVALID_TXN_STATE; markers still being written ->
  CONCURRENT_TRANSACTIONS.
- NOT_COORDINATOR on the wrong broker; unknown transactional id or another producer id ->
  INVALID_PRODUCER_ID_MAPPING; another epoch -> PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2).
- v5 (KIP-890 part 2): every end bumps the epoch, the answer carries producer id and epoch, an abort
  with no open transaction is allowed, and a retry with the pre-bump epoch is answered again.
- With ACLs on: WRITE on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED (first).
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
    from mockbroker.protocol.generated.end_txn_request import EndTxnRequest

RESP = api.response_module(26)


@register(26, 0, 5)
def handle(ctx: RequestContext, req: EndTxnRequest) -> Any:
    if not authz.authorize(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, req.transactional_id):
        return RESP.EndTxnResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id=-1,
                                   producer_epoch=-1)
    code = not_txn_coordinator(ctx, req.transactional_id)
    pid, epoch = -1, -1
    if not code:
        try:
            pid, epoch = ctx.cluster.transactions.end(req.transactional_id, req.producer_id, req.producer_epoch,
                                                      req.committed, bump_epoch=ctx.api_version >= 5)
        except KafkaError as exc:
            code = for_version(exc.code, ctx.api_version, 2)
    return RESP.EndTxnResponse(error_code=code, producer_id=pid, producer_epoch=epoch)
