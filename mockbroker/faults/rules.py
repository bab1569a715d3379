"""Fault rules: what requests they match and what they do to them.

One mechanism behind the Python API, scenario files and the HTTP control API.  A rule matches on
API keys and versions, broker, topic, partition, group id, transactional id and client id, counts
matching requests (``nth``: act from the n-th match on; ``times``: act that many times, None = until
removed), may act only with a seeded probability or inside a time window, and has one action:

    error       answer with an error code (``scope`` "request": top level, or "partition": only the
                matching partitions; nothing is handled, so no state changes)
    delay       handle, then hold the answer ``delay_ms`` (when several delay rules act on one request, their
                delays add up: a latency preset's, faults.latency, and a test's own)
    drop_before close the connection before handling
    drop_after  handle (state changes happen), then close the connection instead of answering
    no_reply    never answer: the connection hangs until the client gives up
    throttle    answer with ``throttle_ms`` as the throttle time and, as Kafka does, mute the
                connection that long (older request versions: delay the answer instead)
    corrupt_crc flip a bit in the CRC of the first record batch of a Fetch answer
    truncate    send only the first half of the answer's bytes, then close the connection
    observe     do nothing; only count hits (tests wait for them)
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from mockbroker.errors import ErrorCode
from mockbroker.faults.facts import Facts
from mockbroker.nearest import hint
from mockbroker.protocol import api

ACTIONS = ("error", "delay", "drop_before", "drop_after", "no_reply", "throttle", "corrupt_crc", "truncate",
           "observe")


FIELDS = ("action", "api", "apis", "version", "versions", "broker", "brokers", "topic", "topics", "partition",
          "partitions", "group", "groups", "transactional_id", "transactional_ids", "client_id", "nth", "times",
          "probability", "seed", "after_ms", "until_ms", "error", "scope", "delay_ms", "throttle_ms", "name")


@cache
def api_names() -> dict[str, int]:
    """Every API's name (Kafka's: ``Produce``, ``EndTxn``, ...) to its key."""
    return {entry[0]: key for key, entry in api.APIS.items()}


@cache
def _folded_api_names() -> dict[str, str]:
    return {name.casefold(): name for name in api_names()}


def api_name_of(value: str) -> str:
    """Kafka's spelling of an API name given in any case; ValueError naming the nearest for an unknown one."""
    found = _folded_api_names().get(value.casefold())
    if found is None:
        raise ValueError(f"unknown API {value!r}{hint(value, api_names(), prefix=True)}")
    return found


def unknown_action(action: Any) -> str:
    """``unknown action 'dealy' (did you mean 'delay'?)``, or the list of actions when none is close."""
    return f"unknown action {action!r}" + (hint(str(action), ACTIONS) or f" (one of {', '.join(ACTIONS)})")


def _api_key(value: int | str) -> int:
    if isinstance(value, int):
        return value
    if value.isdigit():
        return int(value)
    return api_names()[api_name_of(value)]


def _error_code(value: int | str) -> int:
    if isinstance(value, int):
        return value
    try:
        return int(ErrorCode[value.upper()])
    except KeyError:
        names = [e.name for e in ErrorCode]
        raise ValueError(f"unknown error code {value!r}{hint(value, names, prefix=True)}") from None


