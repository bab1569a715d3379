"""InitProducerId: v0-5 (v6, two-phase commit, is unstable in Kafka 4.3 and not advertised).

Behavior:
- No transactional id: a fresh producer id with epoch 0, whatever id/epoch the request carries
  (as Kafka; the client starts over with sequence 0).
- A transactional id (on its coordinator, else NOT_COORDINATOR; empty -> INVALID_REQUEST): the same
  producer id with the next epoch (a new id once the epoch is exhausted); an open transaction is
  aborted first and answered CONCURRENT_TRANSACTIONS (the client retries); a transaction still
  writing its markers -> CONCURRENT_TRANSACTIONS.
- KIP-360 (v3+): producer_id/producer_epoch name what the client holds; anything but the current
  pair (or the pair before a bump already made, answered again) -> PRODUCER_FENCED
  (INVALID_PRODUCER_EPOCH before v4).
- transaction_timeout_ms outside 1..`transaction.max.timeout.ms` -> INVALID_TRANSACTION_TIMEOUT.
- With ACLs on (checked first, as Kafka): a transactional id needs WRITE on it, else
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED; an idempotent producer needs IDEMPOTENT_WRITE on the cluster
  or WRITE on at least one topic (Kafka 3.0+), else CLUSTER_AUTHORIZATION_FAILED.
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
    from mockbroker.protocol.generated.init_producer_id_request import InitProducerIdRequest

RESP = api.response_module(22)


def _error(code: int) -> Any:
    return RESP.InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)


@register(22, 0, 5)
def handle(ctx: RequestContext, req: InitProducerIdRequest) -> Any:
    txn_id = req.transactional_id
    if authz.enabled(ctx):
        if txn_id is not None and not authz.authorize(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, txn_id):
            return _error(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if txn_id is None and not (authz.authorize_cluster(ctx, authz.IDEMPOTENT_WRITE, log_denied=False)
                                   or authz.authorize_any(ctx, authz.WRITE, authz.TOPIC)):
            return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if txn_id is None:
        return RESP.InitProducerIdResponse(error_code=0, producer_id=ctx.cluster.producers.new_id(), producer_epoch=0)
    if txn_id == "":
        return _error(ErrorCode.INVALID_REQUEST)
    code = not_txn_coordinator(ctx, txn_id)
    if code:
        return _error(code)
    pid, epoch = (req.producer_id, req.producer_epoch) if ctx.api_version >= 3 else (-1, -1)
    try:
        pid, epoch = ctx.cluster.transactions.init_producer(txn_id, req.transaction_timeout_ms, pid, epoch)
    except KafkaError as exc:
        return _error(for_version(exc.code, ctx.api_version, 4))
    return RESP.InitProducerIdResponse(error_code=0, producer_id=pid, producer_epoch=epoch)
