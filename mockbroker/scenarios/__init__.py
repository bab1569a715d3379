"""Declarative failure-injection scenarios: YAML files with a cluster, a timeline of faults and cluster
actions, and expectations (see schema.json).  The shipped ones are the repository's top-level
``scenarios/`` folder (its README.md), packaged into the wheel as ``library/`` (``shipped.LIBRARY``), run by
name: ``load_file("throttling")``, ``mockbroker scenario run throttling``."""

from mockbroker.scenarios.loader import Scenario, ScenarioError, load_file, load_text
from mockbroker.scenarios.runner import ScenarioResult, ScenarioRun

__all__ = ["Scenario", "ScenarioError", "ScenarioResult", "ScenarioRun", "load_file", "load_text"]
