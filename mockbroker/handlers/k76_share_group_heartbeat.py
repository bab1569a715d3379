"""ShareGroupHeartbeat: v1 (KIP-932 share groups; v0 was Kafka 4.0's early access and is not served).

Behavior (the group model: mockbroker.state.share_groups, joined to the cluster by share_coordinator):
- member_epoch 0 joins with the client's own member id (empty -> INVALID_REQUEST) and its subscribed
  topic names; -1 leaves (its share session closes and the records it acquired go back); other epochs
  must be the member's, else FENCED_MEMBER_EPOCH; unknown members -> UNKNOWN_MEMBER_ID; a group id held
  by a classic or consumer group -> GROUP_ID_NOT_FOUND; more than `group.share.max.size` members ->
  GROUP_MAX_SIZE_REACHED; NOT_COORDINATOR on the wrong broker.
- share.version finalized at 0 (UpdateFeatures) -> UNSUPPORTED_VERSION, as Kafka with share groups off.
- With ACLs on: READ on the group, else GROUP_AUTHORIZATION_FAILED (checked first, as Kafka).
- The answer carries the member's epoch, the group's `share.heartbeat.interval.ms` and, when it
  changed, the assignment from the simple assignor (members may share a partition). Members are
  expired after `share.session.timeout.ms` on the cluster clock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz, share_common
from mockbroker.handlers.groups_common import client_host, not_coordinator
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.share_group_heartbeat_request import ShareGroupHeartbeatRequest

RESP = api.response_module(76)


def _refused(code: int, message: str | None = None) -> Any:
    return RESP.ShareGroupHeartbeatResponse(error_code=code, error_message=message, member_epoch=-1,
                                            heartbeat_interval_ms=0)


@register(76, 1, 1)
def handle(ctx: RequestContext, req: ShareGroupHeartbeatRequest) -> Any:
    share = ctx.cluster.share
    if not authz.authorize(ctx, authz.READ, authz.GROUP, req.group_id):
        return _refused(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not share.enabled():
        return _refused(ErrorCode.UNSUPPORTED_VERSION, share_common.SHARE_GROUPS_OFF)
    code = not_coordinator(ctx, req.group_id)
    if code:
        return _refused(code)
    try:
        result = share.heartbeat(req.group_id, req.member_id, req.member_epoch, req.rack_id,
                                 req.subscribed_topic_names, ctx.client_id or "", client_host(ctx.connection.peer))
    except KafkaError as exc:
        return _refused(exc.code, exc.message)
    assignment = None
    if result.assignment is not None:
        assignment = RESP.Assignment(topic_partitions=[
            RESP.TopicPartitions(topic_id=topic_id, partitions=sorted(parts))
            for topic_id, parts in sorted(result.assignment.items())])
    return RESP.ShareGroupHeartbeatResponse(error_code=0, member_id=result.member_id, member_epoch=result.member_epoch,
                                            heartbeat_interval_ms=result.heartbeat_interval_ms, assignment=assignment)
