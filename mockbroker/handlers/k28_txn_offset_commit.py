"""TxnOffsetCommit: v0-5.

Behavior:
- Offsets committed inside a transaction (after AddOffsetsToTxn named the group): held apart and
  visible to OffsetFetch only when the transaction commits; dropped when it aborts. Until then
  OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for those partitions.
- Checked in Kafka's order. With ACLs on: WRITE on the transactional id, else
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED, then READ on the group, else GROUP_AUTHORIZATION_FAILED, for
  every partition; partitions of topics without READ -> TOPIC_AUTHORIZATION_FAILED. Unknown topics or
  partitions -> UNKNOWN_TOPIC_OR_PARTITION. These partitions keep their code; the rest get, in turn:
  INVALID_GROUP_ID for an empty group id; NOT_COORDINATOR; unknown transactional id or another
  producer id -> INVALID_PRODUCER_ID_MAPPING; an older epoch -> INVALID_PRODUCER_EPOCH; the group not
  in the open transaction -> INVALID_TXN_STATE; the group's checks as for OffsetCommit
  (GroupOffsets.check_commit), except that a group completing a rebalance takes the commit, a commit
  without member id or generation goes into a group with members, and a stale KIP-848 member epoch is
  ILLEGAL_GENERATION; last, per partition, metadata over 4096 bytes -> OFFSET_METADATA_TOO_LARGE.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.groups_common import metadata_code, not_coordinator, refusal
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.txn_offset_commit_request import TxnOffsetCommitRequest

RESP = api.response_module(28)


def _producer_code(ctx: RequestContext, req: TxnOffsetCommitRequest) -> int:
    """The group id, the coordinator and the producer's transaction, in Kafka's order (0 when all pass)."""
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
    code = 0
    if not authz.authorize(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, req.transactional_id):
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not authz.authorize(ctx, authz.READ, authz.GROUP, req.group_id):
        code = ErrorCode.GROUP_AUTHORIZATION_FAILED
    codes: dict[tuple[str, int], int] = {}
    denied = authz.denied_names(ctx, authz.READ, authz.TOPIC, (t.name for t in req.topics)) if not code else set()
    valid = []
    for t in req.topics:  # the topic checks first, as Kafka's KafkaApis
        topic = ctx.cluster.topics.get(t.name)
        for p in t.partitions:
            if code:
                codes[(t.name, p.partition_index)] = code
            elif t.name in denied:
                codes[(t.name, p.partition_index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= p.partition_index < len(topic.partitions):
                codes[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                codes[(t.name, p.partition_index)] = 0  # (its place in the answer: the request's order)
                valid.append((t.name, p))
    if valid:  # then the coordinator, the producer, the group's checks, and last each partition's metadata
        v3 = ctx.api_version >= 3  # member id, generation and instance id came with v3
        group_code = _producer_code(ctx, req) or refusal(
            ctx.cluster.groups.check_commit, req.group_id, (req.member_id or "") if v3 else "",
            req.generation_id if v3 else -1, req.group_instance_id if v3 else None, ctx.api_version, transactional=True)
        offsets = []
        for name, p in valid:
            codes[(name, p.partition_index)] = group_code or metadata_code(p.committed_metadata)
            if not codes[(name, p.partition_index)]:
                offsets.append((name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                                p.committed_metadata))
        if offsets:
            ctx.cluster.groups.store_pending(req.group_id, req.producer_id, offsets)
    by_topic: dict[str, list[Any]] = {}
    for (name, index), c in codes.items():
        by_topic.setdefault(name, []).append(RESP.TxnOffsetCommitResponsePartition(partition_index=index, error_code=c))
    return RESP.TxnOffsetCommitResponse(topics=[RESP.TxnOffsetCommitResponseTopic(name=n, partitions=parts)
                                                for n, parts in by_topic.items()])
