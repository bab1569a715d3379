"""DescribeProducers: v0.

Behavior: per requested partition, the producers its leader holds state for: producer id and epoch,
last sequence, last timestamp (of their last batch), coordinator epoch of their last marker, and
the first offset of their open transaction (-1 when none). Unknown topics or partitions ->
UNKNOWN_TOPIC_OR_PARTITION; not the leader here -> NOT_LEADER_OR_FOLLOWER. With ACLs on: partitions of
topics without READ -> TOPIC_AUTHORIZATION_FAILED (checked first, as Kafka).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.describe_producers_request import DescribeProducersRequest

RESP = api.response_module(61)


def _partition(ctx: RequestContext, topic: str, index: int) -> Any:
    out = RESP.PartitionResponse(partition_index=index, error_code=0, error_message=None, active_producers=[])
    if not authz.authorize(ctx, authz.READ, authz.TOPIC, topic):
        out.error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return out
    try:
        log = ctx.cluster.leader_partition(topic, index, ctx.broker_id)
    except KafkaError as exc:
        out.error_code, out.error_message = exc.code, exc.message
        return out
    out.active_producers = [
        RESP.ProducerState(producer_id=e.producer_id, producer_epoch=e.epoch, last_sequence=e.last_seq,
                           last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                           current_txn_start_offset=e.txn_first_offset)
        for e in log.producers.entries.values()
    ]
    return out


@register(61, 0, 0)
def handle(ctx: RequestContext, req: DescribeProducersRequest) -> Any:
    return RESP.DescribeProducersResponse(topics=[
        RESP.TopicResponse(name=t.name, partitions=[_partition(ctx, t.name, i) for i in t.partition_indexes])
        for t in req.topics])
