"""Reading scenario files: YAML, checked against ``schema.json`` and then against the cluster the file
declares (``validate``); every problem is reported, one line each naming the file and line
(``orders.yaml:14: steps[2].fault: unknown action 'explode'``).  A scenario is a file path or the
name of a shipped one (``mockbroker scenario list``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from mockbroker.nearest import did_you_mean
from mockbroker.scenarios import shipped
from mockbroker.scenarios.validate import (
    STEP_KINDS,
    Add,
    ClusterCheck,
    Unit,
    Where,
    config_text,
    nearest,
    step_shape,
)

SCHEMA_PATH = Path(__file__).with_name("schema.json")
DEFAULT_TIMEOUT_S = 120.0
_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(ms|s|m)$")


class ScenarioError(ValueError):
    """A scenario file that cannot run: ``problems`` holds one line per problem (file:line: where:
    what), the message all of them."""

    def __init__(self, *problems: str) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


@dataclass
class Step:
    index: int
    line: int
    name: str
    spec: dict[str, Any]
    at_s: float | None = None
    after_s: float | None = None
    when: dict[str, Any] | None = None
    optional: bool = False
    on_failure: str = "stop"  # what a failed step does: "stop" ends the run, "continue" goes on

    @property
    def kind(self) -> str:
        return "fault" if "fault" in self.spec else "remove_fault" if "remove_fault" in self.spec else "action"


@dataclass
class Scenario:
    name: str
    path: Path | None
    description: str = ""
    brokers: int = 1
    config: dict[str, str] = field(default_factory=dict)
    sasl_users: dict[str, str] = field(default_factory=dict)
    schema_registry: bool = False
    latency: str | None = None  # a latency preset (mockbroker.faults.latency)
    topics: list[dict[str, Any]] = field(default_factory=list)
    timeout_s: float = DEFAULT_TIMEOUT_S
    app: list[str] | None = None
    end: dict[str, Any] | None = None
    steps: list[Step] = field(default_factory=list)
    expect: list[dict[str, Any]] = field(default_factory=list)
    on_failure: str = "stop"

    @property
    def here(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()


@cache
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


def parse_duration(value: float | int | str) -> float:
    """Seconds from 2.5, "250ms", "2s" or "1m"."""
    if isinstance(value, int | float):
        return float(value)
    found = _DURATION.match(value.strip())
    if found is None:
        raise ValueError(f"{value!r} is not a duration (250ms, 2s, 1m)")
    number, unit = float(found.group(1)), found.group(2)
    return number / 1000 if unit == "ms" else number * 60 if unit == "m" else number


def _line_of(root: yaml.Node | None, path: Where) -> int:
    """1-based line of the YAML node at ``path`` (or of its closest existing parent)."""
    node = root
    line = node.start_mark.line + 1 if node is not None else 1
    for key in path:
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if k.value == key), None)
            if child is None:
                child = next((k for k, _ in node.value if k.value == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            child = node.value[key]
        else:
            child = None
        if child is None:
            break
        node = child
        line = node.start_mark.line + 1
    return line


def _where(path: Where) -> str:
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out or "(top)"


def _unit(path: Where) -> Unit:
    """The part of the file a schema error belongs to: one step, expectation or declared topic, else
    the top-level field (each part reports its most relevant error)."""
    if len(path) > 1 and path[0] in ("steps", "expect"):
        return (path[0], path[1])
    if len(path) > 2 and path[:2] == ["cluster", "topics"]:
        return ("cluster", "topics", path[2])
    return tuple(path[:1])


def _known_properties(node: dict[str, Any]) -> list[str]:
    """The property names a schema node declares, through its ``allOf`` and local ``$ref``s."""
    names = list(node.get("properties", {}))
    for part in node.get("allOf", []):
        names += _known_properties(part)
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        names += _known_properties(schema()["$defs"][ref.removeprefix("#/$defs/")])
    return list(dict.fromkeys(names))


def _schema_messages(error: jsonschema.ValidationError) -> list[tuple[list[Any], str]]:
    """One schema error as lines: one per unexpected key (each with the nearest known name), else one."""
    path = list(error.absolute_path)
    if error.validator in ("additionalProperties", "unevaluatedProperties") and isinstance(error.instance, dict):
        known = _known_properties(error.schema)
        extra = [k for k in error.instance if k not in known]
        if extra:
            return [([*path, key], f"Additional properties are not allowed ({key!r} was unexpected)"
                     + nearest(str(key), known)) for key in extra]
    if error.validator == "required" and isinstance(error.instance, dict):
        known = _known_properties(error.schema)
        meant = {did_you_mean(str(k), known) for k in error.instance if k not in known}
        missing = [name for name in error.validator_value if name not in error.instance]
        if missing and set(missing) <= meant:
            return []  # said already: the unexpected key that was meant for it names it
    if error.validator == "enum" and isinstance(error.instance, str):
        return [(path, error.message + nearest(error.instance, [str(v) for v in error.validator_value]))]
    return [(path, error.message)]


def load_text(text: str, path: Path | None = None) -> Scenario:
    label = str(path) if path is not None else "<scenario>"
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise ScenarioError(f"{label}:{line}: not valid YAML: {exc.problem or exc}") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{label}:1: a scenario is a mapping with at least name and steps")
    problems: list[tuple[int, str]] = []

    def add(where: Where, message: str) -> None:
        problems.append((_line_of(root, where), f"{label}:{_line_of(root, where)}: {_where(where)}: {message}"))

    bad = _shape(data, add)
    if not any(unit in bad for unit in ((), ("name",), ("steps",))):
        _meaning(data, add, bad)
    if problems:
        unique = dict.fromkeys(line for _, line in sorted(problems, key=lambda p: p[0]))
        raise ScenarioError(*unique)
    return _build(data, path)


def _shape(data: dict[str, Any], add: Any) -> set[Unit]:
    """Step fields and kinds, then the JSON schema: each part's problems; returns the parts that have one."""
    bad: set[Unit] = set()
    step_fields = list(schema()["$defs"]["step"]["properties"])
    steps = data.get("steps")
    for i, raw in enumerate(steps if isinstance(steps, list) else []):
        if isinstance(raw, dict) and not step_shape(raw, ["steps", i], add, step_fields):
            bad.add(("steps", i))
    by_unit: dict[Unit, list[jsonschema.ValidationError]] = {}
    for error in jsonschema.Draft202012Validator(schema()).iter_errors(data):
        by_unit.setdefault(_unit(list(error.absolute_path)), []).append(error)
    for unit, errors in by_unit.items():
        if unit not in bad:
            for error in errors:  # every problem of the part; of a oneOf/anyOf, its most relevant branch
                best = jsonschema.exceptions.best_match([error])
                for where, message in _schema_messages(best if best is not None else error):
                    add(where, message)
            bad.add(unit)
    return bad


