"""WriteTxnMarkers: v0-2 (sent by transaction coordinators to partition leaders).

Behavior:
- Each marker writes a COMMIT (transaction_result true) or ABORT control batch for the producer to
  the listed partitions this broker leads, closing the producer's transaction there.
- Per partition: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, an epoch older than the
  producer's -> INVALID_PRODUCER_EPOCH, an older coordinator epoch -> TRANSACTION_COORDINATOR_FENCED.
- A marker written to a ``__consumer_offsets`` partition settles the offsets the producer's
  transaction committed (TxnOffsetCommit) for the groups that partition keeps
  (abs(hashCode(group id)) % its partition count), as Kafka's group coordinator does on the marker:
  COMMIT makes them visible to OffsetFetch, ABORT drops them.  (The mock's own EndTxn settles them
  directly, without writing to ``__consumer_offsets``.)
- With ACLs on: ALTER or CLUSTER_ACTION on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every
  partition.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.state.group_offsets import offsets_partitions
from mockbroker.state.internal_topics import CONSUMER_OFFSETS

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.write_txn_markers_request import WriteTxnMarkersRequest

RESP = api.response_module(27)
logger = logging.getLogger("mockbroker.handlers")


def _write(ctx: RequestContext, marker: Any, topic: str, partition: int) -> int:
    try:
        log = ctx.cluster.leader_partition(topic, partition, ctx.broker_id)
        where = f"{topic}-{partition}"
        log.producers.check_marker(marker.producer_id, marker.producer_epoch, marker.coordinator_epoch, where)
        size_before = log.size_bytes
        log.append_marker(marker.producer_id, marker.producer_epoch, marker.transaction_result,
                          marker.coordinator_epoch, ctx.cluster.clock.now_ms())
        ctx.cluster.memory_cap.added(log, size_before)
        if topic == CONSUMER_OFFSETS:
            settled = ctx.cluster.groups.complete_txn_in_partition(
                marker.producer_id, partition, offsets_partitions(ctx.cluster), marker.transaction_result)
            if settled:
                logger.info("broker %s: WriteTxnMarkers %s for producer %s settled the offsets of groups %s",
                          ctx.broker_id, "COMMIT" if marker.transaction_result else "ABORT", marker.producer_id,
                          settled)
    except KafkaError as exc:
        return exc.code
    return 0


@register(27, 0, 2)
def handle(ctx: RequestContext, req: WriteTxnMarkersRequest) -> Any:
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
