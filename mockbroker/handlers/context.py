"""What a handler is given besides the request body (:class:`RequestContext`), and how an answer body
becomes the frame's buffers (:func:`encoded_answer`; :func:`journal_answer` also finishes the request's
journal entry).

Dispatch (mockbroker.server.dispatch) makes the context and encodes the usual answers; the lanes that
answer without dispatch (the fetch lane's ``serve`` in k01_fetch, kept_answers) make and encode theirs
here the same way, so handlers need nothing from the server.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mockbroker.faults.facts import response_error_codes
from mockbroker.handlers.registry import NO_RESPONSE, Encoded
from mockbroker.plain import Slotted
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.server.broker import BrokerServer
    from mockbroker.server.connection import Connection
    from mockbroker.state.cluster import ClusterState


class RequestContext(Slotted):
    """What a handler knows about the request besides its body."""

    __slots__ = (
        "api_key",
        "api_version",
        "broker",
        "broker_id",
        "client_id",
        "cluster",
        "connection",
        "correlation_id",
        "throttle_ms",
    )

    def __init__(self, broker: BrokerServer, connection: Connection, api_key: int, api_version: int,
                 correlation_id: int, client_id: str | None, cluster: ClusterState, broker_id: int,
                 throttle_ms: int = 0) -> None:
        self.broker = broker
        self.connection = connection
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.cluster = cluster  # the broker's cluster state when the request came in (plain fields: read often)
        self.broker_id = broker_id
        self.throttle_ms = throttle_ms  # what quotas or fault rules throttled this request by (the journal shows it)

    @property
    def principal(self) -> str:
        """The connection's principal ("User:name"; "User:ANONYMOUS" before or without SASL)."""
        return self.connection.principal


def encoded_answer(ctx: RequestContext, body: Any) -> list[Any] | None:
    """A handler's answer body as the frame's buffers (None: the request gets no response)."""
    if type(body) is Encoded:
        return body.frame
    if body is NO_RESPONSE:
        return None
    return api.encode_response(ctx.api_key, ctx.api_version, ctx.correlation_id, body)


def journal_answer(ctx: RequestContext, entry: Any, started: float, body: Any) -> list[Any] | None:
    """Finish a request's journal entry; its encoded answer (None: no response)."""
    latency_ms = (time.perf_counter() - started) * 1000
    if type(body) is Encoded:  # (no error codes)
        ctx.cluster.journal.finish(entry, latency_ms, "answered", (), ctx.throttle_ms)
        return body.frame
    if body is NO_RESPONSE:
        ctx.cluster.journal.finish(entry, latency_ms, "no response", (), ctx.throttle_ms)
        return None
    ctx.cluster.journal.finish(entry, latency_ms, "answered", response_error_codes(ctx.api_key, body), ctx.throttle_ms)
    return api.encode_response(ctx.api_key, ctx.api_version, ctx.correlation_id, body)
