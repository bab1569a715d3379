"""OffsetFetch: v0-10.

Behavior:
- Committed offsets (-1 when none) with leader epoch (v5+) and metadata; a null topic list (v2+)
  means every partition the group committed.
- v8+ ask for several groups at once; v10 names topics by id. NOT_COORDINATOR on the wrong broker
  (per group from v8, top level from v2 before that); the empty group id is a group, as in Kafka.
- v9+: for KIP-848 groups a member id (or an epoch other than -1) must name a current member with its
  epoch (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH); classic groups check nothing, as in Kafka.
- Offsets committed inside an open transaction stay invisible until it commits; with
  require_stable (v7+) their partitions answer UNSTABLE_OFFSET_COMMIT (retriable) instead.
- With ACLs on (checked first, as Kafka): DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED;
  named topics without DESCRIBE -> TOPIC_AUTHORIZATION_FAILED for their partitions, and left out of
  an all-partitions answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz
from mockbroker.handlers.groups_common import not_coordinator, refusal
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.offset_fetch_request import OffsetFetchRequest

RESP = api.response_module(9)


def _offsets(ctx: RequestContext, group_id: str, topics: list[Any] | None, by_id: bool,
             require_stable: bool) -> dict[str, list[tuple]]:
    groups = ctx.cluster.groups
    out: dict[str, list[tuple]] = {}
    if topics is None:
        for (topic, partition), (offset, epoch, meta) in sorted(groups.committed_all(group_id).items()):
            out.setdefault(topic, []).append(_entry(ctx, group_id, topic, partition, offset, epoch, meta,
                                                    require_stable))
        if authz.enabled(ctx):
            out = {t: v for t, v in out.items() if authz.authorize(ctx, authz.DESCRIBE, authz.TOPIC, t, False)}
        return out
    check = authz.enabled(ctx)
    for t in topics:
        name = t.name
        if by_id:
            known = ctx.cluster.topics_by_id.get(t.topic_id)
            name = known.name if known else ""
        if check and name and not authz.authorize(ctx, authz.DESCRIBE, authz.TOPIC, name):
            out.setdefault(name, []).extend((p, -1, -1, "", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                                            for p in t.partition_indexes)
            continue
        for partition in t.partition_indexes:
            offset, epoch, meta = groups.committed(group_id, name, partition)
            out.setdefault(name, []).append(_entry(ctx, group_id, name, partition, offset, epoch, meta,
                                                   require_stable))
    return out


def _entry(ctx: RequestContext, group_id: str, topic: str, partition: int, offset: int, epoch: int, meta: str | None,
           require_stable: bool) -> tuple:
    if require_stable and ctx.cluster.groups.unstable(group_id, topic, partition):
        return partition, -1, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT
    return partition, offset, epoch, meta, 0


def _group_code(ctx: RequestContext, group_id: str) -> int:
    if not authz.authorize(ctx, authz.DESCRIBE, authz.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    return not_coordinator(ctx, group_id, empty_ok=True)


@register(9, 0, 10)
def handle(ctx: RequestContext, req: OffsetFetchRequest) -> Any:
    if ctx.api_version >= 8:
        results = []
        for g in req.groups:
            code = _group_code(ctx, g.group_id)
            if not code and ctx.api_version >= 9:
                code = refusal(ctx.cluster.groups.check_fetch, g.group_id, g.member_id, g.member_epoch)
            found = {} if code else _offsets(ctx, g.group_id, g.topics, ctx.api_version >= 10, req.require_stable)
            results.append(RESP.OffsetFetchResponseGroup(group_id=g.group_id, error_code=code, topics=[
                RESP.OffsetFetchResponseTopics(
                    name=name, topic_id=ctx.cluster.topics[name].topic_id if name in ctx.cluster.topics else b"\0" * 16,
                    partitions=[RESP.OffsetFetchResponsePartitions(partition_index=p, committed_offset=o,
                                                                   committed_leader_epoch=e, metadata=m, error_code=c)
                                for p, o, e, m, c in parts])
                for name, parts in found.items()]))
        return RESP.OffsetFetchResponse(groups=results)
    code = _group_code(ctx, req.group_id)
    stable = ctx.api_version >= 7 and req.require_stable
    found = {} if code else _offsets(ctx, req.group_id, req.topics, False, stable)
    return RESP.OffsetFetchResponse(error_code=code, topics=[
        RESP.OffsetFetchResponseTopic(name=name, partitions=[
            RESP.OffsetFetchResponsePartition(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                              metadata=m, error_code=c or (code if ctx.api_version < 2 else 0))
            for p, o, e, m, c in parts])
        for name, parts in found.items()])
