"""Reading scenario files: YAML, checked against ``schema.json`` and then for meaning, with errors that
name the file and line (``orders.yaml:14: steps[2].fault: unknown action 'explode'``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from mockbroker.cluster_actions import ACTIONS
from mockbroker.faults import rule_from_dict

SCHEMA_PATH = Path(__file__).with_name("schema.json")
DEFAULT_TIMEOUT_S = 120.0
_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(ms|s|m)$")


class ScenarioError(ValueError):
    """A scenario file that cannot run; the message names the file and line."""


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
    topics: list[dict[str, Any]] = field(default_factory=list)
    timeout_s: float = DEFAULT_TIMEOUT_S
    app: list[str] | None = None
    end: dict[str, Any] | None = None
    steps: list[Step] = field(default_factory=list)
    expect: list[dict[str, Any]] = field(default_factory=list)

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


def _line_of(root: yaml.Node | None, path: list[Any]) -> int:
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


def _where(path: list[Any]) -> str:
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out or "(top)"


def load_text(text: str, path: Path | None = None) -> Scenario:
    label = str(path) if path is not None else "<scenario>"
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise ScenarioError(f"{label}:{line}: not valid YAML: {exc.problem or exc}") from None

    def fail(where: list[Any], message: str) -> ScenarioError:
        return ScenarioError(f"{label}:{_line_of(root, where)}: {_where(where)}: {message}")

    if not isinstance(data, dict):
        raise ScenarioError(f"{label}:1: a scenario is a mapping with at least name and steps")
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema()).iter_errors(data))
    if error is not None:
        raise fail(list(error.absolute_path), error.message)
    return _build(data, path, fail)


def load_file(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror}") from None
    return load_text(text, path)


def _build(data: dict[str, Any], path: Path | None, fail: Any) -> Scenario:
    cluster = data.get("cluster", {})
    scenario = Scenario(
        name=data["name"], path=path, description=data.get("description", ""),
        brokers=cluster.get("brokers", 1), config={k: config_text(v) for k, v in cluster.get("config", {}).items()},
        sasl_users=dict(cluster.get("sasl_users", {})),
        topics=cluster.get("topics", []), app=data.get("app"), end=data.get("end"), expect=data.get("expect", []),
    )
    if "timeout" in data:
        scenario.timeout_s = parse_duration(data["timeout"])
    faults: set[str] = set()
    for i, raw in enumerate(data["steps"]):
        where = ["steps", i]
        timing = [k for k in ("at", "after", "when") if k in raw]
        if len(timing) > 1:
            raise fail(where, f"a step has one trigger, not {' and '.join(timing)}")
        step = Step(index=i, line=0, name=raw.get("name", f"step {i + 1}"), spec=raw, when=raw.get("when"),
                    optional=raw.get("optional", False))
        step.at_s = parse_duration(raw["at"]) if "at" in raw else None
        step.after_s = parse_duration(raw["after"]) if "after" in raw else None
        _check_step(raw, where, faults, scenario, fail)
        scenario.steps.append(step)
    for i, expectation in enumerate(scenario.expect):
        (kind, spec), = expectation.items()
        if kind == "fault_hits" and spec["fault"] not in faults:
            raise fail(["expect", i, kind, "fault"], f"no step adds a fault named {spec['fault']!r}")
        counted = kind in ("records", "committed", "aborted", "abort_markers", "commit_markers", "duplicate_values",
                           "fault_hits", "requests")
        if counted and not {"exactly", "at_least", "at_most"} & set(spec):
            raise fail(["expect", i, kind], "give exactly, at_least or at_most")
    return scenario


def _check_step(raw: dict[str, Any], where: list[Any], faults: set[str], scenario: Scenario, fail: Any) -> None:
    if "fault" in raw:
        try:
            rule_from_dict(raw["fault"])
        except (ValueError, TypeError) as exc:
            raise fail([*where, "fault"], str(exc)) from None
        if raw["fault"].get("name"):
            faults.add(raw["fault"]["name"])
    if "remove_fault" in raw and raw["remove_fault"] not in faults:
        raise fail([*where, "remove_fault"], f"no earlier step adds a fault named {raw['remove_fault']!r}")
    needs = ACTIONS.get(raw.get("action", ""), [])
    missing = [n for n in needs if n not in raw]
    if missing:
        raise fail(where, f"{raw['action']} needs {', '.join(missing)}")
    when = raw.get("when", {})
    if "fault_hits" in when and when["fault_hits"]["fault"] not in faults:
        raise fail([*where, "when", "fault_hits", "fault"],
                   f"no earlier step adds a fault named {when['fault_hits']['fault']!r}")
    if "request" in when:
        matcher = {k: v for k, v in when["request"].items() if k != "count"}
        try:
            rule_from_dict({**matcher, "action": "observe"})
        except (ValueError, TypeError) as exc:
            raise fail([*where, "when", "request"], str(exc)) from None


def config_text(value: Any) -> str:
    """A config value as Kafka's text form (YAML booleans become true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
