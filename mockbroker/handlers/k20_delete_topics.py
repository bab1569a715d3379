"""DeleteTopics: v0-6.

Behavior:
- By name (topic_names, v0-5; topics[].name, v6+) or by id (topics[].topic_id, v6+).
- Unknown names -> UNKNOWN_TOPIC_OR_PARTITION, unknown ids -> UNKNOWN_TOPIC_ID; results carry
  the name and (v6+) the id; error_message from v5.
"""

from __future__ import annotations

from typing import Any

from mockbroker.errors import KafkaError
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.protocol.runtime import ZERO_UUID

RESP = api.response_module(20)


def _delete(ctx: Any, name: str | None, topic_id: bytes) -> Any:
    out = RESP.DeletableTopicResult(name=name, topic_id=topic_id)
    try:
        if name is None:
            name = ctx.cluster.topic_by_id(topic_id).name
        topic = ctx.cluster.delete_topic(name)
        out.name, out.topic_id = topic.name, topic.topic_id
    except KafkaError as exc:
        out.error_code, out.error_message = exc.code, exc.message
    return out


@register(20, 0, 6)
def handle(ctx: Any, req: Any) -> Any:
    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    else:
        wanted = [(name, ZERO_UUID) for name in req.topic_names]
    return RESP.DeleteTopicsResponse(responses=[_delete(ctx, name, tid) for name, tid in wanted])
