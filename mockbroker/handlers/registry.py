"""The handler registry: each handler module registers its API key, version range and function.

Modules are imported on their key's first request (``handler_for``, from ``index.HANDLER_INDEX``).
ApiVersions is answered from that table, which a test holds equal to the registrations, so what we
advertise is exactly what we serve.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

from mockbroker.handlers.index import HANDLER_INDEX
from mockbroker.plain import FrozenSlotted
from mockbroker.protocol import api
from mockbroker.protocol.runtime import EncodedList

NO_RESPONSE = object()  # a handler's answer when Kafka sends nothing back (Produce with acks=0)


class Encoded:
    """A handler's answer already encoded: the whole response frame as the buffers to write (a Fetch
    answered from the logs in C, mockbroker.handlers.k01_fetch).  Its error codes are all 0, and a
    handler gives one only when no fault rule or client quota could see the answer (dispatch then
    journals and sends it as it is)."""

    __slots__ = ("frame",)

    def __init__(self, frame: list[Any]) -> None:
        self.frame = frame


class Handler(FrozenSlotted):
    __slots__ = ("api_key", "fn", "max_version", "min_version")
    api_key: int
    fn: Callable[..., Any]
    max_version: int
    min_version: int

    def __init__(self, api_key: int, min_version: int, max_version: int, fn: Callable[..., Any]) -> None:
        object.__setattr__(self, "api_key", api_key)
        object.__setattr__(self, "min_version", min_version)
        object.__setattr__(self, "max_version", max_version)
        object.__setattr__(self, "fn", fn)


HANDLERS: dict[int, Handler] = {}
# api key -> serve(broker, connection, frame, version, correlation_id): the encoded answer (or a Pending
# one) of the usual request of that key, taken whole before the generated reader and the handler
# (k01_fetch.serve: Fetch from frame to answer in C), or None and dispatch's usual way runs.  A
# handler module registers its lane when it loads; dispatch offers it every such frame, and the lane's
# usual_for decides whether it may take one now (SASL, fault rules, quotas, ...: handlers/lane_state.py).
LANES: dict[int, Callable[..., Any]] = {}


HandlerFn = TypeVar("HandlerFn", bound=Callable[..., Any])


def register(api_key: int, min_version: int, max_version: int) -> Callable[[HandlerFn], HandlerFn]:
    lo, hi = api.version_range(api_key)
    if not lo <= min_version <= max_version <= hi:
        raise ValueError(f"api {api_key}: v{min_version}-{max_version} is outside the codec's {lo}-{hi}")

    def wrap(fn: HandlerFn) -> HandlerFn:
        HANDLERS[api_key] = Handler(api_key, min_version, max_version, fn)
        return fn

    return wrap


def handler_for(api_key: int) -> Handler | None:
    """The handler of ``api_key``, its module imported on first use; None for keys we do not serve."""
    handler = HANDLERS.get(api_key)
    if handler is None and api_key in HANDLER_INDEX:
        importlib.import_module(f"mockbroker.handlers.{HANDLER_INDEX[api_key][0]}")
        handler = HANDLERS.get(api_key)
    return handler


TELEMETRY_APIS = (71, 72)  # GetTelemetrySubscriptions, PushTelemetry: advertised only with a receiver


def api_versions_list(telemetry: bool = True) -> list[tuple[int, int, int]]:
    """Every API we serve and its versions; without ``telemetry`` (no client telemetry receiver, the broker
    config ``mock.telemetry.receiver``) less the two telemetry APIs, as Kafka's ApiVersionsResponse leaves
    them out when no ClientTelemetry metrics reporter is configured."""
    return [(key, lo, hi) for key, (_module, lo, hi) in sorted(HANDLER_INDEX.items())
            if telemetry or key not in TELEMETRY_APIS]


_api_version_keys: dict[bool, EncodedList] = {}  # the ranges never change in a running process


def api_version_keys(telemetry: bool = True) -> EncodedList:
    """:func:`api_versions_list` as ApiVersionsResponse entries, built once (with and without the telemetry
    APIs) and keeping their encoding (an EncodedList): every connection's first request answers with them."""
    keys = _api_version_keys.get(telemetry)
    if keys is None:
        resp = api.response_module(18)
        keys = _api_version_keys[telemetry] = EncodedList(
            resp.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in api_versions_list(telemetry))
    return keys
