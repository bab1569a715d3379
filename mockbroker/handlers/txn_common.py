"""Helpers shared by the transaction handlers: the coordinator check and old-version error codes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mockbroker.errors import ErrorCode

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext


def not_txn_coordinator(ctx: RequestContext, transactional_id: str) -> int:
    """NOT_COORDINATOR unless this broker coordinates ``transactional_id`` (0 when it does)."""
    return 0 if ctx.cluster.coordinator_for(transactional_id).node_id == ctx.broker_id else ErrorCode.NOT_COORDINATOR


def for_version(code: int, version: int, fenced_from: int) -> int:
    """Clients older than the version that introduced PRODUCER_FENCED (KIP-588) get
    INVALID_PRODUCER_EPOCH instead, as Kafka answers them."""
    if code == ErrorCode.PRODUCER_FENCED and version < fenced_from:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code
