"""ListOffsets: v0-11.

Behavior:
- Timestamp -2 earliest (log start), -1 latest (high watermark, or the last stable offset for
  read_committed, v2+; a timestamp search then only finds offsets below it), -3 the record with the
  largest timestamp (v7+), -4 earliest local (v8+,
  the log start here), -5 latest tiered (v9+: -1, nothing is tiered); any other timestamp: the first
  record at or after it, or offset -1 when there is none.
- Only the partition leader answers: NOT_LEADER_OR_FOLLOWER elsewhere (consumers too, even those that
  fetch from a follower, as Kafka); a follower answers only replica id -2 (Kafka's debugging
  consumer); unknown topics and partitions UNKNOWN_TOPIC_OR_PARTITION; current_leader_epoch (v4+)
  checked like Fetch.
- v0 answers old_style_offsets, at most max_num_offsets of them (latest first).
- With ACLs on: partitions of topics without DESCRIBE -> TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mockbroker.batches import decode_stored
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.state.log import PartitionLog

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest

RESP = api.response_module(2)
logger = logging.getLogger("mockbroker.list_offsets")
EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -2, -1, -3, -4, -5
DEBUGGING_REPLICA_ID = -2  # Kafka's ListOffsetsRequest.DEBUGGING_REPLICA_ID: any replica answers it


def _first_at_or_after(log: PartitionLog, timestamp: int) -> tuple[int, int]:
    # every batch that may hold a match, in order: after compaction the first such batch can hold
    # no record that still matches (or none at all), and the answer is in a later one
    for batch in log.batches:
        if batch.max_timestamp < timestamp or batch.last_offset < log.log_start_offset or batch.is_control:
            continue
        header, records = decode_stored(batch)
        for r in records:
            ts = header.max_timestamp if header.timestamp_type else header.base_timestamp + r.timestamp_delta
            offset = batch.base_offset + r.offset_delta
            if ts >= timestamp and offset >= log.log_start_offset:
                return ts, offset
    return -1, -1


def _max_timestamp(log: PartitionLog) -> tuple[int, int]:
    batch = log.max_timestamp_batch()
    if batch is None:
        return -1, -1
    header, records = decode_stored(batch)
    best_ts, best_offset = -1, -1
    for r in records:
        ts = header.max_timestamp if header.timestamp_type else header.base_timestamp + r.timestamp_delta
        if ts > best_ts:
            best_ts, best_offset = ts, batch.base_offset + r.offset_delta
    return best_ts, best_offset


def _answer(ctx: RequestContext, req: ListOffsetsRequest, topic: str, p: ListOffsetsPartition) -> Any:
    out = RESP.ListOffsetsPartitionResponse(partition_index=p.partition_index, timestamp=-1, offset=-1)
    try:
        log = ctx.cluster.partition(topic, p.partition_index)
        if req.replica_id != DEBUGGING_REPLICA_ID or ctx.broker_id not in log.replicas:
            log = ctx.cluster.leader_partition(topic, p.partition_index, ctx.broker_id)
    except KafkaError as exc:
        out.error_code = exc.code
        return out
    out.error_code = log.epoch_error(p.current_leader_epoch if ctx.api_version >= 4 else -1)
    if out.error_code:
        return out
    ts = p.timestamp
    committed_only = ctx.api_version >= 2 and req.isolation_level == 1
    if ts == LATEST:
        out.offset = log.last_stable_offset if committed_only else log.high_watermark
    elif ts in (EARLIEST, EARLIEST_LOCAL):
        out.offset = log.log_start_offset
    elif ts == LATEST_TIERED:
        out.offset = -1
    elif ts < 0 and ts != MAX_TIMESTAMP:
        out.error_code = ErrorCode.INVALID_REQUEST
    else:
        try:
            out.timestamp, out.offset = _max_timestamp(log) if ts == MAX_TIMESTAMP else _first_at_or_after(log, ts)
        except KafkaError as exc:  # a batch stored unchecked (mock.produce.validation=envelope) that does not decode
            logger.warning("broker %s: list offsets of %s-%s at %s: %s", ctx.broker_id, topic, p.partition_index,
                           ts, exc.message)
            out.error_code = exc.code
            return out
    if committed_only and ts >= 0 and out.offset >= log.last_stable_offset:
        out.timestamp, out.offset = -1, -1  # not yet readable by a read_committed consumer
    if ctx.api_version == 0:
        offsets = [out.offset] if out.offset >= 0 else []
        if ts == LATEST and log.log_start_offset != log.high_watermark:
            offsets.append(log.log_start_offset)
        out.old_style_offsets = offsets[: max(p.max_num_offsets, 0)]
    out.leader_epoch = log.leader_epoch
    return out


@register(2, 0, 11)
def handle(ctx: RequestContext, req: ListOffsetsRequest) -> Any:
    topics = []
    denied = authz.denied_names(ctx, authz.DESCRIBE, authz.TOPIC, (t.name for t in req.topics))
    for t in req.topics:
        if t.name in denied:
            parts = [RESP.ListOffsetsPartitionResponse(partition_index=p.partition_index, timestamp=-1, offset=-1,
                                                       error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                     for p in t.partitions]
        else:
            parts = [_answer(ctx, req, t.name, p) for p in t.partitions]
        topics.append(RESP.ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return RESP.ListOffsetsResponse(topics=topics)
