"""Group configs (config resource type GROUP, 32): Kafka 4.x's GroupConfig, stored per group id.

A group need not exist to have configs.  Each name defaults from a broker config (its synonym,
``consumer.session.timeout.ms`` -> ``group.consumer.session.timeout.ms``); DescribeConfigs lists every
group config with source GROUP_CONFIG (8) when set on the group, else that of the broker synonym.

Validation follows GroupConfig.validate: an unknown name -> INVALID_CONFIG "Unknown group config
name: X"; a value of the wrong type or below the ConfigDef bound -> INVALID_CONFIG "Invalid value V for
configuration N: ..."; session timeouts and heartbeat intervals must lie within the broker's
``group.<type>.min/max.*`` bounds and a session timeout must exceed its heartbeat interval.  Kafka fills
the names not set from GroupConfig's static defaults before checking; the mock takes the broker's
current values, so the mock's shorter defaults (config.BROKER_DEFAULTS) check consistently.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state import config_catalogue as cat

GROUP_CONFIG_SOURCE = 8  # DescribeConfigs ConfigSource GROUP_CONFIG


@dataclass(frozen=True, slots=True)
class GroupSpec:
    type: int
    default: str  # Kafka's default, when the broker synonym is not set either
    doc: str
    synonym: str | None = None  # the broker config it defaults from
    at_least: int | None = None  # ConfigDef's Range.atLeast
    bounds: tuple[str, str] | None = None  # broker configs holding the minimum and maximum
    choices: tuple[str, ...] = ()


GROUP_CONFIGS: dict[str, GroupSpec] = {
    "consumer.session.timeout.ms": GroupSpec(
        cat.INT, "45000", "Consumer group session timeout.", "group.consumer.session.timeout.ms", 1,
        ("group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms")),
    "consumer.heartbeat.interval.ms": GroupSpec(
        cat.INT, "5000", "Consumer group heartbeat interval.", "group.consumer.heartbeat.interval.ms", 1,
        ("group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms")),
    "share.session.timeout.ms": GroupSpec(
        cat.INT, "45000", "Share group session timeout.", "group.share.session.timeout.ms", 1,
        ("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms")),
    "share.heartbeat.interval.ms": GroupSpec(
        cat.INT, "5000", "Share group heartbeat interval.", "group.share.heartbeat.interval.ms", 1,
        ("group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms")),
    "share.record.lock.duration.ms": GroupSpec(
        cat.INT, "30000", "Share group record acquisition lock duration.", "group.share.record.lock.duration.ms",
        1000, ("group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms")),
    "share.auto.offset.reset": GroupSpec(cat.STRING, "latest", "Where a share-partition starts: latest, earliest "
                                         "or by_duration:<ISO-8601 duration>."),
    "share.isolation.level": GroupSpec(cat.STRING, "read_uncommitted", "Records a share group reads.",
                                       choices=("read_committed", "read_uncommitted")),
    "streams.session.timeout.ms": GroupSpec(
        cat.INT, "45000", "Streams group session timeout.", "group.streams.session.timeout.ms", 1,
        ("group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms")),
    "streams.heartbeat.interval.ms": GroupSpec(
        cat.INT, "5000", "Streams group heartbeat interval.", "group.streams.heartbeat.interval.ms", 1,
        ("group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms")),
    "streams.num.standby.replicas": GroupSpec(
        cat.INT, "0", "Standby replicas per task of a streams group.", "group.streams.num.standby.replicas", 0,
        ("", "group.streams.max.standby.replicas")),
}
# a session timeout must be greater than its heartbeat interval
_PAIRS = (("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
          ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
          ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"))


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_CONFIG, message)


def _parse(name: str, value: str) -> int | str:
    spec = GROUP_CONFIGS[name]
    text = value.strip()
    if spec.type == cat.INT:
        try:
            number = int(text)
        except ValueError:
            raise _invalid(f"Invalid value {value} for configuration {name}: Not a number of type INT") from None
        if not -2**31 <= number < 2**31:
            raise _invalid(f"Invalid value {value} for configuration {name}: Not a number of type INT")
        if spec.at_least is not None and number < spec.at_least:
            raise _invalid(f"Invalid value {number} for configuration {name}: Value must be at least {spec.at_least}")
        return number
    if spec.choices and text not in spec.choices:
        raise _invalid(f"Invalid value {value} for configuration {name}: String must be one of: "
                       f"{', '.join(spec.choices)}")
    if name == "share.auto.offset.reset":
        lowered = text.lower()
        if lowered not in ("latest", "earliest") and not (lowered.startswith("by_duration:")
                                                         and lowered[len("by_duration:"):].startswith("p")):
            raise _invalid(f"Invalid value {value} for configuration {name}: Invalid value `{value}` for "
                           f"configuration {name}. The value must be either 'earliest', 'latest' or of the "
                           "format 'by_duration:<PnDTnHnMn.nS.>'.")
    return text


class GroupConfigs:
    """Every group's config overrides, and their checks against the broker's bounds."""

    def __init__(self, broker_value: Any) -> None:
        # broker_value(name) -> the broker config's current value as text, or None
        self.broker_value = broker_value
        self.overrides: dict[str, dict[str, str]] = {}

    def _broker_int(self, name: str) -> int | None:
        if not name:
            return None
        text = self.broker_value(name)
        if text is None:
            spec = cat.BROKER_CONFIGS.get(name)
            text = spec.default if spec else None
        try:
            return int(text) if text not in (None, "") else None
        except ValueError:  # a bound the broker was started with that is no number: no bound
            return None

    def default(self, name: str) -> str:
        spec = GROUP_CONFIGS[name]
        if spec.synonym:
            text = self.broker_value(spec.synonym)
            if text is not None:
                return str(text)
        return spec.default

    def validate(self, props: Mapping[str, str]) -> None:
        """GroupConfig.validate over a group's whole set of overrides (unset names take the broker's)."""
        unknown = [name for name in props if name not in GROUP_CONFIGS]
        if unknown:
            raise _invalid(f"Unknown group config name: {unknown[0]}")
        values = {name: _parse(name, props[name] if name in props else self.default(name)) for name in GROUP_CONFIGS}
        for name, spec in GROUP_CONFIGS.items():
            if spec.bounds is None:
                continue
            low, high = (self._broker_int(b) for b in spec.bounds)
            if low is not None and int(values[name]) < low:
                raise _invalid(f"{name} must be greater than or equal to {spec.bounds[0]}")
            if high is not None and int(values[name]) > high:
                raise _invalid(f"{name} must be less than or equal to {spec.bounds[1]}")
        for session, heartbeat in _PAIRS:
            if int(values[session]) <= int(values[heartbeat]):
                raise _invalid(f"{session} must be greater than {heartbeat}")

    def of(self, group_id: str) -> dict[str, str]:
        return dict(self.overrides.get(group_id, {}))

    def replace(self, group_id: str, props: Mapping[str, str], validate_only: bool = False) -> None:
        """Make ``props`` the group's whole set of overrides (after the checks)."""
        if group_id == "":
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
        self.validate(props)
        if validate_only:
            return
        if props:
            self.overrides[group_id] = {k: str(v).strip() for k, v in props.items()}
        else:
            self.overrides.pop(group_id, None)

    def value(self, group_id: str, name: str) -> str:
        """The value a group acts on, as text: its override, else the broker synonym's, else Kafka's default."""
        override = self.overrides.get(group_id, {}).get(name)
        return override if override is not None else self.default(name)

    def int_value(self, group_id: str, name: str) -> int:
        return int(self.value(group_id, name))

    def describe(self, group_id: str, keys: Iterable[str] | None, broker_synonyms: Any,
                 documentation: bool) -> list[tuple[str, str | None, int, int, str | None, list[Any]]]:
        """(name, value, source, type, doc, synonyms) of every group config; ``broker_synonyms(name)`` gives
        a broker config's layers as (name, value, source)."""
        if group_id == "":
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
        own = self.overrides.get(group_id, {})
        names = sorted(GROUP_CONFIGS)
        if keys:
            wanted = set(keys)
            names = [n for n in names if n in wanted]
        out = []
        for name in names:
            spec = GROUP_CONFIGS[name]
            synonyms: list[tuple[str, str | None, int]] = []
            if name in own:
                synonyms.append((name, own[name], GROUP_CONFIG_SOURCE))
            if spec.synonym:
                synonyms.extend(broker_synonyms(spec.synonym))
            value, source = (synonyms[0][1], synonyms[0][2]) if synonyms else (spec.default, cat.DEFAULT_CONFIG)
            out.append((name, value, source, spec.type, spec.doc if documentation else None, synonyms))
        return out
