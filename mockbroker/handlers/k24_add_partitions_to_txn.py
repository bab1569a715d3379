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
"""

from __future__ import annotations

from typing import Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers.registry import register
from mockbroker.handlers.txn_common import for_version, not_txn_coordinator
from mockbroker.protocol import api

RESP = api.response_module(24)


def _codes(ctx: Any, txn_id: str, pid: int, epoch: int, topics: list[Any], verify: bool) -> dict[tuple[str, int], int]:
    wanted = [(t.name, p) for t in topics for p in t.partitions]
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


def _exists(ctx: Any, topic: str, partition: int) -> bool:
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
def handle(ctx: Any, req: Any) -> Any:
    if ctx.api_version < 4:
        codes = _codes(ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                       req.v3_and_below_producer_epoch, req.v3_and_below_topics, False)
        return RESP.AddPartitionsToTxnResponse(results_by_topic_v3_and_below=_topic_results(codes))
    results = [
        RESP.AddPartitionsToTxnResult(
            transactional_id=t.transactional_id,
            topic_results=_topic_results(_codes(ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics,
                                                t.verify_only)))
        for t in req.transactions
    ]
    return RESP.AddPartitionsToTxnResponse(error_code=0, results_by_transaction=results)
