"""AlterReplicaLogDirs: v0-2.

Behavior:
- Moves the asked broker's replicas of the named partitions into the given log directory; the move
  is instant (DescribeLogDirs shows the replica in its new directory at once, no future replica).
- Errors per partition, as Kafka: LOG_DIR_NOT_FOUND for a path that is not one of the broker's
  ``log.dirs`` (paths are normalised; relative ones are never found); KAFKA_STORAGE_ERROR for an offline
  directory; UNKNOWN_TOPIC_OR_PARTITION; REPLICA_NOT_AVAILABLE when the broker holds no replica of the
  partition. Each failure is logged.
- With ACLs on: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every partition named (one
  topic result per directory and topic, as Kafka's error response) and nothing moves.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.alter_replica_log_dirs_request import AlterReplicaLogDirsRequest

RESP = api.response_module(34)
log = logging.getLogger("mockbroker.handlers")


def _move(ctx: RequestContext, path: str, topic: str, index: int) -> int:
    try:
        ctx.cluster.log_dirs.alter(ctx.broker_id, path, topic, index)
    except KafkaError as exc:
        log.info("broker %s: AlterReplicaLogDirs %s-%s to %s: %s", ctx.broker_id, topic, index, path, exc)
        return exc.code
    return 0


@register(34, 0, 2)
def handle(ctx: RequestContext, req: AlterReplicaLogDirsRequest) -> Any:
    if not authz.authorize_cluster(ctx, authz.ALTER):
        return RESP.AlterReplicaLogDirsResponse(results=[
            RESP.AlterReplicaLogDirTopicResult(topic_name=t.name, partitions=[
                RESP.AlterReplicaLogDirPartitionResult(partition_index=i,
                                                       error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
                for i in t.partitions])
            for d in req.dirs for t in d.topics
        ])
    by_topic: dict[str, list[Any]] = {}
    for d in req.dirs:
        for t in d.topics:
            results = by_topic.setdefault(t.name, [])
            for index in t.partitions:
                results.append(RESP.AlterReplicaLogDirPartitionResult(
                    partition_index=index, error_code=_move(ctx, d.path, t.name, index)))
    return RESP.AlterReplicaLogDirsResponse(results=[
        RESP.AlterReplicaLogDirTopicResult(topic_name=name, partitions=parts) for name, parts in by_topic.items()
    ])