@dataclass
class FaultRule:
    action: str
    apis: set[int] | None = None
    versions: set[int] | None = None
    brokers: set[int] | None = None
    topics: set[str] | None = None
    partitions: set[int] | None = None
    groups: set[str] | None = None
    transactional_ids: set[str] | None = None
    client_id: str | None = None  # a regular expression, matched in full
    nth: int = 1
    times: int | None = 1
    probability: float = 1.0
    seed: int | None = None
    after_ms: int = 0  # active this long after the rule was added ...
    until_ms: int | None = None  # ... and until this long after
    error: int = 0
    scope: str = "request"
    delay_ms: int = 0
    throttle_ms: int = 0
    name: str = ""
    id: int = 0
    added_ms: int = 0
    matched: int = 0
    hits: int = 0
    _rng: random.Random = field(default_factory=random.Random, repr=False)
    _client: re.Pattern[str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(unknown_action(self.action))
        if self.action == "error" and not self.error:
            raise ValueError("an error rule needs an error code")
        if self.scope not in ("request", "partition"):
            raise ValueError(f"scope must be 'request' or 'partition', not {self.scope!r}")
        if self.nth < 1 or (self.times is not None and self.times < 1):
            raise ValueError("nth and times must be at least 1")
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError("probability must be between 0 and 1")
        self._rng = random.Random(self.seed)
        self._client = re.compile(self.client_id) if self.client_id is not None else None

    @property
    def active(self) -> bool:
        return self.times is None or self.hits < self.times

    def matches(self, api_key: int, version: int, broker: int, client_id: str | None, facts: Facts,
                now_ms: int) -> bool:
        if self.apis is not None and api_key not in self.apis:
            return False
        if self.versions is not None and version not in self.versions:
            return False
        if self.brokers is not None and broker not in self.brokers:
            return False
        if self._client is not None and not self._client.fullmatch(client_id or ""):
            return False
        if self.groups is not None and not (self.groups & facts.group_ids):
            return False
        if self.transactional_ids is not None and facts.transactional_id not in self.transactional_ids:
            return False
        if self.topics is not None or self.partitions is not None:
            if not self.partitions_hit(facts):
                return False
        elapsed = now_ms - self.added_ms
        return elapsed >= self.after_ms and (self.until_ms is None or elapsed < self.until_ms)

    def partitions_hit(self, facts: Facts) -> dict[str, set[int]]:
        """The request's topic partitions this rule names (all of a topic when no partitions are listed)."""
        out: dict[str, set[int]] = {}
        for topic, parts in facts.topics.items():
            if self.topics is not None and topic not in self.topics:
                continue
            chosen = parts if self.partitions is None else parts & self.partitions
            if chosen or (not parts and self.partitions is None):
                out[topic] = set(chosen)
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "action": self.action, "hits": self.hits,
                               "matched": self.matched, "active": self.active, "times": self.times}
        for key in ("apis", "versions", "brokers", "topics", "partitions", "groups", "transactional_ids"):
            value = getattr(self, key)
            if value is not None:
                out[key] = sorted(value)
        for key in ("client_id", "error", "scope", "delay_ms", "throttle_ms", "nth", "probability", "after_ms",
                    "until_ms"):
            out[key] = getattr(self, key)
        return out


def name_problems(spec: dict[str, Any]) -> list[tuple[str | None, str]]:
    """Unknown fields, API names, error codes and actions, each with the nearest known name."""
    problems: list[tuple[str | None, str]] = []
    for key in spec:
        if key not in FIELDS:
            problems.append((str(key), f"unknown fault field {key!r}{hint(str(key), FIELDS)}"))
    for key, convert in (("api", _api_key), ("apis", _api_key), ("error", _error_code)):
        if key not in spec:
            continue
        given = spec[key]
        for value in given if key == "apis" and isinstance(given, list) else [given]:
            try:
                convert(value)
            except ValueError as exc:
                problems.append((key, str(exc)))
            except (AttributeError, TypeError):
                problems.append((key, f"{key} must be a name or a number, not {value!r}"))
    action = spec.get("action")
    if isinstance(action, str) and action not in ACTIONS:
        problems.append(("action", unknown_action(action)))
    return problems


def fault_problems(spec: dict[str, Any]) -> list[tuple[str | None, str]]:
    """Every problem of a fault rule's plain data, each with the field it is about (None: the rule as a
    whole): unknown fields, API names, error codes and actions (each with the nearest known name), else
    what :class:`FaultRule` refuses.  Empty when :func:`rule_from_dict` builds the rule."""
    problems = name_problems(spec)
    if not problems:
        try:
            rule_from_dict(spec)
        except (ValueError, TypeError) as exc:
            problems.append((None, str(exc)))
    return problems


def rule_from_dict(spec: dict[str, Any]) -> FaultRule:
    """A rule from plain data (YAML, JSON, keyword arguments): API and error names are accepted.  A wrong
    name raises ValueError naming every wrong name and the nearest known ones (``; ``-separated)."""
    problems = name_problems(spec)
    if problems:
        raise ValueError("; ".join(message for _, message in problems))
    data = dict(spec)

    def many(single: str, plural: str, convert: Any = lambda v: v) -> set[Any] | None:
        values: list[Any] = []
        if single in data:
            values.append(data.pop(single))
        if plural in data:
            values.extend(data.pop(plural))
        return {convert(v) for v in values} if values else None

    kwargs: dict[str, Any] = {
        "apis": many("api", "apis", _api_key), "versions": many("version", "versions", int),
        "brokers": many("broker", "brokers", int), "topics": many("topic", "topics", str),
        "partitions": many("partition", "partitions", int), "groups": many("group", "groups", str),
        "transactional_ids": many("transactional_id", "transactional_ids", str),
    }
    if "error" in data:
        data["error"] = _error_code(data["error"])
    if "action" not in data:
        data["action"] = "error" if "error" in data else "observe"
    kwargs.update(data)
    return FaultRule(**kwargs)
