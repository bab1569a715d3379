"""DescribeTransactions: v0.

Behavior: per transactional id, on its coordinator (else NOT_COORDINATOR): state (Empty, Ongoing,
PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort), timeout, start time (-1 when no
transaction is open), producer id and epoch, and the topic partitions in the transaction. A group
added with AddOffsetsToTxn is listed as Kafka lists it: the ``__consumer_offsets`` partition that keeps
it (abs(hashCode(group id)) % the topic's partition count, ``offsets.topic.num.partitions`` before the
topic exists), one entry per partition however many groups share it. Unknown ids ->
TRANSACTIONAL_ID_NOT_FOUND. With ACLs on: DESCRIBE on the transactional id, else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED; topics without DESCRIBE are left out (``__consumer_offsets`` too,
as Kafka filters every topic).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.handlers.txn_common import not_txn_coordinator
from mockbroker.protocol import api
from mockbroker.state.group_offsets import offsets_partition, offsets_partitions
from mockbroker.state.internal_topics import CONSUMER_OFFSETS

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.describe_transactions_request import DescribeTransactionsRequest

RESP = api.response_module(65)


def _describe(ctx: RequestContext, txn_id: str) -> Any:
    out = RESP.TransactionState(error_code=0, transactional_id=txn_id, transaction_state="",
                                transaction_timeout_ms=0, transaction_start_time_ms=-1, producer_id=-1,
                                producer_epoch=-1, topics=[])
    if not authz.authorize(ctx, authz.DESCRIBE, authz.TRANSACTIONAL_ID, txn_id):
        out.error_code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return out
    out.error_code = not_txn_coordinator(ctx, txn_id)
    if out.error_code:
        return out
    try:
        txn = ctx.cluster.transactions.describe(txn_id)
    except KafkaError as exc:
        out.error_code = exc.code
        return out
    count = offsets_partitions(ctx.cluster)
    held = set(txn.partitions) | {(CONSUMER_OFFSETS, offsets_partition(g, count)) for g in txn.groups}
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(held):
        by_topic.setdefault(topic, []).append(partition)
    out.transaction_state, out.transaction_timeout_ms = txn.state, txn.timeout_ms
    out.transaction_start_time_ms, out.producer_id, out.producer_epoch = txn.start_ms, txn.producer_id, txn.epoch
    out.topics = [RESP.TopicData(topic=t, partitions=p) for t, p in by_topic.items()
                  if authz.authorize(ctx, authz.DESCRIBE, authz.TOPIC, t)]
    return out


@register(65, 0, 0)
def handle(ctx: RequestContext, req: DescribeTransactionsRequest) -> Any:
    return RESP.DescribeTransactionsResponse(transaction_states=[_describe(ctx, t) for t in req.transactional_ids])