def _meaning(data: dict[str, Any], add: Add, bad: set[Unit]) -> None:
    """Triggers, fault names, and everything checked against the declared cluster (``validate``)."""
    cluster = ClusterCheck(data, add, bad)
    faults: set[str] = set()
    for i, raw in enumerate(data["steps"]):
        where: Where = ["steps", i]
        if ("steps", i) in bad:
            if isinstance(raw, dict) and isinstance(raw.get("fault"), dict) and raw["fault"].get("name"):
                faults.add(str(raw["fault"]["name"]))  # no second complaint from steps naming it
            continue
        timing = [k for k in ("at", "after", "when") if k in raw]
        if len(timing) > 1:
            add(where, f"a step has one trigger, not {' and '.join(timing)}")
        if "when" in raw:
            cluster.trigger(raw["when"], [*where, "when"], faults)
        if "action" in raw:
            cluster.action(raw, where)
            continue
        kind = next(k for k in STEP_KINDS if k in raw)
        extra = [k for k in raw if k not in ("name", "at", "after", "when", "optional", "on_failure", kind)]
        if extra:
            inside = " (a fault's fields go inside fault:)" if kind == "fault" else ""
            add([*where, extra[0]], f"a {kind} step does not take {', '.join(extra)}{inside}")
        if kind == "fault":
            cluster.fault(raw["fault"], [*where, "fault"])
            if raw["fault"].get("name"):
                faults.add(str(raw["fault"]["name"]))
        elif raw["remove_fault"] not in faults:
            add([*where, "remove_fault"], f"no earlier step adds a fault named {raw['remove_fault']!r}"
                + nearest(raw["remove_fault"], faults))
    if "end" in data and ("end",) not in bad:
        cluster.trigger(data["end"], ["end"], faults)
    for i, expectation in enumerate(data.get("expect") or []):
        if ("expect", i) not in bad and ("expect",) not in bad:
            cluster.expectation(expectation, ["expect", i], faults)


def load_file(ref: str | Path) -> Scenario:
    """Load a scenario file, or a shipped scenario by name (an existing path wins)."""
    try:
        path = shipped.resolve(ref)
    except shipped.UnknownScenario as exc:
        raise ScenarioError(str(exc)) from None
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    return load_text(text, path)


def _build(data: dict[str, Any], path: Path | None) -> Scenario:
    """The checked file as a :class:`Scenario`."""
    cluster = data.get("cluster", {})
    scenario = Scenario(
        name=data["name"], path=path, description=data.get("description", ""),
        brokers=cluster.get("brokers", 1), config={k: config_text(v) for k, v in cluster.get("config", {}).items()},
        sasl_users=dict(cluster.get("sasl_users", {})), schema_registry=bool(cluster.get("schema_registry", False)),
        latency=cluster.get("latency"),
        topics=cluster.get("topics", []), app=data.get("app"), end=data.get("end"), expect=data.get("expect", []),
        on_failure=data.get("on_failure", "stop"),
    )
    if "timeout" in data:
        scenario.timeout_s = parse_duration(data["timeout"])
    for i, raw in enumerate(data["steps"]):
        step = Step(index=i, line=0, name=raw.get("name", f"step {i + 1}"), spec=raw, when=raw.get("when"),
                    optional=raw.get("optional", False), on_failure=raw.get("on_failure", scenario.on_failure))
        step.at_s = parse_duration(raw["at"]) if "at" in raw else None
        step.after_s = parse_duration(raw["after"]) if "after" in raw else None
        scenario.steps.append(step)
    return scenario


__all__ = ["Scenario", "ScenarioError", "Step", "config_text", "load_file", "load_text", "parse_duration"]
