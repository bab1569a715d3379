"""CreatePartitions: v0-3.

Behavior:
- Raises a topic's partition count (not larger -> INVALID_PARTITIONS), optionally with replica
  assignments for the new partitions (wrong count or unknown brokers -> INVALID_REPLICA_ASSIGNMENT),
  validate_only; unknown topic -> UNKNOWN_TOPIC_OR_PARTITION; a topic named twice -> INVALID_REQUEST.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

RESP = api.response_module(37)


def _grow(ctx: Any, t: Any, validate_only: bool) -> Any:
    out = RESP.CreatePartitionsTopicResult(name=t.name)
    try:
        assignment = [list(a.broker_ids) for a in t.assignments] if t.assignments is not None else None
        ctx.cluster.create_partitions(t.name, t.count, validate_only, assignment)
    except KafkaError as exc:
        out.error_code, out.error_message = exc.code, exc.message
    return out


@register(37, 0, 3)
def handle(ctx: Any, req: Any) -> Any:
    counts = Counter(t.name for t in req.topics)
    results = []
    for t in req.topics:
        if counts[t.name] > 1:
            results.append(RESP.CreatePartitionsTopicResult(
                name=t.name, error_code=ErrorCode.INVALID_REQUEST, error_message="topic named more than once"))
        else:
            results.append(_grow(ctx, t, req.validate_only))
    return RESP.CreatePartitionsResponse(results=results)
