"""AddPartitionsToTxn: v0-5.

Behavior:
- v0-3 (clients): one transaction; v4+ (brokers): a batch of transactions, each answered under its
  transactional id, optionally verify_only (0 for partitions already in the open transaction,
  INVALID_TXN_STATE for the others, nothing added).
- Errors answer every partition of the transaction: NOT_COORDINATOR on the wrong broker; unknown
  transactional id or another producer id -> INVALID_PRODUCER_ID_MAPPING; another epoch ->
  PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2); a transaction still writing its markers ->
  CONCURRENT_TRANSACTIONS. Partitions of unknown topics -> UNKNOWN_TOPIC_OR_PARTITION and the rest
  OPERATION_NOT_ATTEMPTED, nothing added (as Kafka).
- With ACLs on (checked first, as Kafka): v0-3 need WRITE on the transactional id (else
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition) and WRITE on each topic (internal topics
  excepted): partitions of the others -> TOPIC_AUTHORIZATION_FAILED, unknown ones
  UNKNOWN_TOPIC_OR_PARTITION, the rest OPERATION_NOT_ATTEMPTED. v4+ (broker to broker) need
  CLUSTER_ACTION on the cluster, else CLUSTER_AUTHORIZATION_FAILED (top level).
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
    from mockbroker.protocol.generated.add_partitions_to_txn_request import AddPartitionsToTxnRequest

RESP = api.response_module(24)
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")


def _codes(ctx: RequestContext, txn_id: str, pid: int, epoch: int, topics: list[Any],
           verify: bool) -> dict[tuple[str, int], int]:
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    if ctx.api_version < 4 and authz.enabled(ctx):
        if not authz.authorize(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, txn_id):
            return dict.fromkeys(wanted, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        denied = authz.denied_names(ctx, authz.WRITE, authz.TOPIC, (t for t, _ in wanted if t not in INTERNAL_TOPICS))
        if denied:
            return {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp[0] in denied else
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if not _exists(ctx, *tp) else ErrorCode.OPERATION_NOT_ATTEMPTED
                    for tp in wanted}
    code = not_txn_coordinator(ctx, txn_id)
    if not code:
        unknown = {tp for tp in wanted if not _exists(ctx, *tp)}
        if unknown:
            return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
                    for tp in wanted}
        txns = ctx.cluster.transactions
        try:
            if verify:
                return txns.verify_partitions(txn_id, pid, epoch, wanted)
            txns.add_partitions(txn_id, pid, epoch, wanted)
        except KafkaError as exc:
            code = for_version(exc.code, ctx.api_version, 2)
    return dict.fromkeys(wanted, code)


def _exists(ctx: RequestContext, topic: str, partition: int) -> bool:
    t = ctx.cluster.topics.get(topic)
    return t is not None and 0 <= partition < len(t.partitions)


def _topic_results(codes: dict[tuple[str, int], int]) -> list[Any]:
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), code in codes.items():
        by_topic.setdefault(topic, []).append(
            RESP.AddPartitionsToTxnPartitionResult(partition_index=partition, partition_error_code=code))
    return [RESP.AddPartitionsToTxnTopicResult(name=name, results_by_partition=parts)
            for name, parts in by_topic.items()]


@register(24, 0, 5)
def handle(ctx: RequestContext, req: AddPartitionsToTxnRequest) -> Any:
    if ctx.api_version < 4:
        codes = _codes(ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                       req.v3_and_below_producer_epoch, req.v3_and_below_topics, False)
        return RESP.AddPartitionsToTxnResponse(results_by_topic_v3_and_below=_topic_results(codes))
    if not authz.authorize_cluster(ctx, authz.CLUSTER_ACTION):
        return RESP.AddPartitionsToTxnResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                               results_by_transaction=[])
    results = [
        RESP.AddPartitionsToTxnResult(
            transactional_id=t.transactional_id,
            topic_results=_topic_results(_codes(ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics,
                                                t.verify_only)))
        for t in req.transactions
    ]
    return RESP.AddPartitionsToTxnResponse(error_code=0, results_by_transaction=results)
