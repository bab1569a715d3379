"""Checking a scenario against the cluster it declares, after the JSON schema: broker ids, topics,
broker and topic config keys and values, fault fields, step fields.  Every problem is collected
(``Problems.add``), none stops the others.

Topics: every topic a step, trigger, fault or expectation names must be declared under
``cluster.topics``, or be written first by a ``produce`` step while ``auto.create.topics.enable`` is
on (that step creates it).  Topics only the application would create are not counted on: a typo in a
topic name would otherwise wait for the timeout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import fields
from typing import Any

from mockbroker.cluster_actions import ACTIONS, OPTIONAL
from mockbroker.errors import KafkaError
from mockbroker.faults.rules import FaultRule, fault_problems, name_problems
from mockbroker.nearest import hint
from mockbroker.state.config import BrokerConfig, TopicConfig
from mockbroker.state.internal_topics import CONSUMER_OFFSETS, TRANSACTION_STATE
from mockbroker.state.topic_rules import validate_topic_name

STEP_KINDS = ("action", "fault", "remove_fault")
STEP_TIMING = ("at", "after", "when")
STEP_COMMON = ("name", *STEP_TIMING, "optional", "on_failure")
# a fault rule's fields as YAML writes them: the matcher's singular and plural forms, the rest as named
FAULT_FIELDS = sorted({"api", "version", "broker", "topic", "partition", "group", "transactional_id"}
                      | {f.name for f in fields(FaultRule) if not f.name.startswith("_")}
                      - {"id", "added_ms", "matched", "hits"})
COUNTED = ("records", "committed", "aborted", "abort_markers", "commit_markers", "duplicate_values",
           "fault_hits", "requests")

Where = list[str | int]  # a place in the scenario file: the keys and list indexes down to it
Unit = tuple[str | int, ...]  # a part of the file that reports one problem (see loader._unit)
Add = Callable[[Where, str], None]


def nearest(word: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when a known word is close (mockbroker.nearest, as for every name), else ''."""
    return hint(word, known)


def _reason(exc: Exception) -> str:
    return exc.message or str(exc) if isinstance(exc, KafkaError) else str(exc)


def step_shape(raw: dict[str, Any], where: Where, add: Add, step_fields: Iterable[str]) -> bool:
    """Unknown step fields (with the nearest name) and the step's kind; False when the step is unusable."""
    ok = True
    for key in raw:
        if key not in step_fields:
            add([*where, key], f"unknown step field {key!r}{nearest(str(key), step_fields)}")
            ok = False
    kinds = [k for k in STEP_KINDS if k in raw]
    if not kinds:
        add(where, "a step needs one of action, fault or remove_fault (what it does)")
        return False
    if len(kinds) > 1:
        add(where, f"a step does one thing: {' or '.join(kinds)}, not both")
        return False
    return ok


