"""ElectLeaders: v0-2.

Behavior:
- v0 runs PREFERRED elections; v1+ election_type 0 PREFERRED, 1 UNCLEAN (any other: INVALID_REQUEST
  at the top level, no results).
- PREFERRED makes the first replica leader when it is live and in sync: ELECTION_NOT_NEEDED when it
  leads already, PREFERRED_LEADER_NOT_AVAILABLE when it is down (or, for a leaderless partition, not
  the replica it last had in sync). UNCLEAN elects the first live replica of a partition without a
  live leader, whatever unclean.leader.election.enable says (an explicit election, as Kafka):
  ELECTION_NOT_NEEDED when the leader is live, ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is live.
  Partitions are left leaderless only with ``mock.leader.failover.to.any.broker`` false (see
  state/elections.py). Unknown topics or partitions: UNKNOWN_TOPIC_OR_PARTITION.
- A null topic list means every partition; partitions that need no election are then left out.
- A new leader gets a bumped leader epoch, so producers and consumers follow it through Metadata.
- Any broker answers (Kafka forwards to the controller); timeout_ms is ignored (elections are instant).
- With ACLs on: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED at the top level (v1+) and for
  every partition named (all versions; none for a null list), as Kafka's error response; nothing is
  elected.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.state.elections import PREFERRED, UNCLEAN, elect_leaders

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.elect_leaders_request import ElectLeadersRequest

RESP = api.response_module(43)
log = logging.getLogger("mockbroker.handlers")
DENIED = "Cluster authorization failed."


@register(43, 0, 2)
def handle(ctx: RequestContext, req: ElectLeadersRequest) -> Any:
    if not authz.authorize_cluster(ctx, authz.ALTER):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return RESP.ElectLeadersResponse(error_code=code, replica_election_results=[
            RESP.ReplicaElectionResult(topic=t.topic, partition_result=[
                RESP.PartitionResult(partition_id=i, error_code=code, error_message=DENIED) for i in t.partitions])
            for t in req.topic_partitions or []
        ])
    election_type = req.election_type if ctx.api_version >= 1 else PREFERRED
    if election_type not in (PREFERRED, UNCLEAN):
        log.info("broker %s: ElectLeaders with unknown election type %s", ctx.broker_id, election_type)
        return RESP.ElectLeadersResponse(error_code=ErrorCode.INVALID_REQUEST, replica_election_results=[])
    wanted = None if req.topic_partitions is None else [(t.topic, list(t.partitions)) for t in req.topic_partitions]
    results = elect_leaders(ctx.cluster, election_type, wanted)
    return RESP.ElectLeadersResponse(error_code=0, replica_election_results=[
        RESP.ReplicaElectionResult(topic=name, partition_result=[
            RESP.PartitionResult(partition_id=r.partition, error_code=r.error_code, error_message=r.message)
            for r in parts
        ])
        for name, parts in results
    ])
