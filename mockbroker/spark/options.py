"""Options of the ``mockbroker`` Spark data source, named and checked as Spark's built-in Kafka source does.

Spark hands options over case-insensitively (keys lower-cased), so they are read with ``.get`` on the
lower-cased name.  Offsets JSON is ``{"topic": {"partition": offset}}`` with -2 for earliest and -1 for
latest; offset dicts this module builds are canonical (topics and partitions in sorted order) because
Spark compares streaming offsets as JSON text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mockbroker.client import EARLIEST, LATEST, KafkaClient

Offsets = dict[str, dict[str, int]]  # topic -> partition (as text) -> offset


class OptionError(ValueError):
    """An option is missing, unknown or malformed (the message says which)."""


def _get(options: Mapping[str, str], name: str) -> str | None:
    value = options.get(name.lower())
    if value is None:
        value = options.get(name)
    return value


@dataclass
class SourceOptions:
    bootstrap: str
    assign: dict[str, list[int]] | None = None
    subscribe: list[str] | None = None
    pattern: str | None = None
    starting: str | None = None
    ending: str | None = None
    starting_timestamp: int | None = None
    starting_by_timestamp: dict[str, dict[str, int]] | None = None
    max_offsets_per_trigger: int | None = None
    min_partitions: int = 0
    include_headers: bool = False
    fail_on_data_loss: bool = True
    isolation_level: int = 0
    extra: dict[str, str] = field(default_factory=dict)

    def client(self) -> KafkaClient:
        return KafkaClient(self.bootstrap, client_id="mockbroker-spark")

    def topic_partitions(self, client: KafkaClient) -> list[tuple[str, int]]:
        """The partitions this source reads, from assign, subscribe or subscribePattern."""
        if self.assign is not None:
            return sorted((t, p) for t, parts in self.assign.items() for p in parts)
        known = client.topics()
        if self.subscribe is not None:
            names = [t for t in self.subscribe if t in known]
        else:
            regex = re.compile(self.pattern or "")
            names = [t for t in known if regex.fullmatch(t)]
        return sorted((t, p) for t in names for p in range(known[t]))


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _get(options, name)
    if raw is None:
        return default
    if raw.lower() not in ("true", "false"):
        raise OptionError(f"{name} must be true or false, not {raw!r}")
    return raw.lower() == "true"


def _int(options: Mapping[str, str], name: str) -> int | None:
    raw = _get(options, name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise OptionError(f"{name} must be a whole number, not {raw!r}") from None


def _offsets_json(name: str, raw: str) -> dict[str, dict[str, int]]:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        raise OptionError(f"{name} must be 'earliest', 'latest' or JSON like {{\"t\":{{\"0\":-2}}}}, "
                          f"not {raw!r}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise OptionError(f"{name}: expected {{\"topic\": {{\"partition\": offset}}}}, got {raw!r}")
    return {t: {str(int(p)): int(o) for p, o in parts.items()} for t, parts in data.items()}


def _parse_topics(options: Mapping[str, str], kind: str, out: SourceOptions) -> None:
    """Fill ``out``'s assign, subscribe or pattern from the one topic option ``kind`` given."""
    if kind == "assign":
        assigned = _get(options, "assign") or ""
        try:
            data = json.loads(assigned)
            out.assign = {str(t): sorted(int(p) for p in parts) for t, parts in data.items()}
        except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
            raise OptionError(f"assign must be JSON like {{\"topic\":[0,1]}}, not {assigned!r}") from None
    elif kind == "subscribe":
        out.subscribe = [t.strip() for t in (_get(options, "subscribe") or "").split(",") if t.strip()]
        if not out.subscribe:
            raise OptionError("subscribe names no topic")
    else:
        out.pattern = _get(options, "subscribePattern")
        try:
            re.compile(out.pattern or "")
        except re.error as exc:
            raise OptionError(f"subscribePattern is not a regular expression: {exc}") from None


