"""Produce: v0-13.

Behavior:
- acks 0 (no response at all), 1 and -1 (all replicas are in sync, so both answer at once);
  any other acks value -> INVALID_REQUIRED_ACKS for every partition.
- Topics by name (v0-12) or id (v13, UNKNOWN_TOPIC_ID); no auto-creation (as Kafka).
- Only the partition leader accepts data: NOT_LEADER_OR_FOLLOWER elsewhere, with the current
  leader and its endpoint (v10+) so the client can move without a metadata round trip.
- Every batch is validated (see mockbroker.batches): CRC -> CORRUPT_MESSAGE, size ->
  MESSAGE_TOO_LARGE, magic per version / one batch per partition (v3+) -> INVALID_RECORD,
  zstd before v7 -> UNSUPPORTED_COMPRESSION_TYPE, timestamps -> INVALID_TIMESTAMP with the records
  named in record_errors (v8+).
- Offsets are assigned here; LogAppendTime topics answer log_append_time_ms.

Version notes: v0-2 carry magic 0/1 message sets (converted to magic 2 for storage); v3 adds the
transactional id; v8 record errors; v9 flexible; v10 current-leader tags; v13 topic ids.
"""

from __future__ import annotations

import logging
from typing import Any

from mockbroker.batches import BatchRejected, Policy, stored_batch, validate_produce
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers.registry import NO_RESPONSE, register
from mockbroker.protocol import api
from mockbroker.protocol.errors import error_name
from mockbroker.state.log import PartitionLog

RESP = api.response_module(0)
logger = logging.getLogger("mockbroker.produce")


def _policy(ctx: Any, topic: Any) -> Policy:
    cfg = topic.config
    return Policy(
        max_message_bytes=cfg["max.message.bytes"],
        compression=cfg["compression.type"],
        log_append_time=cfg["message.timestamp.type"] == "LogAppendTime",
        before_max_ms=cfg["message.timestamp.before.max.ms"],
        after_max_ms=cfg["message.timestamp.after.max.ms"],
        now_ms=ctx.cluster.clock.now_ms(),
        compacted="compact" in cfg["cleanup.policy"],
    )


def _append(ctx: Any, topic: Any, log: PartitionLog, data: Any) -> tuple[int, int]:
    policy = _policy(ctx, topic)
    batches = validate_produce(data, ctx.api_version, policy)
    first = log.next_offset
    for batch in batches:
        log.append(stored_batch(batch, log.next_offset, log.leader_epoch))
    return first, (policy.now_ms if policy.log_append_time else -1)


def _partition(ctx: Any, topic: Any, part: Any, acks: int) -> Any:
    out = RESP.PartitionProduceResponse(index=part.index, base_offset=-1, log_append_time_ms=-1)
    try:
        if acks not in (0, 1, -1):
            raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS, f"acks={acks} is not 0, 1 or -1")
        log = ctx.cluster.leader_partition(topic.name, part.index, ctx.broker_id)
        out.base_offset, out.log_append_time_ms = _append(ctx, topic, log, part.records)
        out.log_start_offset = log.log_start_offset
    except BatchRejected as exc:
        logger.warning("broker %s: produce to %s-%s from %s rejected with %s: %s", ctx.broker_id, topic.name,
                    part.index, ctx.client_id, error_name(exc.code), exc.message)
        out.error_code, out.error_message = exc.code, exc.message
        out.record_errors = [RESP.BatchIndexAndErrorMessage(e.batch_index, e.message) for e in exc.record_errors]
    except KafkaError as exc:
        out.error_code, out.error_message = exc.code, exc.message
        if exc.code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            log = ctx.cluster.partition(topic.name, part.index)
            out.current_leader = RESP.LeaderIdAndEpoch(leader_id=log.leader, leader_epoch=log.leader_epoch)
    return out


def _unknown_topic_response(td: Any, code: int) -> Any:
    return RESP.TopicProduceResponse(
        name=td.name,
        topic_id=td.topic_id,
        partition_responses=[
            RESP.PartitionProduceResponse(index=p.index, error_code=code, base_offset=-1, log_append_time_ms=-1)
            for p in td.partition_data
        ],
    )


@register(0, 0, 13)
def handle(ctx: Any, req: Any) -> Any:
    responses = []
    leaders_named: set[int] = set()
    for td in req.topic_data:
        try:
            topic = ctx.cluster.topic_by_id(td.topic_id) if ctx.api_version >= 13 else ctx.cluster.topic(td.name)
        except KafkaError as exc:
            responses.append(_unknown_topic_response(td, exc.code))
            continue
        parts = [_partition(ctx, topic, p, req.acks) for p in td.partition_data]
        leaders_named.update(p.current_leader.leader_id for p in parts if p.error_code == 6)
        responses.append(RESP.TopicProduceResponse(name=td.name, topic_id=td.topic_id, partition_responses=parts))
    if req.acks == 0:
        return NO_RESPONSE
    endpoints = []
    if ctx.api_version >= 10:
        for node_id in sorted(leaders_named):
            b = ctx.cluster.brokers[node_id]
            endpoints.append(RESP.NodeEndpoint(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack))
    return RESP.ProduceResponse(responses=responses, node_endpoints=endpoints)
