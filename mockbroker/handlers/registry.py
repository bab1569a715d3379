"""The handler registry: each handler module registers its API key, version range and function.

ApiVersions is answered from these registrations, so what we advertise is exactly what we serve.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mockbroker.protocol import api

NO_RESPONSE = object()  # a handler's answer when Kafka sends nothing back (Produce with acks=0)


@dataclass(frozen=True)
class Handler:
    api_key: int
    min_version: int
    max_version: int
    fn: Callable[..., Any]


HANDLERS: dict[int, Handler] = {}


def register(api_key: int, min_version: int, max_version: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    lo, hi = api.version_range(api_key)
    if not lo <= min_version <= max_version <= hi:
        raise ValueError(f"api {api_key}: v{min_version}-{max_version} is outside the codec's {lo}-{hi}")

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        HANDLERS[api_key] = Handler(api_key, min_version, max_version, fn)
        return fn

    return wrap


def api_versions_list() -> list[tuple[int, int, int]]:
    return [(h.api_key, h.min_version, h.max_version) for h in sorted(HANDLERS.values(), key=lambda h: h.api_key)]
