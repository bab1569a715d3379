"""AlterPartitionReassignments: v0-1.

Behavior:
- Each partition's replicas move to the given list (null replicas cancel a reassignment in
  progress: NO_REASSIGNMENT_IN_PROGRESS when there is none). See mockbroker.state.reassignments: while
  in progress the partition lists target + removed replicas and ListPartitionReassignments shows the
  adding/removing ones; it completes at once, or after ``mock.reassignment.delay.ms`` when replicas
  are added, from the cluster tick. A leader not in the new set hands over to the first live target
  replica; replica and leader changes bump the leader epoch so clients follow through Metadata.
- Errors per partition with Kafka's messages: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT
  (empty list, broker twice, unregistered broker), INVALID_REPLICATION_FACTOR when v1's
  allow_replication_factor_change is false and the replica count changes.
- v1 echoes allow_replication_factor_change; top-level error_code 0. Any broker answers (Kafka
  forwards to the controller); timeout_ms is ignored.
- With ACLs on: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED at the top level and for every
  partition named (Kafka's error response), with the error's default message; nothing moves.
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
    from mockbroker.protocol.generated.alter_partition_reassignments_request import (
        AlterPartitionReassignmentsRequest,
        ReassignablePartition,
    )

RESP = api.response_module(45)
log = logging.getLogger("mockbroker.handlers")


def _alter(ctx: RequestContext, topic: str, p: ReassignablePartition, allow_rf_change: bool) -> Any:
    replicas = None if p.replicas is None else list(p.replicas)
    try:
        ctx.cluster.reassignments.alter(topic, p.partition_index, replicas, allow_rf_change)
    except KafkaError as exc:
        log.info("broker %s: AlterPartitionReassignments %s-%s to %s: %s",
                 ctx.broker_id, topic, p.partition_index, replicas, exc)
        return RESP.ReassignablePartitionResponse(partition_index=p.partition_index, error_code=exc.code,
                                                  error_message=exc.message)
    return RESP.ReassignablePartitionResponse(partition_index=p.partition_index, error_code=0, error_message=None)


def _denied(req: AlterPartitionReassignmentsRequest, allow: bool) -> Any:
    code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    return RESP.AlterPartitionReassignmentsResponse(
        allow_replication_factor_change=allow, error_code=code, error_message=message,
        responses=[
            RESP.ReassignableTopicResponse(name=t.name, partitions=[
                RESP.ReassignablePartitionResponse(partition_index=p.partition_index, error_code=code,
                                                   error_message=message)
                for p in t.partitions])
            for t in req.topics
        ],
    )


@register(45, 0, 1)
def handle(ctx: RequestContext, req: AlterPartitionReassignmentsRequest) -> Any:
    allow = req.allow_replication_factor_change if ctx.api_version >= 1 else True
    if not authz.authorize_cluster(ctx, authz.ALTER):
        return _denied(req, allow)
    return RESP.AlterPartitionReassignmentsResponse(
        allow_replication_factor_change=allow, error_code=0, error_message=None,
        responses=[
            RESP.ReassignableTopicResponse(name=t.name,
                                           partitions=[_alter(ctx, t.name, p, allow) for p in t.partitions])
            for t in req.topics
        ],
    )
