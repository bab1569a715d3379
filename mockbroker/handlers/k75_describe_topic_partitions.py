"""DescribeTopicPartitions: v0 (Kafka 3.7+, KIP-966).

Behavior:
- The named topics (an empty list: every topic) in name order, from the cursor's topic and partition
  on, at most response_partition_limit partitions (clamped to 1..2000, Kafka's
  max.request.partition.size.limit); when the limit cuts a topic (or is used up before the next one)
  next_cursor names where to go on, else it is null.
- Partitions carry the same facts as Metadata: leader, leader epoch, replicas, ISR (the live replicas),
  offline replicas; eligible_leader_replicas and last_known_elr are empty lists; a partition whose
  leader is down answers LEADER_NOT_AVAILABLE.
- Unknown named topics: UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal name) with
  a zero topic id, in name order; they use none of the partition limit. A cursor topic missing from a
  non-empty topic list or a negative cursor partition: INVALID_REQUEST for every topic named.
- topic_authorized_operations: the operations the principal may do on the topic; with ACLs off, as
  Kafka without an authorizer, every operation a topic supports (READ, WRITE, CREATE, DELETE, ALTER,
  DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS).
- With ACLs on, as Metadata: topics without DESCRIBE are left out of an all-topics answer; named ones
  answer TOPIC_AUTHORIZATION_FAILED with a zero topic id (whether they exist or not, before the name
  check), after the authorized topics, in name order, using none of the partition limit.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.protocol.runtime import ZERO_UUID
from mockbroker.state.cluster import Topic
from mockbroker.state.topic_rules import validate_topic_name

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.describe_topic_partitions_request import DescribeTopicPartitionsRequest

RESP = api.response_module(75)
log = logging.getLogger("mockbroker.handlers")
MAX_PARTITION_LIMIT = 2000  # Kafka's max.request.partition.size.limit default


def _partitions(topic: Topic, start: int, limit: int, live: Any) -> list[Any]:
    return [
        RESP.DescribeTopicPartitionsResponsePartition(
            error_code=0 if p.leader in live else ErrorCode.LEADER_NOT_AVAILABLE,
            partition_index=p.index, leader_id=p.leader, leader_epoch=p.leader_epoch,
            replica_nodes=list(p.replicas), isr_nodes=[r for r in p.replicas if r in live],
            eligible_leader_replicas=[], last_known_elr=[],
            offline_replicas=[r for r in p.replicas if r not in live],
        )
        for p in topic.partitions[start:start + limit]
    ]


def _missing(name: str, code: int | None = None) -> Any:
    if code is None:
        try:
            validate_topic_name(name)
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        except KafkaError:
            code = ErrorCode.INVALID_TOPIC_EXCEPTION
    return RESP.DescribeTopicPartitionsResponseTopic(error_code=code, name=name, topic_id=ZERO_UUID,
                                                     is_internal=False, partitions=[])


def _refuse(req: DescribeTopicPartitionsRequest, message: str) -> Any:
    log.info("DescribeTopicPartitions refused: %s", message)
    return RESP.DescribeTopicPartitionsResponse(topics=[
        RESP.DescribeTopicPartitionsResponseTopic(error_code=ErrorCode.INVALID_REQUEST, name=t.name,
                                                  topic_id=ZERO_UUID, is_internal=False, partitions=[])
        for t in req.topics
    ])


@register(75, 0, 0)
def handle(ctx: RequestContext, req: DescribeTopicPartitionsRequest) -> Any:
    cluster = ctx.cluster
    cursor = req.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    fetch_all = not req.topics
    source = cluster.topics if fetch_all else {t.name for t in req.topics}
    names = sorted(n for n in source if n >= cursor_topic)
    if cursor is not None and not fetch_all and cursor.topic_name not in names:
        return _refuse(req, f"DescribeTopicPartitionsRequest topic list should contain the cursor topic: "
                            f"{cursor.topic_name}")
    if cursor is not None and cursor.partition_index < 0:
        return _refuse(req, f"DescribeTopicPartitionsRequest cursor partition must be valid: {cursor.partition_index}")
    denied: list[Any] = []
    if authz.enabled(ctx):
        allowed = set(authz.authorized(ctx, authz.DESCRIBE, authz.TOPIC, names, log_denied=not fetch_all))
        if not fetch_all:
            denied = [_missing(n, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for n in names if n not in allowed]
        names = [n for n in names if n in allowed]
    remaining = max(min(MAX_PARTITION_LIMIT, req.response_partition_limit), 1)
    live = cluster.brokers
    topics: list[Any] = []
    next_cursor = None
    for name in names:
        if remaining == 0:
            next_cursor = RESP.Cursor(topic_name=name, partition_index=0)
            break
        topic = cluster.topics.get(name)
        if topic is None:
            if not fetch_all:
                topics.append(_missing(name))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        parts = _partitions(topic, start, remaining, live)
        topics.append(RESP.DescribeTopicPartitionsResponseTopic(
            error_code=0, name=name, topic_id=topic.topic_id, is_internal=topic.is_internal, partitions=parts,
            topic_authorized_operations=authz.operations(ctx, authz.TOPIC, name)))
        if start + remaining < len(topic.partitions):
            next_cursor = RESP.Cursor(topic_name=name, partition_index=start + remaining)
            break
        remaining -= len(parts)
    return RESP.DescribeTopicPartitionsResponse(topics=topics + denied, next_cursor=next_cursor)
