"""DescribeQuorum: v0-2 (KIP-595; v1 KIP-836 timestamps; v2 KIP-853 error messages, directory ids, nodes).

Behavior (the quorum in mockbroker.state.quorum: a single voter, the controller):
- DESCRIBE on the CLUSTER resource, else a top-level CLUSTER_AUTHORIZATION_FAILED and no topics (Kafka's
  ControllerApis.handleDescribeQuorum authorizes before the raft client reads the request).
- Anything but exactly one topic ``__cluster_metadata`` with exactly one partition 0 (RaftUtil.
  hasValidTopicPartition) -> UNKNOWN_TOPIC_OR_PARTITION on every partition asked, with the error's
  message, and no top-level error (DescribeQuorumRequest.getPartitionLevelErrorResponse).
- Else the partition: leader the controller, its leader epoch, the high watermark, current_voters the
  controller, observers the other live brokers; each replica's log end offset, and (v1+) last fetch and
  caught-up times (now: the leader reports the current time for itself), (v2) directory id zero (a static
  quorum's). v2 adds ``nodes``: the voter's listener, the one this request came in on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.protocol.errors import error_message
from mockbroker.state.quorum import METADATA_PARTITION, METADATA_TOPIC, ReplicaState, is_metadata_partition

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.describe_quorum_request import DescribeQuorumRequest

RESP = api.response_module(55)


def _replicas(states: tuple[ReplicaState, ...]) -> list[Any]:
    return [RESP.ReplicaState(replica_id=s.replica_id, log_end_offset=s.log_end_offset,
                              last_fetch_timestamp=s.last_fetch_ms, last_caught_up_timestamp=s.last_caught_up_ms)
            for s in states]


@register(55, 0, 2)
def handle(ctx: RequestContext, req: DescribeQuorumRequest) -> Any:
    if not authz.authorize_cluster(ctx, authz.DESCRIBE):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return RESP.DescribeQuorumResponse(error_code=code, error_message=error_message(code), topics=[], nodes=[])
    asked = [(t.topic_name, [p.partition_index for p in t.partitions]) for t in req.topics]
    if not is_metadata_partition(asked):
        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return RESP.DescribeQuorumResponse(error_code=0, nodes=[], topics=[
            RESP.TopicData(topic_name=name, partitions=[
                RESP.PartitionData(partition_index=index, error_code=code, error_message=error_message(code),
                                   current_voters=[], observers=[]) for index in indexes])
            for name, indexes in asked])
    cluster = ctx.cluster
    quorum = cluster.quorum.describe(cluster, cluster.clock.now_ms())
    partition = RESP.PartitionData(
        partition_index=METADATA_PARTITION, error_code=0, leader_id=quorum.leader_id,
        leader_epoch=quorum.leader_epoch, high_watermark=quorum.high_watermark,
        current_voters=_replicas(quorum.voters), observers=_replicas(quorum.observers))
    nodes = []
    for voter in quorum.voters:
        info = cluster.brokers.get(voter.replica_id)
        if info is not None:
            host, port = info.endpoint(ctx.connection.listener)
            nodes.append(RESP.Node(node_id=voter.replica_id, listeners=[
                RESP.Listener(name=ctx.connection.listener, host=host, port=port)]))
    return RESP.DescribeQuorumResponse(error_code=0, nodes=nodes, topics=[
        RESP.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])])
