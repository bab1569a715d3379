"""OffsetCommit: v0-10 (classic groups).

Behavior, in Kafka's order (KafkaApis, then the group coordinator):
- With ACLs on: READ on the group, else GROUP_AUTHORIZATION_FAILED for every partition; partitions of
  topics without READ -> TOPIC_AUTHORIZATION_FAILED.
- Unknown topics or partitions -> UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id, v10); these
  partitions keep their code, the rest get the group's answer.
- NOT_COORDINATOR on the wrong broker (the empty group id is a group, as in Kafka); then the group's
  checks (GroupOffsets.check_commit): members commit with their generation (FENCED_INSTANCE_ID,
  UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, then REBALANCE_IN_PROGRESS); a commit with generation -1
  and no member id (an admin's, or v0) is accepted only while the group has no members (else
  UNKNOWN_MEMBER_ID); KIP-848 groups check the member epoch (STALE_MEMBER_EPOCH).
- Last, per partition: metadata over 4096 bytes -> OFFSET_METADATA_TOO_LARGE.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.groups_common import metadata_code, not_coordinator, refusal
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.offset_commit_request import OffsetCommitRequest, OffsetCommitRequestTopic

RESP = api.response_module(8)


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
    if not authz.authorize(ctx, authz.READ, authz.GROUP, req.group_id):
        return _answer(req, {}, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    denied = authz.denied_names(ctx, authz.READ, authz.TOPIC, filter(None, (_auth_name(ctx, t) for t in req.topics))) \
        if authz.enabled(ctx) else set()
    codes: dict[tuple[int, int], int] = {}  # (topic index, partition index in it) -> its code
    names: dict[int, str] = {}
    for i, t in enumerate(req.topics):  # the topic checks first, as Kafka's KafkaApis
        name, code = _topic_name(ctx, t)
        if denied and _auth_name(ctx, t) in denied:
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        names[i] = name
        for j, p in enumerate(t.partitions):
            if not code and not 0 <= p.partition_index < len(ctx.cluster.topics[name].partitions):
                codes[(i, j)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                codes[(i, j)] = code
    valid = [(i, j) for (i, j), code in codes.items() if not code]
    if valid:  # then the coordinator, the group's checks, and last each partition's metadata
        generation = req.generation_id_or_member_epoch if ctx.api_version >= 1 else -1
        member_id = (req.member_id or "") if ctx.api_version >= 1 else ""
        instance_id = req.group_instance_id if ctx.api_version >= 7 else None
        group_code = not_coordinator(ctx, req.group_id, empty_ok=True) or refusal(
            ctx.cluster.groups.check_commit, req.group_id, member_id, generation, instance_id, ctx.api_version)
        offsets = []
        for i, j in valid:
            p = req.topics[i].partitions[j]
            codes[(i, j)] = group_code or metadata_code(p.committed_metadata)
            if not codes[(i, j)]:
                epoch = p.committed_leader_epoch if ctx.api_version >= 6 else -1
                offsets.append((names[i], p.partition_index, p.committed_offset, epoch, p.committed_metadata))
        if offsets:
            # v2-4: a retention time other than -1 sets an expire timestamp (Kafka's expireTimestampMs)
            retention = req.retention_time_ms if 2 <= ctx.api_version <= 4 else -1
            expire = ctx.cluster.clock.now_ms() + retention if retention != -1 else -1
            ctx.cluster.groups.store(req.group_id, offsets, expire)
    return _answer(req, codes, 0)


def _answer(req: OffsetCommitRequest, codes: dict[tuple[int, int], int], default: int) -> Any:
    return RESP.OffsetCommitResponse(topics=[
        RESP.OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
            RESP.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=codes.get((i, j), default))
            for j, p in enumerate(t.partitions)])
        for i, t in enumerate(req.topics)
    ])
