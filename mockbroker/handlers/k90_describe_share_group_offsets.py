"""DescribeShareGroupOffsets: v0-1 (KIP-932; v1 adds Lag, KIP-1226).

Behavior (as Kafka's KafkaApis and GroupCoordinatorService.describeShareGroupOffsets):
- Per group: the share-partition start offset (SPSO) of each partition asked for. A partition the group
  never started (no member fetched it yet, or its offset was deleted), a partition of an unknown group,
  and a partition of a topic that does not exist answer StartOffset -1 with no error (an unknown topic
  also with the zero topic id). Started partitions carry their log's leader epoch, the others 0.
- v1 Lag: high watermark - SPSO - records at or past SPSO already ACKNOWLEDGED or ARCHIVED (Kafka's
  delivery complete count); -1 where the start offset is -1.
- Topics null: every share-partition the group started, plus the partitions its members are assigned
  and have not started (-1); an empty topic list answers no topics. Only this form asks the group
  coordinator (NOT_COORDINATOR on the wrong broker); with topics named Kafka reads the share coordinator's
  state from any broker, and so does the mock.
- share.version finalized at 0 -> UNSUPPORTED_VERSION per group.
- With ACLs on: DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED for it; topics without DESCRIBE ->
  TOPIC_AUTHORIZATION_FAILED per partition (start offset -1), or left out when topics are null.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz
from mockbroker.handlers.groups_common import not_coordinator
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.protocol.errors import error_message

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.describe_share_group_offsets_request import (
        DescribeShareGroupOffsetsRequest,
        DescribeShareGroupOffsetsRequestGroup,
    )

RESP = api.response_module(90)
UNINITIALIZED = -1  # Kafka's uninitialized start offset and lag


def _partition(ctx: RequestContext, topic: str, index: int, summary: dict[tuple[str, int], tuple[int, int]]) -> Any:
    started = summary.get((topic, index))
    t = ctx.cluster.topics.get(topic)
    if started is None or t is None or not 0 <= index < len(t.partitions):
        return RESP.DescribeShareGroupOffsetsResponsePartition(partition_index=index, start_offset=UNINITIALIZED,
                                                               leader_epoch=0, lag=UNINITIALIZED)
    plog = t.partitions[index]
    start, done = started
    return RESP.DescribeShareGroupOffsetsResponsePartition(partition_index=index, start_offset=start,
                                                           leader_epoch=plog.leader_epoch,
                                                           lag=plog.high_watermark - start - done)


def _topic(ctx: RequestContext, name: str, partitions: list[int], summary: dict[tuple[str, int], tuple[int, int]],
           denied: set[str]) -> Any:
    t = ctx.cluster.topics.get(name)
    if name in denied:
        code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return RESP.DescribeShareGroupOffsetsResponseTopic(topic_name=name, partitions=[
            RESP.DescribeShareGroupOffsetsResponsePartition(partition_index=p, start_offset=UNINITIALIZED,
                                                            error_code=code, error_message=error_message(code))
            for p in partitions])
    out = RESP.DescribeShareGroupOffsetsResponseTopic(topic_name=name, partitions=[
        _partition(ctx, name, p, summary) for p in partitions])
    if t is not None:
        out.topic_id = t.topic_id
    return out


def _all_partitions(ctx: RequestContext, group_id: str, summary: dict[tuple[str, int], tuple[int, int]]) \
        -> dict[str, list[int]]:
    """Started share-partitions and the partitions members are assigned, by topic (existing topics only)."""
    wanted = set(summary)
    share = ctx.cluster.share
    if share.is_share_group(group_id):
        for member in share.groups.describe(group_id).members:
            wanted.update((name, p) for _tid, name, parts in member.assignment for p in parts)
    out: dict[str, list[int]] = {}
    for topic, index in sorted(wanted):
        if topic in ctx.cluster.topics:
            out.setdefault(topic, []).append(index)
    return out


def _group(ctx: RequestContext, req: DescribeShareGroupOffsetsRequestGroup) -> Any:
    group_id = req.group_id
    out = RESP.DescribeShareGroupOffsetsResponseGroup(group_id=group_id, topics=[])
    if not ctx.cluster.share.enabled():
        out.error_code = ErrorCode.UNSUPPORTED_VERSION
        return out
    if not authz.authorize(ctx, authz.DESCRIBE, authz.GROUP, group_id):
        out.error_code = ErrorCode.GROUP_AUTHORIZATION_FAILED
        return out
    if req.topics is not None and not req.topics:
        return out
    if req.topics is None:
        code = not_coordinator(ctx, group_id)
        if code:
            out.error_code, out.error_message = code, error_message(code)
            return out
    summary = ctx.cluster.share.offsets_summary(group_id)
    if req.topics is None:
        asked = _all_partitions(ctx, group_id, summary)
        shown = authz.authorized(ctx, authz.DESCRIBE, authz.TOPIC, sorted(asked), log_denied=False)
        out.topics = [_topic(ctx, name, asked[name], summary, set()) for name in shown]
        return out
    denied = authz.denied_names(ctx, authz.DESCRIBE, authz.TOPIC, (t.topic_name for t in req.topics))
    out.topics = [_topic(ctx, t.topic_name, list(t.partitions), summary, denied) for t in req.topics]
    return out


@register(90, 0, 1)
def handle(ctx: RequestContext, req: DescribeShareGroupOffsetsRequest) -> Any:
    return RESP.DescribeShareGroupOffsetsResponse(groups=[_group(ctx, g) for g in req.groups])
