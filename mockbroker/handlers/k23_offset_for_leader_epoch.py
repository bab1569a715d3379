"""OffsetForLeaderEpoch: v0-4.

Behavior:
- Per partition: the end offset of the requested leader epoch (the start of the next epoch, or
  the high watermark for the current one), and the largest epoch at or below the requested one.
- Unknown topic/partition -> UNKNOWN_TOPIC_OR_PARTITION; not the leader here ->
  NOT_LEADER_OR_FOLLOWER; current_leader_epoch (v2+, -1 = unchecked) older than the partition's
  -> FENCED_LEADER_EPOCH, newer -> UNKNOWN_LEADER_EPOCH.
"""

from __future__ import annotations

from typing import Any

from mockbroker.errors import KafkaError
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

RESP = api.response_module(23)


def _answer(ctx: Any, topic: str, p: Any) -> Any:
    out = RESP.EpochEndOffset(partition=p.partition, leader_epoch=-1, end_offset=-1)
    try:
        log = ctx.cluster.leader_partition(topic, p.partition, ctx.broker_id)
    except KafkaError as exc:
        out.error_code = exc.code
        return out
    out.error_code = log.epoch_error(p.current_leader_epoch if ctx.api_version >= 2 else -1)
    if out.error_code:
        return out
    out.leader_epoch, out.end_offset = log.end_offset_for_epoch(p.leader_epoch)
    return out


@register(23, 0, 4)
def handle(ctx: Any, req: Any) -> Any:
    return RESP.OffsetForLeaderEpochResponse(topics=[
        RESP.OffsetForLeaderTopicResult(topic=t.topic, partitions=[_answer(ctx, t.topic, p) for p in t.partitions])
        for t in req.topics
    ])
