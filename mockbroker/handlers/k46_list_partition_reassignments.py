"""ListPartitionReassignments: v0.

Behavior:
- Lists the reassignments in progress (see AlterPartitionReassignments): each partition's replicas
  (target + those being removed), adding_replicas and removing_replicas.
- A null topic list means all; otherwise only the named partitions that are being reassigned (unknown
  topics and partitions are left out, as Kafka does). Top-level error_code 0; timeout_ms ignored.
- With ACLs on: DESCRIBE on the cluster, else top-level CLUSTER_AUTHORIZATION_FAILED (default message)
  and, as Kafka's error response, the partitions named echoed with empty replica lists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.list_partition_reassignments_request import ListPartitionReassignmentsRequest

RESP = api.response_module(46)


@register(46, 0, 0)
def handle(ctx: RequestContext, req: ListPartitionReassignmentsRequest) -> Any:
    if not authz.authorize_cluster(ctx, authz.DESCRIBE):
        return RESP.ListPartitionReassignmentsResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message="Cluster authorization failed.",
            topics=[RESP.OngoingTopicReassignment(name=t.name, partitions=[
                RESP.OngoingPartitionReassignment(partition_index=i, replicas=[], adding_replicas=[],
                                                  removing_replicas=[])
                for i in t.partition_indexes]) for t in req.topics or []])
    wanted = None if req.topics is None else [(t.name, list(t.partition_indexes)) for t in req.topics]
    return RESP.ListPartitionReassignmentsResponse(error_code=0, error_message=None, topics=[
        RESP.OngoingTopicReassignment(name=name, partitions=[
            RESP.OngoingPartitionReassignment(partition_index=i, replicas=replicas, adding_replicas=adding,
                                              removing_replicas=removing)
            for i, replicas, adding, removing in parts
        ])
        for name, parts in ctx.cluster.reassignments.listing(wanted)
    ])
