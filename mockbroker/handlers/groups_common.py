"""Helpers shared by the group handlers: the coordinator check and reply-to-future plumbing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext


def not_coordinator(ctx: RequestContext, group_id: str) -> int:
    """NOT_COORDINATOR when this broker does not coordinate ``group_id`` (0 when it does)."""
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID
    return 0 if ctx.cluster.coordinator_for(group_id).node_id == ctx.broker_id else ErrorCode.NOT_COORDINATOR


def reply_future() -> tuple[asyncio.Future[Any], Callable[..., None]]:
    """A future and the callback state uses to fill it (later calls, or a dropped client, are ignored)."""
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def reply(*result: Any) -> None:
        if not future.done():
            future.set_result(result[0] if len(result) == 1 else result)

    return future, reply
