"""DescribeConfigs / AlterConfigs / IncrementalAlterConfigs on topics and brokers, as Kafka does them.

Topic configs: a topic's overrides (``TopicConfig.overrides``, source DYNAMIC_TOPIC_CONFIG) over
its broker synonym (``retention.ms`` -> ``log.retention.ms``), which itself comes from a dynamic
per-broker value (DYNAMIC_BROKER_CONFIG), the cluster-wide dynamic default set on broker ""
(DYNAMIC_DEFAULT_BROKER_CONFIG), what the cluster was started with (STATIC_BROKER_CONFIG) or the
default (DEFAULT_CONFIG).  Synonyms are listed in that order, as Kafka lists them.

Broker configs: the mock's brokers share one ``BrokerConfig``, so a dynamic value acts for the whole
cluster: a per-broker value (lowest broker id first) wins over the cluster-wide default, which wins
over the static value.  Read-only configs are refused with INVALID_REQUEST (Kafka: "Cannot update
these configs dynamically"), as are values of the wrong type (KAFKA-13609).  Names Kafka does not
define are accepted and stored, as Kafka does for custom broker configs (its controller checks
only the broker id of a BROKER resource), though ``MockCluster(config=...)`` refuses them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state import broker_loggers
from mockbroker.state import config_catalogue as cat
from mockbroker.state.client_metrics import CLIENT_METRICS_SOURCE, ClientMetrics
from mockbroker.state.config import BROKER_DEFAULTS, BrokerConfig
from mockbroker.state.group_configs import GROUP_CONFIGS, GroupConfigs
from mockbroker.state.topic_rules import KAFKA_TOPIC_CONFIGS, check_topic_config_value, validate_topic_name

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState, Topic

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
CLIENT_METRICS, GROUP = 16, 32  # mockbroker.state.client_metrics, mockbroker.state.group_configs
_TOPIC_OF_BROKER = {spec.synonym: name for name, spec in cat.TOPIC_CONFIGS.items() if spec.synonym}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
# broker configs that decide where a topic's segments roll (mockbroker.state.segments)
_SEGMENT_CONFIGS = frozenset({"log.segment.bytes", "log.roll.ms", "log.roll.hours", "log.cleanup.policy",
                              "log.cleaner.max.compaction.lag.ms"})


@dataclass(slots=True)
class ConfigEntry:
    """One config as DescribeConfigs reports it (synonyms: (name, value, source))."""

    name: str
    value: str | None
    source: int
    read_only: bool = False
    is_sensitive: bool = False
    config_type: int = cat.UNKNOWN
    documentation: str | None = None
    synonyms: list[tuple[str, str | None, int]] = field(default_factory=list)

    @property
    def is_default(self) -> bool:
        return self.source == cat.DEFAULT_CONFIG


def _broker_default(name: str) -> str | None:
    if name in BROKER_DEFAULTS:
        return cat.config_text(BROKER_DEFAULTS[name][0])
    spec = cat.broker_spec(name)
    return spec.default if spec else None


def _is_sensitive(name: str) -> bool:
    spec = cat.broker_spec(name)
    return bool(spec and spec.sensitive)


def _check_type(name: str, value: str, kind: int) -> bool:
    text = value.strip()
    try:
        if kind in (cat.INT, cat.LONG, cat.SHORT):
            int(text)
        elif kind == cat.DOUBLE:
            float(text)
        elif kind == cat.BOOLEAN:
            return text.lower() in ("true", "false")
    except ValueError:
        return False
    return True


def _apply_ops(current: dict[str, str], ops: Iterable[tuple[str, int, str | None]],
               default_of: Any, is_list: Any = cat.is_list) -> dict[str, str]:
    """IncrementalAlterConfigs operations on a copy of a resource's overrides (Kafka's
    prepareIncrementalConfigs: APPEND/SUBTRACT start from the override, else the default)."""
    out = dict(current)
    for name, op, value in ops:
        if op == SET:
            out[name] = str(value)
        elif op == DELETE:
            out.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            verb = "append" if op == APPEND else "subtract"
            if not is_list(name):
                if name not in cat.TOPIC_CONFIGS and cat.broker_spec(name) is None and is_list is cat.is_list:
                    raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {name}")
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {name}")
            base = out.get(name, default_of(name) or "")
            old = [v for v in base.split(",") if v] if op == APPEND else base.split(",")
            given = str(value).split(",")
            new = old + [v for v in given if v not in old] if op == APPEND else [v for v in old if v not in given]
            out[name] = ",".join(new)
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")
    return out


def _refuse(problem: str, names: list[str]) -> None:
    """INVALID_REQUEST naming ``names``, as Kafka's ConfigException does (a Java set), when there are any."""
    if names:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"{problem}: [{', '.join(sorted(names))}]")