class ClusterCheck:
    """What the scenario's cluster has, and the checks against it, step by step in timeline order."""

    def __init__(self, data: dict[str, Any], add: Add, bad: set[Unit]) -> None:
        self.add = add
        given = data.get("cluster")
        cluster: dict[str, Any] = given if isinstance(given, dict) else {}
        brokers = cluster.get("brokers", 1)
        self.brokers = list(range(brokers if isinstance(brokers, int) and brokers >= 1 else 1))
        self.declared_brokers = len(self.brokers)
        self.broker_config = self._broker_config(cluster.get("config"), bad)
        if isinstance(cluster.get("config"), dict) and cluster["config"]:
            self._listeners(cluster["config"])
        self.auto_create = bool(self.broker_config["auto.create.topics.enable"])
        self.schema_registry = bool(cluster.get("schema_registry", False))
        self.topics: dict[str, int] = {CONSUMER_OFFSETS: 50, TRANSACTION_STATE: 50}
        for i, topic in enumerate(cluster.get("topics") or []):
            if ("cluster", "topics", i) not in bad and isinstance(topic, dict):
                self._topic(topic, ["cluster", "topics", i])

    def _broker_config(self, config: Any, bad: set[Unit]) -> BrokerConfig:
        good: dict[str, str] = {}
        if isinstance(config, dict) and ("cluster",) not in bad:
            for key, value in config.items():
                try:
                    BrokerConfig({key: config_text(value)})
                except (KafkaError, ValueError, TypeError) as exc:
                    self.add(["cluster", "config", key], _reason(exc))
                else:
                    good[key] = config_text(value)
        try:
            return BrokerConfig(good)
        except (KafkaError, ValueError, TypeError) as exc:  # settings that are wrong only together
            self.add(["cluster", "config"], _reason(exc))
            return BrokerConfig()

    def _listeners(self, config: dict[str, Any]) -> None:
        """Listeners, their protocols and TLS settings, as the cluster will read them."""
        from mockbroker.server.security import Security

        try:
            Security.from_options(self.broker_config, "127.0.0.1", 0)
        except (KafkaError, ValueError, TypeError, OSError) as exc:
            key = next((k for k in ("listeners", "listener.security.protocol.map", "advertised.listeners")
                        if k in config), None)
            self.add(["cluster", "config", *([key] if key else [])], _reason(exc))

    def _topic(self, topic: dict[str, Any], where: Where) -> None:
        name = topic["name"]
        try:
            validate_topic_name(name)
        except KafkaError as exc:
            self.add([*where, "name"], _reason(exc))
        if name in self.topics:
            self.add([*where, "name"], f"topic {name!r} is declared twice")
        rf = topic.get("replication_factor")
        if rf is not None and rf > self.declared_brokers:
            self.add([*where, "replication_factor"],
                     f"replication_factor {rf} needs {rf} brokers; the cluster has {self.declared_brokers}")
        for key, value in (topic.get("config") or {}).items():
            try:
                TopicConfig(self.broker_config, {key: config_text(value)})
            except (KafkaError, ValueError, TypeError) as exc:
                self.add([*where, "config", key], _reason(exc))
        self.topics[name] = topic.get("partitions") or self.broker_config["num.partitions"]

    # -- names a step uses --------------------------------------------------------------------------------
    def broker(self, node: Any, where: Where) -> None:
        if isinstance(node, int) and not isinstance(node, bool) and node not in self.brokers:
            have = f"0-{self.brokers[-1]}" if len(self.brokers) > 1 else str(self.brokers[0])
            added = len(self.brokers) - self.declared_brokers
            self.add(where, f"no broker {node}: the cluster has broker{'s' if len(self.brokers) > 1 else ''} {have} "
                            f"(cluster.brokers: {self.declared_brokers}"
                            + (f", and {added} added by earlier steps)" if added else ")"))

    def topic(self, name: Any, where: Where, partition: Any = None) -> None:
        if not isinstance(name, str):
            return
        if name not in self.topics:
            self.add(where, f"topic {name!r} is never created: declare it under cluster.topics"
                            + nearest(name, [t for t in self.topics if not t.startswith("__")]))
        elif isinstance(partition, int) and not 0 <= partition < self.topics[name]:
            self.add([*where[:-1], "partition"], f"topic {name!r} has partitions 0-{self.topics[name] - 1}, "
                                                 f"not {partition}")

    def matcher(self, spec: dict[str, Any], where: Where) -> None:
        """The broker and topic names of a fault rule or request trigger."""
        for single, plural in (("broker", "brokers"), ("topic", "topics")):
            values = ([spec[single]] if single in spec else []) + list(spec.get(plural) or [])
            key = single if single in spec else plural
            for value in values:
                if single == "broker":
                    self.broker(value, [*where, key])
                else:
                    self.topic(value, [*where, key])

    # -- a step -----------------------------------------------------------------------------------------
    def action(self, raw: dict[str, Any], where: Where) -> None:
        action = raw["action"]
        needs = ACTIONS.get(action, [])
        missing = [n for n in needs if n not in raw]
        if missing:
            self.add(where, f"{action} needs {', '.join(missing)}")
        extra = [k for k in raw if k not in (*STEP_COMMON, "action", *needs, *OPTIONAL.get(action, []))]
        if extra:
            self.add([*where, extra[0]], f"{action} does not take {', '.join(extra)}")
        if "broker" in raw and action != "add_broker":
            self.broker(raw["broker"], [*where, "broker"])
        if str(action).startswith("registry_"):
            self.registry_action(raw, where)
        elif action == "add_broker":
            self.brokers.append(max(self.brokers) + 1)
        elif action == "produce" and "topic" in raw and raw["topic"] not in self.topics and self.auto_create:
            self.topics[raw["topic"]] = self.broker_config["num.partitions"]  # produce creates it
        elif action == "produce" and "topic" in raw and raw["topic"] not in self.topics:
            self.add([*where, "topic"], f"topic {raw['topic']!r} is never created and auto.create.topics.enable "
                                        "is false: declare it under cluster.topics"
                     + nearest(raw["topic"], [t for t in self.topics if not t.startswith("__")]))
            return
        if "topic" in raw and action in ("produce", "move_leader"):
            self.topic(raw["topic"], [*where, "topic"], raw.get("partition"))

    def registry_action(self, raw: dict[str, Any], where: Where) -> None:
        from mockbroker.registry.faults import FaultSpecError, RegistryFault

        if not self.schema_registry:
            self.add([*where, "action"], f"{raw['action']} needs a schema registry: set cluster.schema_registry: true")
        if raw["action"] == "registry_fault" and "rule" in raw:
            if not isinstance(raw["rule"], dict):
                self.add([*where, "rule"], "rule must be a mapping of fault fields")
                return
            try:
                RegistryFault.from_dict(raw["rule"], default_name="check")
            except FaultSpecError as exc:
                self.add([*where, "rule"], str(exc))

    def fault(self, spec: dict[str, Any], where: Where, what: str = "fault") -> bool:
        """Every problem of a fault rule (or a request trigger's matcher), each at its field."""
        problems = fault_problems(spec)
        for key, message in problems:
            if key is not None and key not in FAULT_FIELDS:
                message = f"unknown {what} field {key!r}{nearest(key, FAULT_FIELDS)}"
            self.add([*where, key] if key is not None else where, message)
        if problems:
            return False
        self.matcher(spec, where)
        return True

    def trigger(self, when: dict[str, Any], where: Where, faults: set[str]) -> None:
        if "records" in when:
            self.topic(when["records"].get("topic"), [*where, "records", "topic"])
        if "fault_hits" in when and when["fault_hits"]["fault"] not in faults:
            self.add([*where, "fault_hits", "fault"],
                     f"no earlier step adds a fault named {when['fault_hits']['fault']!r}" + nearest(
                         when["fault_hits"]["fault"], faults))
        if "request" in when:
            matcher = {k: v for k, v in when["request"].items() if k != "count"}
            self.fault({**matcher, "action": "observe"}, [*where, "request"], "request matcher")

    def expectation(self, expectation: dict[str, Any], where: Where, faults: set[str]) -> None:
        (kind, spec), = expectation.items()
        if isinstance(spec, dict) and "topic" in spec:
            self.topic(spec["topic"], [*where, kind, "topic"])
        if kind == "audit":
            for i, name in enumerate(spec["topics"]):
                self.topic(name, [*where, kind, "topics", i])
        if kind == "fault_hits" and spec["fault"] not in faults:
            self.add([*where, kind, "fault"], f"no step adds a fault named {spec['fault']!r}"
                     + nearest(spec["fault"], faults))
        if kind in COUNTED and not {"exactly", "at_least", "at_most"} & set(spec):
            self.add([*where, kind], "give exactly, at_least or at_most")
        if kind == "requests":  # an API or error name no request can have would never count
            for key, message in name_problems({k: spec[k] for k in ("api", "error") if k in spec}):
                self.add([*where, kind, *([key] if key else [])], message)


def config_text(value: Any) -> str:
    """A config value as Kafka's text form (YAML booleans become true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
