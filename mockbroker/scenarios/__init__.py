"""Declarative failure-injection scenarios: YAML files with a cluster, a timeline of faults and cluster
actions, and expectations (see scenarios/README.md and schema.json)."""

from mockbroker.scenarios.loader import Scenario, ScenarioError, load_file, load_text
from mockbroker.scenarios.runner import ScenarioResult, ScenarioRun

__all__ = ["Scenario", "ScenarioError", "ScenarioResult", "ScenarioRun", "load_file", "load_text"]
