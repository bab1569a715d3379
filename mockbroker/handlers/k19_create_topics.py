"""CreateTopics: v0-7.

Behavior:
- Checks run in Kafka's (KRaft controller's) order, the first failure answering for the topic:
  a name given more than once -> one INVALID_REQUEST result for that name; a request adding more
  than 10,000 partitions in all -> POLICY_VIOLATION for every topic; then per topic an illegal or
  colliding name ('.' vs '_') -> INVALID_TOPIC_EXCEPTION, TOPIC_ALREADY_EXISTS, configs (null
  value, a name Kafka does not know, or a value it would refuse -> INVALID_CONFIG), then counts.
- num_partitions / replication_factor: -1 means the broker defaults (`num.partitions`,
  `default.replication.factor`); non-positive -> INVALID_PARTITIONS / INVALID_REPLICATION_FACTOR,
  more replicas than brokers -> INVALID_REPLICATION_FACTOR.
- Manual assignments (partition -> broker ids): both counts must then be -1 (else INVALID_REQUEST);
  partitions must be 0..n-1 once each, replicas distinct, registered brokers, the same number for
  every partition (else INVALID_REPLICA_ASSIGNMENT). The first replica leads.
- validate_only runs every check and creates nothing. timeout_ms is ignored (creation is instant).
- error_message from v1. v5+ successes carry the topic id (v7), partition count, replication factor
  and configs: what DescribeConfigs answers for the topic (every topic config Kafka lists, with
  its value and source; see k32_describe_configs / state.config_admin).
- With ACLs on: after the duplicate check, a topic needs CREATE on the cluster or on the topic, else
  TOPIC_AUTHORIZATION_FAILED ("Authorization failed."); a created topic without DESCRIBE_CONFIGS
  answers no configs and topic_config_error_code TOPIC_AUTHORIZATION_FAILED (v5+), as Kafka.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.state.cluster import Topic
from mockbroker.state.topic_rules import MAX_PARTITIONS_PER_REQUEST

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.create_topics_request import CreatableTopic, CreateTopicsRequest

RESP = api.response_module(19)


def _error(name: str, code: int, message: str | None) -> Any:
    return RESP.CreatableTopicResult(name=name, error_code=code, error_message=message,
                                     num_partitions=-1, replication_factor=-1, configs=None)


def _assignment(ctx: RequestContext, t: CreatableTopic) -> list[list[int]] | None:
    """The request's manual assignment as replica lists in partition order, checked."""
    if not t.assignments:
        return None
    if t.num_partitions != -1 or t.replication_factor != -1:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, "
                         "but numPartitions and replicationFactor were not both set to -1.")
    by_index: dict[int, list[int]] = {}
    for a in t.assignments:
        if a.partition_index in by_index:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Found multiple manual partition assignments for partition {a.partition_index}")
        by_index[a.partition_index] = list(a.broker_ids)
    if sorted(by_index) != list(range(len(by_index))):
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "partitions should be a consecutive 0-based integer sequence")
    assignment = [by_index[i] for i in range(len(by_index))]
    ctx.cluster.check_assignment(assignment)
    return assignment


def _partition_count(ctx: RequestContext, t: CreatableTopic) -> int:
    if t.assignments:
        return len(t.assignments)
    return ctx.cluster.config["num.partitions"] if t.num_partitions == -1 else max(t.num_partitions, 0)


def _configs(ctx: RequestContext, topic: Topic) -> list[Any]:
    """What DescribeConfigs would answer for the topic (the same source logic: state.config_admin)."""
    return [
        RESP.CreatableTopicConfigs(name=e.name, value=e.value, read_only=e.read_only, config_source=e.source,
                                   is_sensitive=e.is_sensitive)
        for e in ctx.cluster.config_admin.topic_entries(topic, ctx.broker_id)
    ]


def _create(ctx: RequestContext, t: CreatableTopic, validate_only: bool) -> Any:
    cluster = ctx.cluster
    configs = {c.name: c.value for c in t.configs}
    try:
        cluster.check_new_topic(t.name)
        cluster.check_topic_configs(configs)
        assignment = _assignment(ctx, t)
        if assignment is None:
            topic = cluster.create_topic(t.name, t.num_partitions, t.replication_factor, configs,
                                         validate_only=validate_only)
        else:
            topic = cluster.create_topic(t.name, len(assignment), len(assignment[0]), configs,
                                         validate_only=validate_only, assignment=assignment)
    except KafkaError as exc:
        return _error(t.name, exc.code, exc.message)
    result = RESP.CreatableTopicResult(name=topic.name, topic_id=topic.topic_id, error_code=0, error_message=None,
                                       num_partitions=len(topic.partitions),
                                       replication_factor=topic.replication_factor, configs=_configs(ctx, topic))
    if not authz.authorize(ctx, authz.DESCRIBE_CONFIGS, authz.TOPIC, topic.name, log_denied=False):
        result.configs, result.topic_config_error_code = [], ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return result


@register(19, 0, 7)
def handle(ctx: RequestContext, req: CreateTopicsRequest) -> Any:
    counts = Counter(t.name for t in req.topics)
    unique = [t for t in req.topics if counts[t.name] == 1]
    if sum(_partition_count(ctx, t) for t in unique) > MAX_PARTITIONS_PER_REQUEST:
        message = "Excessively large number of partitions per request."
        return RESP.CreateTopicsResponse(topics=[_error(t.name, ErrorCode.POLICY_VIOLATION, message)
                                                 for t in req.topics])
    results = []
    reported: set[str] = set()
    cluster_create = not authz.enabled(ctx) or authz.authorize_cluster(ctx, authz.CREATE, log_denied=False)
    for t in req.topics:
        if counts[t.name] == 1 and not (cluster_create or authz.authorize(ctx, authz.CREATE, authz.TOPIC, t.name)):
            results.append(_error(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."))
        elif counts[t.name] == 1:
            results.append(_create(ctx, t, req.validate_only))
        elif t.name not in reported:
            reported.add(t.name)
            results.append(_error(t.name, ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
    return RESP.CreateTopicsResponse(topics=results)
