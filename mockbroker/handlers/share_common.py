"""What the share-group handlers share: finding a partition led here by topic id and applying a partition's
acknowledgement batches (ShareFetch k78, ShareAcknowledge k79), the refusals before any work (k78, k79),
the order ShareFetch reads its partitions in and how it shares MaxBytes between them (k78), and the checks
before a share group's offsets change (k91, k92)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.groups_common import not_coordinator

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.state.log import PartitionLog


T = TypeVar("T")

# the message of UNSUPPORTED_VERSION while share.version is finalized at 0
SHARE_GROUPS_OFF = "share groups are off (share.version 0)"


def led_partition(ctx: RequestContext, topic_id: Any, index: int) -> tuple[PartitionLog | None, int]:
    """(the partition's log, 0) when this broker leads it, else (None or the log, the error Kafka answers):
    UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER."""
    topic = ctx.cluster.topics_by_id.get(topic_id)
    if topic is None:
        return None, ErrorCode.UNKNOWN_TOPIC_ID
    if not authz.authorize(ctx, authz.READ, authz.TOPIC, topic.name):
        return None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if not 0 <= index < len(topic.partitions):
        return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    plog = topic.partitions[index]
    if plog.leader != ctx.broker_id:
        return plog, ErrorCode.NOT_LEADER_OR_FOLLOWER
    return plog, 0


def rotated(partitions: Sequence[T], session_epoch: int) -> list[T]:
    """A share session's partitions in the order a fetch reads them: turned by the session epoch so that
    no partition always comes first (Kafka's PartitionRotateStrategy ROUND_ROBIN; epochs 0 and -1 keep
    the order)."""
    at = session_epoch % len(partitions) if session_epoch >= 1 and partitions else 0
    return [*partitions[at:], *partitions[:at]]


def split_bytes(max_bytes: int, count: int) -> list[int]:
    """A fetch's MaxBytes shared by the ``count`` partitions it reads (Kafka's PartitionMaxBytesStrategy
    UNIFORM): an even share each, the remainder to one (the first here; Kafka picks one at random), or
    with fewer bytes than partitions 1 byte each to the first ``max_bytes`` (Kafka: random ones)."""
    if max_bytes < count:
        return [1 if i < max_bytes else 0 for i in range(count)]
    share, rest = divmod(max_bytes, count)
    return [share + rest, *[share] * (count - 1)]


def acknowledge(ctx: RequestContext, group_id: str, member_id: str, plog: PartitionLog,
                batches: Sequence[Any]) -> tuple[int, str | None]:
    """Apply one partition's AcknowledgementBatches: (0, None) or (error code, message)."""
    try:
        ctx.cluster.share.acknowledge(group_id, member_id, plog,
                                      [(b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in batches])
    except KafkaError as exc:
        return exc.code, exc.message
    return 0, None


def refused_group(ctx: RequestContext, group_id: str | None, member_id: str | None) -> tuple[int, str | None]:
    """The whole request's refusal before any session work, as Kafka: GROUP_AUTHORIZATION_FAILED, share groups
    off (UNSUPPORTED_VERSION), or no group / member id (INVALID_REQUEST)."""
    if not group_id:
        return ErrorCode.INVALID_REQUEST, "Group id must be provided"
    if not member_id:
        return ErrorCode.INVALID_REQUEST, "Member id must be provided"
    if not authz.authorize(ctx, authz.READ, authz.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, None
    if not ctx.cluster.share.enabled():
        return ErrorCode.UNSUPPORTED_VERSION, SHARE_GROUPS_OFF
    return 0, None


def offsets_change_refusal(ctx: RequestContext, group_id: str, operation: int) -> tuple[int, str | None]:
    """Why AlterShareGroupOffsets / DeleteShareGroupOffsets may not touch ``group_id``, in Kafka's order:
    share groups off, ``operation`` on the group not allowed, another coordinator, no such (empty) share
    group; (0, None) when they may."""
    share = ctx.cluster.share
    if not share.enabled():
        return ErrorCode.UNSUPPORTED_VERSION, None
    if not authz.authorize(ctx, operation, authz.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, None
    code = not_coordinator(ctx, group_id)
    if code:
        return code, None
    try:
        share.check_offsets_alterable(group_id)
    except KafkaError as exc:
        return exc.code, exc.message
    return 0, None
