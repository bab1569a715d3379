"""Faults for the Schema Registry, like the broker's: a rule matches requests by method and path (a
regular expression over the path after the host) and delays them (``latency_ms``), answers them with an
HTTP error in Confluent's body (``status`` 5xx / 409 / 422 ..., ``error_code``), or both, for ``times``
matching requests (None: until removed).  Unreachable is not a rule: the registry stops listening
(``down``) and listens again on the same port (``up``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

FIELDS = ("name", "method", "path", "status", "error_code", "message", "latency_ms", "times")


class FaultSpecError(ValueError):
    """A fault rule that cannot be: one line naming the field."""


@dataclass
class RegistryFault:
    name: str
    status: int | None = None
    error_code: int | None = None
    message: str | None = None
    latency_ms: int = 0
    times: int | None = 1
    method: str | None = None
    path: str | None = None
    hits: int = 0
    _pattern: re.Pattern[str] | None = field(default=None, repr=False)

    @classmethod
    def from_dict(cls, spec: dict[str, Any], default_name: str) -> RegistryFault:
        unknown = sorted(set(spec) - set(FIELDS))
        if unknown:
            raise FaultSpecError(f"unknown schema registry fault field {unknown[0]!r}; fields: {', '.join(FIELDS)}")
        fault = cls(name=str(spec.get("name") or default_name))
        status = spec.get("status")
        if status is not None and (not isinstance(status, int) or not 400 <= status <= 599):
            raise FaultSpecError(f"status must be an HTTP error status 400-599, not {status!r}")
        latency = spec.get("latency_ms", 0)
        if not isinstance(latency, int) or latency < 0:
            raise FaultSpecError(f"latency_ms must be a whole number of milliseconds >= 0, not {latency!r}")
        if status is None and not latency:
            raise FaultSpecError("a schema registry fault needs status (an HTTP error to answer) or latency_ms")
        times = spec.get("times", 1)
        if times is not None and (not isinstance(times, int) or times < 1):
            raise FaultSpecError(f"times must be a count >= 1 or null (until removed), not {times!r}")
        code = spec.get("error_code")
        if code is not None and not isinstance(code, int):
            raise FaultSpecError(f"error_code must be a number such as 50001, not {code!r}")
        method = spec.get("method")
        if method is not None and str(method).upper() not in ("GET", "POST", "PUT", "DELETE"):
            raise FaultSpecError(f"method must be GET, POST, PUT or DELETE, not {method!r}")
        path = spec.get("path")
        try:
            pattern = re.compile(str(path)) if path is not None else None
        except re.error as error:
            raise FaultSpecError(f"path is not a regular expression: {error}") from None
        fault.status, fault.error_code, fault.latency_ms, fault.times = status, code, latency, times
        fault.message = None if spec.get("message") is None else str(spec["message"])
        fault.method, fault.path, fault._pattern = method and str(method).upper(), path, pattern
        return fault

    def matches(self, method: str, path: str) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        if self.method is not None and self.method != method:
            return False
        return self._pattern is None or self._pattern.search(path) is not None

    @property
    def active(self) -> bool:
        return self.times is None or self.hits < self.times

    def body(self) -> dict[str, Any]:
        assert self.status is not None
        return {"error_code": self.error_code or self.status,
                "message": self.message or f"injected by mockbroker fault {self.name!r}"}

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "method": self.method, "path": self.path, "status": self.status,
                "error_code": self.error_code, "message": self.message, "latency_ms": self.latency_ms,
                "times": self.times, "hits": self.hits, "active": self.active}
