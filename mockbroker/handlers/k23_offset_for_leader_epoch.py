"""OffsetForLeaderEpoch: v0-4.

Behavior:
- Per partition, the end offset of the requested leader epoch (the start offset of the next epoch,
  or the log end for the current one) and the largest epoch at or below it (v1+ carries it);
  an epoch newer than the partition's -> leader_epoch -1, end_offset -1.
- Checks in Kafka's order: unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; this broker
  not a replica -> NOT_LEADER_OR_FOLLOWER; current_leader_epoch (v2+, -1 = unchecked) older than
  the partition's -> FENCED_LEADER_EPOCH, newer -> UNKNOWN_LEADER_EPOCH; a replica that is not the
  leader -> NOT_LEADER_OR_FOLLOWER. Consumers (replica_id < 0, v3+) and followers are answered alike.
- With ACLs on: CLUSTER_ACTION on the cluster allows every topic; otherwise partitions of topics
  without DESCRIBE -> TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.offset_for_leader_epoch_request import (
        OffsetForLeaderEpochRequest,
        OffsetForLeaderPartition,
    )

RESP = api.response_module(23)


def _answer(ctx: RequestContext, topic: str, p: OffsetForLeaderPartition) -> Any:
    out = RESP.EpochEndOffset(partition=p.partition, error_code=0, leader_epoch=-1, end_offset=-1)
    try:
        log = ctx.cluster.partition(topic, p.partition)
    except KafkaError as exc:
        out.error_code = exc.code
        return out
    if ctx.broker_id not in log.replicas:
        out.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
        return out
    out.error_code = log.epoch_error(p.current_leader_epoch if ctx.api_version >= 2 else -1)
    if not out.error_code and log.leader != ctx.broker_id:
        out.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    if not out.error_code:
        out.leader_epoch, out.end_offset = log.end_offset_for_epoch(p.leader_epoch)
    return out


@register(23, 0, 4)
def handle(ctx: RequestContext, req: OffsetForLeaderEpochRequest) -> Any:
    denied: set[str] = set()
    if authz.enabled(ctx) and not authz.authorize_cluster(ctx, authz.CLUSTER_ACTION, log_denied=False):
        denied = authz.denied_names(ctx, authz.DESCRIBE, authz.TOPIC, (t.topic for t in req.topics))
    return RESP.OffsetForLeaderEpochResponse(topics=[
        RESP.OffsetForLeaderTopicResult(topic=t.topic, partitions=[
            RESP.EpochEndOffset(partition=p.partition, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                leader_epoch=-1, end_offset=-1) if t.topic in denied
            else _answer(ctx, t.topic, p) for p in t.partitions])
        for t in req.topics
    ])
