"""OffsetCommit: v0-10 (classic groups).

Behavior:
- Members commit with their generation (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
  REBALANCE_IN_PROGRESS); a commit with generation -1 and no member id is a "simple" commit,
  accepted only while the group has no members.
- Unknown topics or partitions -> UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id, v10);
  metadata over 4096 bytes -> OFFSET_METADATA_TOO_LARGE; NOT_COORDINATOR on the wrong broker.
- With ACLs on (checked first, as Kafka): READ on the group, else GROUP_AUTHORIZATION_FAILED for
  every partition; partitions of topics without READ -> TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.groups_common import not_coordinator, refusal
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.offset_commit_request import OffsetCommitRequest, OffsetCommitRequestTopic

RESP = api.response_module(8)
MAX_METADATA = 4096


def _topic_name(ctx: RequestContext, t: OffsetCommitRequestTopic) -> tuple[str, int]:
    try:
        topic = ctx.cluster.topic_by_id(t.topic_id) if ctx.api_version >= 10 else ctx.cluster.topic(t.name)
    except KafkaError as exc:
        return "", exc.code
    return topic.name, 0


def _auth_name(ctx: RequestContext, t: OffsetCommitRequestTopic) -> str:
    """The name to authorize: the request's (v0-9), the topic's for a known id (v10), else "" (unknown id)."""
    if ctx.api_version < 10:
        return t.name
    return _topic_name(ctx, t)[0] or ""


@register(8, 0, 10)
def handle(ctx: RequestContext, req: OffsetCommitRequest) -> Any:
    group_code = not_coordinator(ctx, req.group_id)
    denied: set[str] = set()
    if authz.enabled(ctx):
        if not authz.authorize(ctx, authz.READ, authz.GROUP, req.group_id):
            group_code = ErrorCode.GROUP_AUTHORIZATION_FAILED
        else:
            names = [n for n in (_auth_name(ctx, t) for t in req.topics) if n]
            denied = authz.denied_names(ctx, authz.READ, authz.TOPIC, names)
    offsets = []
    checked: list[tuple[Any, list[tuple[Any, int]]]] = []
    for t in req.topics:
        name, code = _topic_name(ctx, t)
        if denied and _auth_name(ctx, t) in denied:
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        parts = []
        for p in t.partitions:
            err = group_code or code
            if not err and not 0 <= p.partition_index < len(ctx.cluster.topics[name].partitions):
                err = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if not err and p.committed_metadata is not None and len(p.committed_metadata.encode()) > MAX_METADATA:
                err = ErrorCode.OFFSET_METADATA_TOO_LARGE
            if not err:
                epoch = p.committed_leader_epoch if ctx.api_version >= 6 else -1
                offsets.append((name, p.partition_index, p.committed_offset, epoch, p.committed_metadata))
            parts.append((p, err))
        checked.append((t, parts))
    generation = req.generation_id_or_member_epoch if ctx.api_version >= 1 else -1
    member_id = req.member_id if ctx.api_version >= 1 else ""
    commit_code = 0
    if not group_code and offsets:
        instance_id = req.group_instance_id if ctx.api_version >= 7 else None
        commit_code = refusal(ctx.cluster.groups.commit, req.group_id, member_id or "", generation, offsets,
                              instance_id)
    return RESP.OffsetCommitResponse(topics=[
        RESP.OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
            RESP.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=err or commit_code)
            for p, err in parts])
        for t, parts in checked
    ])