def parse_source(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    bootstrap = _get(options, "kafka.bootstrap.servers")
    if not bootstrap:
        raise OptionError("option kafka.bootstrap.servers is required")
    chosen = [n for n in ("assign", "subscribe", "subscribePattern") if _get(options, n) is not None]
    if len(chosen) != 1:
        raise OptionError("give exactly one of assign, subscribe and subscribePattern"
                          + (f" (got {', '.join(chosen)})" if chosen else ""))
    out = SourceOptions(bootstrap=bootstrap)
    _parse_topics(options, chosen[0], out)
    out.starting = _get(options, "startingOffsets")
    out.ending = _get(options, "endingOffsets")
    if out.ending is not None and streaming:
        raise OptionError("endingOffsets is for batch queries only")
    if out.ending == "earliest" or (out.ending is not None and out.ending != "latest"
                                    and any(o == EARLIEST for p in _offsets_json("endingOffsets", out.ending).values()
                                            for o in p.values())):
        raise OptionError("endingOffsets cannot be earliest (-2)")
    if out.starting == "latest" and not streaming:
        raise OptionError("startingOffsets latest is for streaming queries only, as in Spark's Kafka source")
    for name in ("startingOffsets", "endingOffsets"):
        raw = _get(options, name)
        if raw not in (None, "earliest", "latest"):
            _offsets_json(name, raw or "")
    out.starting_timestamp = _int(options, "startingTimestamp")
    raw = _get(options, "startingOffsetsByTimestamp")
    if raw is not None:
        out.starting_by_timestamp = _offsets_json("startingOffsetsByTimestamp", raw)
    out.max_offsets_per_trigger = _int(options, "maxOffsetsPerTrigger")
    if out.max_offsets_per_trigger is not None and out.max_offsets_per_trigger < 1:
        raise OptionError("maxOffsetsPerTrigger must be at least 1")
    out.min_partitions = _int(options, "minPartitions") or 0
    out.include_headers = _bool(options, "includeHeaders", False)
    out.fail_on_data_loss = _bool(options, "failOnDataLoss", True)
    level = (_get(options, "kafka.isolation.level") or "read_uncommitted").lower()
    if level not in ("read_uncommitted", "read_committed"):
        raise OptionError(f"kafka.isolation.level must be read_uncommitted or read_committed, not {level!r}")
    out.isolation_level = 1 if level == "read_committed" else 0
    return out


def resolve_offsets(opts: SourceOptions, client: KafkaClient, spec: str | None, default: str,
                    timestamps: bool = False) -> Offsets:
    """Concrete offsets for every partition of the source from an option value (earliest, latest, JSON with
    -2/-1) or, when ``timestamps``, from startingTimestamp / startingOffsetsByTimestamp."""
    out: Offsets = {}
    explicit = _offsets_json("offsets", spec) if spec not in (None, "earliest", "latest") else {}
    for topic, partition in opts.topic_partitions(client):
        wanted: int | None = None
        if timestamps and opts.starting_by_timestamp is not None:
            ts = opts.starting_by_timestamp.get(topic, {}).get(str(partition))
            if ts is None:
                raise OptionError(f"startingOffsetsByTimestamp has no timestamp for {topic}-{partition}")
            wanted = _by_timestamp(client, topic, partition, ts, opts.isolation_level)
        elif timestamps and opts.starting_timestamp is not None:
            wanted = _by_timestamp(client, topic, partition, opts.starting_timestamp, opts.isolation_level)
        else:
            chosen = explicit.get(topic, {}).get(str(partition)) if explicit else None
            if explicit and chosen is None:
                if spec is not None and topic in explicit:
                    raise OptionError(f"offsets JSON {spec} has no offset for {topic}-{partition}")
                chosen = EARLIEST if default == "earliest" else LATEST
            if chosen is None:
                chosen = EARLIEST if (spec or default) == "earliest" else LATEST
            wanted = chosen
        if wanted == LATEST:
            wanted = client.latest_offset(topic, partition, opts.isolation_level)
        elif wanted == EARLIEST:
            wanted = client.list_offset(topic, partition, EARLIEST, opts.isolation_level)
        out.setdefault(topic, {})[str(partition)] = wanted
    return canonical(out)


def _by_timestamp(client: KafkaClient, topic: str, partition: int, ts: int, isolation: int) -> int:
    found = client.list_offset(topic, partition, ts, isolation)
    return found if found >= 0 else client.latest_offset(topic, partition, isolation)


def canonical(offsets: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {t: {p: int(offsets[t][p]) for p in sorted(offsets[t], key=int)} for t in sorted(offsets)}


def flat(offsets: Mapping[str, Mapping[str, Any]]) -> dict[tuple[str, int], int]:
    return {(t, int(p)): int(o) for t, parts in offsets.items() for p, o in parts.items()}
