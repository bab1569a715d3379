"""What AlterConfigs and IncrementalAlterConfigs share: one answer per resource, in request order, a
resource named twice refused each time (Kafka's INVALID_REQUEST) and the others altered one by one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from mockbroker.errors import ErrorCode


def answer_each_resource(resp: Any, req: Any, alter: Callable[[Any], tuple[int, str | None]]) -> list[Any]:
    """``resp``: the response module (both name the class AlterConfigsResourceResponse); ``alter(resource)``
    returns (error code, message)."""
    counts = Counter((r.resource_type, r.resource_name) for r in req.resources)
    out = []
    code: int
    message: str | None
    for r in req.resources:
        if counts[(r.resource_type, r.resource_name)] > 1:
            code, message = ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."
        else:
            code, message = alter(r)
        out.append(resp.AlterConfigsResourceResponse(error_code=code, error_message=message,
                                                     resource_type=r.resource_type, resource_name=r.resource_name))
    return out