def check_request_resource(configs: list[tuple[str, int, str | None]]) -> None:
    """Kafka's broker-side checks before anything else: duplicate names, null values."""
    names = [c[0] for c in configs]
    if len(set(names)) != len(names):
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [name for name, op, value in configs if value is None and op != DELETE]
    if nulls:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))


class ConfigAdmin:
    """The dynamic config layers of a cluster, and the three config APIs over them."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.dynamic_default: dict[str, str] = {}
        self.dynamic_broker: dict[int, dict[str, str]] = {}
        self.group_configs = GroupConfigs(lambda name: cat.config_text(self.config.get(name)))
        self.client_metrics = ClientMetrics()

    @property
    def config(self) -> BrokerConfig:
        return self.cluster.config

    # -- broker layers ------------------------------------------------------------------------
    def _broker_synonyms(self, name: str, broker_id: int) -> list[tuple[str, str | None, int]]:
        out: list[tuple[str, str | None, int]] = []
        hide = _is_sensitive(name)
        layers = (
            (self.dynamic_broker.get(broker_id, {}).get(name), cat.DYNAMIC_BROKER_CONFIG),
            (self.dynamic_default.get(name), cat.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (cat.config_text(self.config.static[name]) if name in self.config.static else None,
             cat.STATIC_BROKER_CONFIG),
            (_broker_default(name), cat.DEFAULT_CONFIG),
        )
        for value, source in layers:
            if value is not None:
                out.append((name, None if hide else value, source))
        return out

    def _effective(self, name: str) -> str | None:
        for broker_id in sorted(self.dynamic_broker):
            if name in self.dynamic_broker[broker_id]:
                return self.dynamic_broker[broker_id][name]
        return self.dynamic_default.get(name)

    def _check_broker_node(self, name: str, broker_id: int) -> int | None:
        if name == "":
            return None
        try:
            requested = int(name)
        except ValueError:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
        if requested != broker_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Unexpected broker id, expected {broker_id}, but received {name}")
        return requested

    def _validate_broker(self, props: dict[str, str], cluster_default: bool) -> None:
        """Kafka's checks of a dynamic broker config change (DynamicBrokerConfig.validateConfigs, in its
        order), then the values'."""
        specs = {n: cat.broker_spec(n) for n in props}
        static = [n for n, spec in specs.items() if spec is not None and not spec.dynamic]
        _refuse("Cannot update these configs dynamically", static)
        _refuse("These security configs can be dynamically updated only per-listener using the listener prefix",
                [n for n in props if n in cat.SSL_PER_LISTENER])
        if cluster_default:
            _refuse("Cannot update these configs at default cluster level, broker id must be specified",
                    [n for n in props if cat.per_broker(n)])
        for name, value in props.items():
            spec = specs[name]
            if spec is not None and not _check_type(name, value, spec.type):
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Invalid value {value} for configuration {name}")
            try:
                BrokerConfig({name: value}, strict=False)  # the mock's own checks of the values it acts on
                topic_name = _TOPIC_OF_BROKER.get(name)
                if topic_name is not None:  # the topic config's checks (cleanup policies, ranges)
                    check_topic_config_value(topic_name, value, KAFKA_TOPIC_CONFIGS.get(topic_name, str))
            except KafkaError as exc:
                raise KafkaError(ErrorCode.INVALID_REQUEST, exc.message) from None

    def _set_broker_layer(self, node: int | None, props: dict[str, str]) -> None:
        old = self.dynamic_default if node is None else self.dynamic_broker.get(node, {})
        if any(name in _SEGMENT_CONFIGS for name in set(old) | set(props)):  # rolls so far keep the old configs
            self.cluster.log_maintenance.cut_segments(self.cluster.topics.values())
        if node is None:
            self.dynamic_default = dict(props)
        elif props:
            self.dynamic_broker[node] = dict(props)
        else:
            self.dynamic_broker.pop(node, None)
        for name in set(old) | set(props):
            value = self._effective(name)
            if value is None:
                self.config.reset(name)
            elif self.config.get(name) != value:
                self.config.set(name, value)

    # -- describe ---------------------------------------------------------------------------
    def topic_entry(self, topic: Topic, name: str, broker_id: int, documentation: bool = False) -> ConfigEntry:
        spec = cat.TOPIC_CONFIGS.get(name)
        synonyms: list[tuple[str, str | None, int]] = []
        if name in topic.config.overrides:
            synonyms.append((name, cat.config_text(topic.config.overrides[name]), cat.DYNAMIC_TOPIC_CONFIG))
        if spec is not None and spec.synonym:
            synonyms.extend(self._broker_synonyms(spec.synonym, broker_id))
        if synonyms:
            value, source = synonyms[0][1], synonyms[0][2]
        else:
            value, source = (spec.default if spec else None), cat.DEFAULT_CONFIG
        return ConfigEntry(name, value, source, False, False, spec.type if spec else cat.UNKNOWN,
                           spec.doc if spec and documentation else None, synonyms)

    def topic_entries(self, topic: Topic, broker_id: int, keys: Iterable[str] | None = None,
                      documentation: bool = False) -> list[ConfigEntry]:
        """Every topic config Kafka 4 lists (plus any Kafka 3.x name set on the topic), by name."""
        names = [n for n, s in cat.TOPIC_CONFIGS.items() if not s.dropped_in_4 or n in topic.config.overrides]
        names += [n for n in topic.config.overrides if n not in cat.TOPIC_CONFIGS]
        if keys:
            wanted = set(keys)
            names = [n for n in names if n in wanted]
        return [self.topic_entry(topic, n, broker_id, documentation) for n in sorted(names)]

    def broker_entries(self, resource_name: str, broker_id: int, keys: Iterable[str] | None = None,
                       documentation: bool = False) -> list[ConfigEntry]:
        """A broker's configs (name = its id), or the cluster-wide dynamic defaults (name "")."""
        if resource_name == "":
            names = sorted(self.dynamic_default)
        else:
            try:
                requested = int(resource_name)
            except ValueError:
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 f"Broker id must be an integer, but it is: {resource_name}") from None
            if requested != broker_id:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {broker_id} or "
                                 f"empty string, but received {resource_name}")
            names = sorted(set(cat.BROKER_CONFIGS) | cat.kafka_broker_names() | set(self.config.values)
                           | set(self.dynamic_default) | set(self.dynamic_broker.get(broker_id, {})))
        if keys:
            wanted = set(keys)
            names = [n for n in names if n in wanted]
        out = []
        for name in names:
            spec = cat.broker_spec(name)
            synonyms = self._broker_synonyms(name, broker_id)
            if name in ("broker.id", "node.id") and resource_name:  # each broker's own id, from its static config
                synonyms = [(name, str(broker_id), cat.STATIC_BROKER_CONFIG)]
            elif name == "log.dirs":  # "{id}" in the mock's value stands for the broker's id
                synonyms = [(n, v.replace("{id}", str(broker_id)) if v else v, src) for n, v, src in synonyms]
            elif name == "broker.rack" and resource_name:  # each broker's own (static) rack, when it has one
                info = self.cluster.brokers.get(broker_id)
                synonyms = [(name, info.rack, cat.STATIC_BROKER_CONFIG)] if info is not None and info.rack else []
            if resource_name == "":
                synonyms = [s for s in synonyms if s[2] == cat.DYNAMIC_DEFAULT_BROKER_CONFIG]
            value, source = (synonyms[0][1], synonyms[0][2]) if synonyms else (None, cat.DEFAULT_CONFIG)
            out.append(ConfigEntry(name, value, source, not (spec and spec.dynamic), _is_sensitive(name),
                                   spec.type if spec else cat.UNKNOWN,
                                   (spec.doc or None) if spec and documentation else None,
                                   synonyms))
        return out

    def describe(self, resource_type: int, resource_name: str, broker_id: int, keys: Iterable[str] | None = None,
                 documentation: bool = False) -> list[ConfigEntry]:
        if resource_type == TOPIC:
            validate_topic_name(resource_name)
            topic = self.cluster.topic(resource_name)
            return self.topic_entries(topic, broker_id, keys, documentation)
        if resource_type == BROKER:
            return self.broker_entries(resource_name, broker_id, keys, documentation)
        if resource_type == BROKER_LOGGER:
            if resource_name == "":
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
            broker_loggers.check_node(resource_name, broker_id)
            wanted = set(keys or ())
            return [ConfigEntry(name, level, cat.DYNAMIC_BROKER_LOGGER_CONFIG)
                    for name, level in broker_loggers.describe().items() if not wanted or name in wanted]
        if resource_type == GROUP:
            return [ConfigEntry(n, v, src, False, False, kind, doc, syn) for n, v, src, kind, doc, syn in
                    self.group_configs.describe(resource_name, keys, lambda b: self._broker_synonyms(b, broker_id),
                                                documentation)]
        if resource_type == CLIENT_METRICS:
            # Kafka lists only the configs set, with no config type (UNKNOWN) and no synonyms
            return [ConfigEntry(n, v, CLIENT_METRICS_SOURCE)
                    for n, v, _kind in self.client_metrics.describe(resource_name, keys)]
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {resource_type}")

    # -- alter --------------------------------------------------------------------------------
    def alter(self, resource_type: int, resource_name: str, configs: dict[str, str], broker_id: int,
              validate_only: bool) -> None:
        """AlterConfigs: ``configs`` becomes the resource's whole set of overrides."""
        if resource_type == TOPIC:
            topic = self._topic(resource_name)
            self.cluster.check_topic_configs(configs)
            if not validate_only:
                self.cluster.log_maintenance.cut_segments([topic])
                topic.config.replace(configs)
        elif resource_type == BROKER:
            node = self._check_broker_node(resource_name, broker_id)
            self._validate_broker(configs, node is None)
            if not validate_only:
                self._set_broker_layer(node, configs)
        elif resource_type == GROUP:
            self.group_configs.replace(resource_name, configs, validate_only)
        elif resource_type == CLIENT_METRICS:
            self.client_metrics.replace(resource_name, configs, validate_only)
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource_type}")

    def incremental_alter(self, resource_type: int, resource_name: str, ops: list[tuple[str, int, str | None]],
                          broker_id: int, validate_only: bool) -> None:
        """IncrementalAlterConfigs: SET / DELETE / APPEND / SUBTRACT on the resource's overrides."""
        if resource_type == TOPIC:
            topic = self._topic(resource_name)
            current = {k: str(cat.config_text(v)) for k, v in topic.config.overrides.items()}
            updated = _apply_ops(current, ops, lambda n: cat.TOPIC_CONFIGS[n].default if n in cat.TOPIC_CONFIGS
                                 else None)
            self.cluster.check_topic_configs(updated)
            if not validate_only:
                self.cluster.log_maintenance.cut_segments([topic])
                topic.config.replace(updated)
        elif resource_type == BROKER:
            node = self._check_broker_node(resource_name, broker_id)
            layer = self.dynamic_default if node is None else self.dynamic_broker.get(node, {})
            updated = _apply_ops(layer, ops, _broker_default)
            self._validate_broker(updated, node is None)
            if not validate_only:
                self._set_broker_layer(node, updated)
        elif resource_type == BROKER_LOGGER:
            broker_loggers.alter(ops, broker_id, resource_name, validate_only)
        elif resource_type == GROUP:
            updated = _apply_ops(self.group_configs.of(resource_name), ops,
                                 lambda n: self.group_configs.default(n) if n in GROUP_CONFIGS else None,
                                 lambda n: False)
            self.group_configs.replace(resource_name, updated, validate_only)
        elif resource_type == CLIENT_METRICS:
            updated = _apply_ops(self.client_metrics.props(resource_name), ops, lambda n: "",
                                 lambda n: n in ("metrics", "match"))
            self.client_metrics.replace(resource_name, updated, validate_only)
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource_type}")

    def _topic(self, name: str) -> Topic:
        validate_topic_name(name)
        return self.cluster.topic(name)
