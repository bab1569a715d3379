"""DeleteTopics: v0-6.

Behavior:
- Topics by name (topic_names, v0-5; topics[].name, v6+) or by id (topics[].topic_id, v6+).
- Unknown names -> UNKNOWN_TOPIC_OR_PARTITION, unknown ids -> UNKNOWN_TOPIC_ID; an entry with both
  a name and an id, or neither, -> INVALID_REQUEST; a name or id given twice -> one INVALID_REQUEST
  result for it.
- `delete.topic.enable=false` in the cluster config refuses every topic: TOPIC_DELETION_DISABLED
  (v3+) or INVALID_REQUEST (v0-2).
- Results carry the name (also for a topic found by id) and, v6+, the topic id; error_message
  from v5. Deletion is instant, so timeout_ms is ignored.
- With ACLs on: DELETE on the topic, else TOPIC_AUTHORIZATION_FAILED (before the existence check for
  names); a topic named by id without DESCRIBE is answered without its name, as Kafka.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.protocol.runtime import ZERO_UUID

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.delete_topics_request import DeleteTopicsRequest

RESP = api.response_module(20)


def _result(name: str | None, topic_id: bytes, code: int = 0, message: str | None = None) -> Any:
    return RESP.DeletableTopicResult(name=name, topic_id=topic_id, error_code=code, error_message=message)


def _delete(ctx: RequestContext, name: str | None, topic_id: bytes) -> Any:
    try:
        by_id = name is None
        if name is None:
            name = ctx.cluster.topic_by_id(topic_id).name
        if authz.enabled(ctx):
            if by_id and not authz.authorize(ctx, authz.DESCRIBE, authz.TOPIC, name):
                return _result(None, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            if not authz.authorize(ctx, authz.DELETE, authz.TOPIC, name):
                return _result(name, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        topic = ctx.cluster.delete_topic(name)
    except KafkaError as exc:
        return _result(name, topic_id, exc.code, exc.message)
    return _result(topic.name, topic.topic_id)


@register(20, 0, 6)
def handle(ctx: RequestContext, req: DeleteTopicsRequest) -> Any:
    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    else:
        wanted = [(name, ZERO_UUID) for name in req.topic_names]
    if not ctx.cluster.topic_deletion_enabled:
        code = ErrorCode.TOPIC_DELETION_DISABLED if ctx.api_version >= 3 else ErrorCode.INVALID_REQUEST
        return RESP.DeleteTopicsResponse(responses=[_result(n, i, code, "Topic deletion is disabled.")
                                                    for n, i in wanted])
    keys = Counter(name if name is not None else topic_id for name, topic_id in wanted
                   if (name is None) != (topic_id == ZERO_UUID))
    reported: set[str | bytes] = set()
    results = []
    for name, topic_id in wanted:
        key = name if name is not None else topic_id
        if name is not None and topic_id != ZERO_UUID:
            results.append(_result(name, topic_id, ErrorCode.INVALID_REQUEST,
                                   "You may not specify both topic name and topic id."))
        elif name is None and topic_id == ZERO_UUID:
            results.append(_result(None, topic_id, ErrorCode.INVALID_REQUEST,
                                   "Neither topic name nor id were specified."))
        elif keys[key] > 1:
            if key not in reported:
                reported.add(key)
                kind = "name" if name is not None else "id"
                results.append(_result(name, topic_id, ErrorCode.INVALID_REQUEST, f"Duplicate topic {kind}."))
        else:
            results.append(_delete(ctx, name, topic_id))
    return RESP.DeleteTopicsResponse(responses=results)
