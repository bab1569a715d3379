"""CreatePartitions: v0-3.

Behavior:
- Raises a topic's partition count to `count`: unknown topic -> UNKNOWN_TOPIC_OR_PARTITION; a count
  not larger than today's -> INVALID_PARTITIONS.
- Optional assignments for the new partitions (first replica leads): one per new partition, replicas
  distinct, registered brokers, as many as the topic's replication factor; otherwise
  INVALID_REPLICA_ASSIGNMENT. Without them new partitions are spread over the brokers.
- A topic named more than once -> one INVALID_REQUEST result for it; a request adding more than
  10,000 partitions in all -> POLICY_VIOLATION for every topic (Kafka's controller batch limit).
- validate_only runs every check and changes nothing; timeout_ms is ignored (growth is instant).
- With ACLs on: ALTER on the topic, else TOPIC_AUTHORIZATION_FAILED (after the duplicate check).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.state.topic_rules import MAX_PARTITIONS_PER_REQUEST

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic

RESP = api.response_module(37)


def _result(name: str, code: int = 0, message: str | None = None) -> Any:
    return RESP.CreatePartitionsTopicResult(name=name, error_code=code, error_message=message)


def _grow(ctx: RequestContext, t: CreatePartitionsTopic, validate_only: bool) -> Any:
    if not authz.authorize(ctx, authz.ALTER, authz.TOPIC, t.name):
        return _result(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed.")
    cluster = ctx.cluster
    assignment = [list(a.broker_ids) for a in t.assignments] if t.assignments is not None else None
    try:
        topic = cluster.topic(t.name)
        if assignment is not None and len(assignment) == t.count - len(topic.partitions) > 0:
            cluster.check_assignment(assignment, topic.replication_factor)
        cluster.create_partitions(t.name, t.count, validate_only, assignment)
    except KafkaError as exc:
        return _result(t.name, exc.code, exc.message)
    return _result(t.name)


def _new_partitions(ctx: RequestContext, t: CreatePartitionsTopic) -> int:
    topic = ctx.cluster.topics.get(t.name)
    return max(t.count - len(topic.partitions), 0) if topic is not None else 0


@register(37, 0, 3)
def handle(ctx: RequestContext, req: CreatePartitionsRequest) -> Any:
    counts = Counter(t.name for t in req.topics)
    if sum(_new_partitions(ctx, t) for t in req.topics if counts[t.name] == 1) > MAX_PARTITIONS_PER_REQUEST:
        message = "Excessively large number of partitions per request."
        return RESP.CreatePartitionsResponse(results=[_result(t.name, ErrorCode.POLICY_VIOLATION, message)
                                                      for t in req.topics])
    results = []
    reported: set[str] = set()
    for t in req.topics:
        if counts[t.name] == 1:
            results.append(_grow(ctx, t, req.validate_only))
        elif t.name not in reported:
            reported.add(t.name)
            results.append(_result(t.name, ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
    return RESP.CreatePartitionsResponse(results=results)
