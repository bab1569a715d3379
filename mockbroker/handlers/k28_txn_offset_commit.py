"""TxnOffsetCommit: v0-5.

Behavior:
- Offsets committed inside a transaction (after AddOffsetsToTxn named the group): held apart and
  visible to OffsetFetch only when the transaction commits; dropped when it aborts. Until then
  OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for those partitions.
- Errors answer every partition: NOT_COORDINATOR when this broker does not coordinate the group;
  an empty group id -> INVALID_GROUP_ID; unknown transactional id or another producer id ->
  INVALID_PRODUCER_ID_MAPPING; an older epoch -> INVALID_PRODUCER_EPOCH; the group not in the open
  transaction -> INVALID_TXN_STATE; v3+ with a member id or generation: UNKNOWN_MEMBER_ID /
  ILLEGAL_GENERATION as for OffsetCommit. Unknown topics -> UNKNOWN_TOPIC_OR_PARTITION for their
  partitions.
- With ACLs on (checked first, as Kafka): WRITE on the transactional id, else
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED, then READ on the group, else GROUP_AUTHORIZATION_FAILED,
  for every partition; partitions of topics without READ -> TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.groups_common import not_coordinator, refusal
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.txn_offset_commit_request import TxnOffsetCommitRequest

RESP = api.response_module(28)


def _group_code(ctx: RequestContext, req: TxnOffsetCommitRequest) -> int:
    if not authz.authorize(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, req.transactional_id):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if not authz.authorize(ctx, authz.READ, authz.GROUP, req.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    code = not_coordinator(ctx, req.group_id)
    if code:
        return code
    try:
        ctx.cluster.transactions.check_offsets(req.transactional_id, req.producer_id, req.producer_epoch,
                                               req.group_id)
    except KafkaError as exc:
        return exc.code
    return 0


@register(28, 0, 5)
def handle(ctx: RequestContext, req: TxnOffsetCommitRequest) -> Any:
    code = _group_code(ctx, req)
    codes: dict[tuple[str, int], int] = {}
    offsets = []
    denied = authz.denied_names(ctx, authz.READ, authz.TOPIC, (t.name for t in req.topics)) if not code else set()
    for t in req.topics:
        topic = ctx.cluster.topics.get(t.name)
        for p in t.partitions:
            if code:
                codes[(t.name, p.partition_index)] = code
            elif t.name in denied:
                codes[(t.name, p.partition_index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= p.partition_index < len(topic.partitions):
                codes[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                codes[(t.name, p.partition_index)] = 0
                offsets.append((t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                                p.committed_metadata))
    if not code and offsets:
        generation = req.generation_id if ctx.api_version >= 3 else -1
        member = req.member_id if ctx.api_version >= 3 else ""
        member_code = refusal(ctx.cluster.groups.txn_commit, req.group_id, req.producer_id, member, generation,
                              offsets)
        if member_code:
            codes = {tp: member_code if c == 0 else c for tp, c in codes.items()}
    by_topic: dict[str, list[Any]] = {}
    for (name, index), c in codes.items():
        by_topic.setdefault(name, []).append(RESP.TxnOffsetCommitResponsePartition(partition_index=index, error_code=c))
    return RESP.TxnOffsetCommitResponse(topics=[RESP.TxnOffsetCommitResponseTopic(name=n, partitions=parts)
                                                for n, parts in by_topic.items()])
