"""InitProducerId: v0-6.

Behavior:
- Idempotent producers (no transactional id) get a fresh producer id with epoch 0.
- A transactional id keeps its producer id and gets the next epoch on every call.
- transaction_timeout_ms above `transaction.max.timeout.ms` -> INVALID_TRANSACTION_TIMEOUT.

Not yet modelled: KIP-360 recovery with the producer id/epoch in the request, and the
transaction coordinator (the transactions work brings both).
"""

from __future__ import annotations

from typing import Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

RESP = api.response_module(22)


@register(22, 0, 6)
def handle(ctx: Any, req: Any) -> Any:
    max_timeout = ctx.cluster.config["transaction.max.timeout.ms"]
    if req.transactional_id is not None and req.transaction_timeout_ms > max_timeout:
        return RESP.InitProducerIdResponse(error_code=ErrorCode.INVALID_TRANSACTION_TIMEOUT, producer_id=-1,
                                           producer_epoch=-1)
    pid, epoch = ctx.cluster.producers.init_producer(req.transactional_id)
    return RESP.InitProducerIdResponse(error_code=0, producer_id=pid, producer_epoch=epoch)
