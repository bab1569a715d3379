"""WriteTxnMarkers: v0-2 (sent by transaction coordinators to partition leaders).

Behavior:
- Each marker writes a COMMIT (transaction_result true) or ABORT control batch for the producer to
  the listed partitions this broker leads, closing the producer's transaction there.
- Per partition: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, an epoch older than the
  producer's -> INVALID_PRODUCER_EPOCH, an older coordinator epoch -> TRANSACTION_COORDINATOR_FENCED.
- Offsets a transaction committed to groups are settled by this mock's own coordinator when the
  transaction ends (there is no __consumer_offsets log to mark).
- With ACLs on: ALTER or CLUSTER_ACTION on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every
  partition.
"""

from __future__ import annotations

from typing import Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

RESP = api.response_module(27)


def _write(ctx: Any, marker: Any, topic: str, partition: int) -> int:
    try:
        log = ctx.cluster.leader_partition(topic, partition, ctx.broker_id)
        where = f"{topic}-{partition}"
        log.producers.check_marker(marker.producer_id, marker.producer_epoch, marker.coordinator_epoch, where)
        size_before = log.size_bytes
        log.append_marker(marker.producer_id, marker.producer_epoch, marker.transaction_result,
                          marker.coordinator_epoch, ctx.cluster.clock.now_ms())
        ctx.cluster.memory_cap.added(log, size_before)
    except KafkaError as exc:
        return exc.code
    return 0


@register(27, 0, 2)
def handle(ctx: Any, req: Any) -> Any:
    if authz.enabled(ctx) and not (authz.authorize_cluster(ctx, authz.ALTER, log_denied=False)
                                   or authz.authorize_cluster(ctx, authz.CLUSTER_ACTION)):
        return RESP.WriteTxnMarkersResponse(markers=[RESP.WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
            RESP.WritableTxnMarkerTopicResult(name=t.name, partitions=[
                RESP.WritableTxnMarkerPartitionResult(partition_index=p,
                                                      error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
                for p in t.partition_indexes]) for t in m.topics]) for m in req.markers])
    results = []
    for m in req.markers:
        topics = [
            RESP.WritableTxnMarkerTopicResult(name=t.name, partitions=[
                RESP.WritableTxnMarkerPartitionResult(partition_index=p, error_code=_write(ctx, m, t.name, p))
                for p in t.partition_indexes])
            for t in m.topics
        ]
        results.append(RESP.WritableTxnMarkerResult(producer_id=m.producer_id, topics=topics))
    return RESP.WriteTxnMarkersResponse(markers=results)
