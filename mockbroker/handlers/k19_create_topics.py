"""CreateTopics: v0-7.

Behavior:
- Per topic: partitions and replication factor (-1 = broker defaults, v4+), manual replica
  assignments (broker ids must exist -> INVALID_REPLICA_ASSIGNMENT; with assignments both counts
  must be -1 -> INVALID_REQUEST), configs (bad values -> INVALID_CONFIG), validate_only.
- TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_TOPIC_EXCEPTION;
  a name given twice in one request -> INVALID_REQUEST for each.
- error_message from v1; v5+ answers topic id, counts and the topic's configs (source 5 =
  default, 1 = set on the topic).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.state.config import TOPIC_TO_BROKER

RESP = api.response_module(19)
SOURCE_TOPIC, SOURCE_DEFAULT = 1, 5


def _assignments(ctx: Any, t: Any) -> list[list[int]] | None:
    if not t.assignments:
        return None
    if t.num_partitions != -1 or t.replication_factor != -1:
        raise KafkaError(ErrorCode.INVALID_REQUEST,
                         "both numPartitions and replicationFactor must be -1 when assignments are given")
    by_index = {a.partition_index: list(a.broker_ids) for a in t.assignments}
    if sorted(by_index) != list(range(len(by_index))):
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partition indexes must be 0..n-1")
    lengths = {len(b) for b in by_index.values()}
    for brokers in by_index.values():
        if not brokers or len(set(brokers)) != len(brokers) or any(b not in ctx.cluster.brokers for b in brokers):
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"invalid replica assignment {brokers}")
    if len(lengths) != 1:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "every partition needs the same number of replicas")
    return [by_index[i] for i in range(len(by_index))]


def _result(ctx: Any, t: Any, validate_only: bool) -> Any:
    out = RESP.CreatableTopicResult(name=t.name, num_partitions=-1, replication_factor=-1, configs=None)
    try:
        assignment = _assignments(ctx, t)
        configs = {c.name: c.value for c in t.configs}
        if assignment is not None:
            topic = ctx.cluster.create_topic(t.name, len(assignment), len(assignment[0]), configs,
                                             validate_only=validate_only, assignment=assignment)
        else:
            topic = ctx.cluster.create_topic(t.name, t.num_partitions, t.replication_factor, configs,
                                             validate_only=validate_only)
    except KafkaError as exc:
        out.error_code, out.error_message = exc.code, exc.message
        return out
    out.topic_id = topic.topic_id
    out.num_partitions = len(topic.partitions)
    out.replication_factor = topic.replication_factor
    out.configs = [
        RESP.CreatableTopicConfigs(name=name, value=str(topic.config[name]), read_only=False,
                                   config_source=SOURCE_DEFAULT if topic.config.is_default(name) else SOURCE_TOPIC,
                                   is_sensitive=False)
        for name in sorted(TOPIC_TO_BROKER)
    ]
    return out


@register(19, 0, 7)
def handle(ctx: Any, req: Any) -> Any:
    counts = Counter(t.name for t in req.topics)
    results = []
    for t in req.topics:
        if counts[t.name] > 1:
            results.append(RESP.CreatableTopicResult(name=t.name, error_code=ErrorCode.INVALID_REQUEST,
                                                     error_message="topic named more than once in the request",
                                                     num_partitions=-1, replication_factor=-1, configs=None))
            continue
        results.append(_result(ctx, t, req.validate_only))
    return RESP.CreateTopicsResponse(topics=results)
