"""ListTransactions: v0-2.

Behavior: the transactional ids this broker coordinates, with producer id and state, filtered by
state (names Kafka does not know are answered in unknown_state_filters and match nothing), by
producer id, by duration (v1+: transactions open at least that many ms; -1 = no filter) and by a
regular expression over the whole id (v2+, KIP-1152; one that does not compile ->
INVALID_REGULAR_EXPRESSION). Empty filters match everything. With ACLs on: only the ids the principal
may DESCRIBE.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.handlers.txn_common import not_txn_coordinator
from mockbroker.protocol import api
from mockbroker.state.transactions import STATES

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.list_transactions_request import ListTransactionsRequest

RESP = api.response_module(66)


@register(66, 0, 2)
def handle(ctx: RequestContext, req: ListTransactionsRequest) -> Any:
    states = set(req.state_filters)
    unknown = sorted(states - set(STATES))
    pattern = None
    if ctx.api_version >= 2 and req.transactional_id_pattern:
        try:
            pattern = re.compile(req.transactional_id_pattern)
        except re.error:
            return RESP.ListTransactionsResponse(error_code=ErrorCode.INVALID_REGULAR_EXPRESSION,
                                                 unknown_state_filters=[], transaction_states=[])
    duration = req.duration_filter if ctx.api_version >= 1 else -1
    now = ctx.cluster.clock.now_ms()
    listed = []
    for txn in ctx.cluster.transactions.listed():
        if not_txn_coordinator(ctx, txn.transactional_id):
            continue
        if states and txn.state not in states:
            continue
        if req.producer_id_filters and txn.producer_id not in req.producer_id_filters:
            continue
        if duration >= 0 and (txn.start_ms < 0 or now - txn.start_ms < duration):
            continue
        if pattern is not None and not pattern.fullmatch(txn.transactional_id):
            continue
        if not authz.authorize(ctx, authz.DESCRIBE, authz.TRANSACTIONAL_ID, txn.transactional_id, False):
            continue
        listed.append(RESP.TransactionState(transactional_id=txn.transactional_id, producer_id=txn.producer_id,
                                            transaction_state=txn.state))
    return RESP.ListTransactionsResponse(error_code=0, unknown_state_filters=unknown, transaction_states=listed)
