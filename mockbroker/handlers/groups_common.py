"""Helpers shared by the group handlers: the coordinator check, a state refusal as a code, and
reply-to-future plumbing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec

from mockbroker.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext

P = ParamSpec("P")
MAX_METADATA = 4096  # offset.metadata.max.bytes: committed metadata longer than this is refused


def metadata_code(metadata: str | None) -> int:
    """OFFSET_METADATA_TOO_LARGE for committed metadata over ``offset.metadata.max.bytes``, else 0: the last of
    a committed partition's checks (OffsetCommit, TxnOffsetCommit)."""
    return ErrorCode.OFFSET_METADATA_TOO_LARGE if metadata is not None and len(metadata.encode()) > MAX_METADATA else 0


def not_coordinator(ctx: RequestContext, group_id: str, empty_ok: bool = False) -> int:
    """NOT_COORDINATOR when this broker does not coordinate ``group_id`` (0 when it does); INVALID_GROUP_ID for
    an empty id, unless ``empty_ok`` (Kafka takes OffsetCommit and OffsetFetch for the empty group id)."""
    if not group_id and not empty_ok:
        return ErrorCode.INVALID_GROUP_ID
    return 0 if ctx.cluster.coordinator_for(group_id).node_id == ctx.broker_id else ErrorCode.NOT_COORDINATOR


def refusal(call: Callable[P, object], *args: P.args, **kwargs: P.kwargs) -> int:
    """``call(*args, **kwargs)`` for answers that carry a code per item: 0 when it passes, else the code of
    the KafkaError it raised (the group coordinator raises its refusals)."""
    try:
        call(*args, **kwargs)
    except KafkaError as exc:
        return exc.code
    return 0


def reply_future() -> tuple[asyncio.Future[Any], Callable[..., None]]:
    """A future and the callback state uses to fill it (later calls, or a dropped client, are ignored)."""
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def reply(*result: Any) -> None:
        if not future.done():
            future.set_result(result[0] if len(result) == 1 else result)

    return future, reply


def client_host(peer: str) -> str:
    """A connection's address as Kafka's DescribeGroups shows a member's ClientHost ("/127.0.0.1": Java's
    InetAddress.toString(), no port); ``peer`` is the connection's "host:port"."""
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return "/" + host if host and host != "?" else ""
