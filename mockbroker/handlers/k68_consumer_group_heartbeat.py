"""ConsumerGroupHeartbeat: v0-1 (KIP-848 consumer groups).

Behavior (see mockbroker.state.consumer_groups for the group model):
- member_epoch 0 joins (v0: an empty member id gets one from the coordinator; v1: the client
  generates it, empty -> INVALID_REQUEST); the first request must carry the rebalance timeout and a
  subscription (names, or a regex from v1), and no owned partitions, else INVALID_REQUEST.
- -1 leaves; -2 leaves as a static member (the assignment is kept for its instance id).
- Other epochs must be the member's (or its previous one with no unexpected partitions), else
  FENCED_MEMBER_EPOCH; unknown members -> UNKNOWN_MEMBER_ID; a static instance id still held ->
  UNRELEASED_INSTANCE_ID; server_assignor other than uniform/range -> UNSUPPORTED_ASSIGNOR; a regex
  Python cannot compile -> INVALID_REGULAR_EXPRESSION; a classic group with members ->
  GROUP_ID_NOT_FOUND; NOT_COORDINATOR on the wrong broker.
- With ACLs on: READ on the group, else GROUP_AUTHORIZATION_FAILED (checked first, as Kafka).
- The answer carries the member's epoch, the group's `consumer.heartbeat.interval.ms` (GROUP config,
  else the broker's `group.consumer.heartbeat.interval.ms`) and, when it changed, the assignment
  (topic ids and partitions). Members are expired after the group's `consumer.session.timeout.ms`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.groups_common import client_host, not_coordinator
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.consumer_group_heartbeat_request import ConsumerGroupHeartbeatRequest

RESP = api.response_module(68)


def _owned(ctx: RequestContext, topic_partitions: list[Any] | None) -> dict[str, set[int]] | None:
    if topic_partitions is None:
        return None
    owned: dict[str, set[int]] = {}
    for tp in topic_partitions:
        topic = ctx.cluster.topics_by_id.get(tp.topic_id)
        if topic is not None:
            owned.setdefault(topic.name, set()).update(tp.partitions)
    return owned


def _assignment(ctx: RequestContext, parts: dict[str, set[int]]) -> Any:
    topics = ctx.cluster.topics
    return RESP.Assignment(topic_partitions=[
        RESP.TopicPartitions(topic_id=topics[name].topic_id, partitions=sorted(p))
        for name, p in sorted(parts.items()) if name in topics])


@register(68, 0, 1)
def handle(ctx: RequestContext, req: ConsumerGroupHeartbeatRequest) -> Any:
    interval = ctx.cluster.group_config_value(req.group_id, "consumer.heartbeat.interval.ms")
    code = not_coordinator(ctx, req.group_id)
    if not authz.authorize(ctx, authz.READ, authz.GROUP, req.group_id):
        code = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if code:
        return RESP.ConsumerGroupHeartbeatResponse(error_code=code, member_epoch=-1, heartbeat_interval_ms=0)
    try:
        result = ctx.cluster.groups.consumer_heartbeat(
            req.group_id, member_id=req.member_id, epoch=req.member_epoch, instance_id=req.instance_id,
            rack_id=req.rack_id, rebalance_timeout_ms=req.rebalance_timeout_ms,
            subscribed=req.subscribed_topic_names,
            regex=req.subscribed_topic_regex if ctx.api_version >= 1 else None,
            assignor=req.server_assignor, owned=_owned(ctx, req.topic_partitions), client_id=ctx.client_id or "",
            client_host=client_host(ctx.connection.peer), generate_id=ctx.api_version == 0)
    except KafkaError as exc:
        return RESP.ConsumerGroupHeartbeatResponse(error_code=exc.code, error_message=exc.message, member_epoch=-1,
                                                   heartbeat_interval_ms=0)
    return RESP.ConsumerGroupHeartbeatResponse(
        error_code=0, member_id=result.member_id, member_epoch=result.epoch, heartbeat_interval_ms=interval,
        assignment=_assignment(ctx, result.assignment) if result.assignment is not None else None)
