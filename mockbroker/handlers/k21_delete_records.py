"""DeleteRecords: v0-2.

Behavior:
- Moves each partition's log start (low watermark) up to the given offset; -1 means the high
  watermark. Batches wholly below the new start are dropped; ListOffsets EARLIEST answers the new start
  and a Fetch below it gets OFFSET_OUT_OF_RANGE (a consumer resets to it).
- An offset at or below today's log start changes nothing and answers the current low watermark.
- Errors per partition, low_watermark -1: UNKNOWN_TOPIC_OR_PARTITION; NOT_LEADER_OR_FOLLOWER on a
  broker that does not lead the partition; OFFSET_OUT_OF_RANGE for an offset past the high watermark or
  negative (other than -1); POLICY_VIOLATION when the topic's cleanup.policy lacks "delete".
- timeout_ms is ignored: the mock's replicas share one log, so the deletion is complete at once.
- With ACLs on: DELETE on the topic, else TOPIC_AUTHORIZATION_FAILED (low_watermark -1) for each of its
  partitions, before the existence check (an unknown topic is not revealed), as Kafka.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.state.log_admin import delete_records

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.delete_records_request import DeleteRecordsPartition, DeleteRecordsRequest

RESP = api.response_module(21)
log = logging.getLogger("mockbroker.handlers")


def _partition(ctx: RequestContext, topic: str, p: DeleteRecordsPartition) -> Any:
    try:
        low = delete_records(ctx.cluster, topic, p.partition_index, p.offset, ctx.broker_id)
    except KafkaError as exc:
        log.info("broker %s: DeleteRecords %s-%s to %s: %s", ctx.broker_id, topic, p.partition_index, p.offset, exc)
        return RESP.DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=-1,
                                                 error_code=exc.code)
    return RESP.DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=low, error_code=0)


def _denied(p: DeleteRecordsPartition) -> Any:
    return RESP.DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=-1,
                                             error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)


@register(21, 0, 2)
def handle(ctx: RequestContext, req: DeleteRecordsRequest) -> Any:
    denied = authz.denied_names(ctx, authz.DELETE, authz.TOPIC, (t.name for t in req.topics))
    return RESP.DeleteRecordsResponse(topics=[
        RESP.DeleteRecordsTopicResult(name=t.name, partitions=[
            _denied(p) if t.name in denied else _partition(ctx, t.name, p) for p in t.partitions])
        for t in req.topics
    ])
