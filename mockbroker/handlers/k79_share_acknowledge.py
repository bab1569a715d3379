"""ShareAcknowledge: v1 (KIP-932 share groups; v0 was Kafka 4.0's early access and is not served).

Behavior: acknowledgements sent without fetching (a consumer's commit_sync / commit_async, or its close).
- The share session must exist (SHARE_SESSION_NOT_FOUND) at the epoch it expects
  (INVALID_SHARE_SESSION_EPOCH); epoch 0 cannot open one (INVALID_SHARE_SESSION_EPOCH); -1 closes it after
  the acknowledgements apply, and the member's other acquired records on the session's partitions go back.
- Each partition's batches (0 GAP, 1 ACCEPT, 2 RELEASE, 3 REJECT) apply or fail alone: INVALID_RECORD_STATE
  for records not acquired by the member, INVALID_REQUEST for malformed batches, UNKNOWN_TOPIC_ID,
  NOT_LEADER_OR_FOLLOWER (with the current leader), TOPIC_AUTHORIZATION_FAILED.
- The group: GROUP_AUTHORIZATION_FAILED, UNSUPPORTED_VERSION when share.version is 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import KafkaError
from mockbroker.handlers import share_common
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.share_acknowledge_request import ShareAcknowledgeRequest

RESP = api.response_module(79)


def _refused(code: int, message: str | None = None) -> Any:
    return RESP.ShareAcknowledgeResponse(error_code=code, error_message=message, responses=[], node_endpoints=[])


@register(79, 1, 1)
def handle(ctx: RequestContext, req: ShareAcknowledgeRequest) -> Any:
    code, message = share_common.refused_group(ctx, req.group_id, req.member_id)
    if code:
        return _refused(code, message)
    assert req.group_id is not None and req.member_id is not None  # (refused_group checked them)
    share = ctx.cluster.share
    try:
        update = share.sessions_on(ctx.broker_id).acknowledge(req.group_id, req.member_id, req.share_session_epoch)
    except KafkaError as exc:
        return _refused(exc.code, exc.message)
    topics = []
    for topic in req.topics:
        parts = []
        for p in topic.partitions:
            plog, error = share_common.led_partition(ctx, topic.topic_id, p.partition_index)
            text = None
            if not error and plog is not None:
                error, text = share_common.acknowledge(ctx, req.group_id, req.member_id, plog,
                                                       p.acknowledgement_batches)
            leader = RESP.LeaderIdAndEpoch(leader_id=plog.leader if plog is not None else -1,
                                           leader_epoch=plog.leader_epoch if plog is not None else -1)
            parts.append(RESP.PartitionData(partition_index=p.partition_index, error_code=error, error_message=text,
                                            current_leader=leader))
        topics.append(RESP.ShareAcknowledgeTopicResponse(topic_id=topic.topic_id, partitions=parts))
    if update.closed:
        share.session_closed(req.group_id, req.member_id, update.session.partition_list())
    return RESP.ShareAcknowledgeResponse(error_code=0, responses=topics, node_endpoints=[])
