"""What scenario triggers and expectations look at: record counts, groups, fault hits, topic audits.

Everything here reads cluster state and must run on the cluster's event loop (the runner's timeline
does); nothing changes state except the observe rules that ``request`` triggers add.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mockbroker.faults import FaultRule
from mockbroker.state.cluster import ClusterState
from mockbroker.state.inspect import TopicAudit, audit_topic

TOPIC_COUNTS = ("records", "committed", "aborted", "abort_markers", "commit_markers", "duplicate_values")


@dataclass
class Outcome:
    kind: str
    spec: dict[str, Any] | int
    ok: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "spec": self.spec, "ok": self.ok, "detail": self.detail}


def data_records(state: ClusterState, topic: str) -> int:
    """Data records in a topic, from batch metadata (no decoding): cheap enough to poll."""
    found = state.topics.get(topic)
    if found is None:
        return 0
    return sum(b.last_offset - b.base_offset + 1 for log in found.partitions for b in log.batches if not b.is_control)


def group_state(state: ClusterState, group_id: str) -> tuple[str, int]:
    group = state.groups.groups.get(group_id)
    if group is None:
        return "Dead", 0
    members = len(group.consumer.members) if group.consumer is not None else len(group.members)
    return group.state_name, members


def group_is_stable(state: ClusterState, spec: dict[str, Any]) -> bool:
    name, members = group_state(state, spec["group"])
    return name == "Stable" and ("members" not in spec or members == spec["members"])


def trigger_holds(state: ClusterState, when: dict[str, Any], faults: dict[str, FaultRule],
                  observer: FaultRule | None) -> bool:
    (kind, spec), = when.items()
    if kind == "records":
        return data_records(state, spec["topic"]) >= spec["at_least"]
    if kind == "request":
        return observer is not None and observer.hits >= spec.get("count", 1)
    if kind == "group_stable":
        return group_is_stable(state, spec)
    if kind == "fault_hits":
        rule = faults.get(spec["fault"])
        return rule is not None and rule.hits >= spec["at_least"]
    raise ValueError(f"unknown trigger {kind!r}")


def describe_trigger(when: dict[str, Any]) -> str:
    (kind, spec), = when.items()
    if kind == "records":
        return f"{spec['topic']} has {spec['at_least']} records"
    if kind == "request":
        return f"{spec.get('count', 1)} x {spec['api']} seen"
    if kind == "group_stable":
        return f"group {spec['group']} stable" + (f" with {spec['members']} members" if "members" in spec else "")
    return f"fault {spec['fault']} hit {spec['at_least']} times"


def _compare(value: int, spec: dict[str, Any]) -> tuple[bool, str]:
    wanted = []
    ok = True
    if "exactly" in spec:
        ok &= value == spec["exactly"]
        wanted.append(f"exactly {spec['exactly']}")
    if "at_least" in spec:
        ok &= value >= spec["at_least"]
        wanted.append(f"at least {spec['at_least']}")
    if "at_most" in spec:
        ok &= value <= spec["at_most"]
        wanted.append(f"at most {spec['at_most']}")
    return ok, f"{value} (wanted {' and '.join(wanted)})"


def spark_audit(bootstrap: str, topics: list[str]) -> tuple[bool, str]:
    """Run the Spark audit (blocking: call it off the cluster's loop, which must keep serving fetches)."""
    try:
        import os
        import sys

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        from mockbroker.spark.audit import run_audit
    except ImportError:
        return False, "the audit needs pyspark (pip install 'mockbroker[spark]')"
    spark = (SparkSession.builder.master("local[2]").appName("mockbroker-scenario-audit")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").getOrCreate())
    report = run_audit(spark, bootstrap, topics)
    detail = (f"{report.records:,} records ({report.committed:,} committed, {report.aborted:,} aborted), "
              f"{report.gaps} gaps, {report.duplicates} duplicates, {report.visible_aborted} visible aborted, "
              f"{report.order_violations} order violations")
    return report.passed, detail


def check(state: ClusterState, expectation: dict[str, Any], faults: dict[str, FaultRule], app_exit: int | None,
          audits: dict[str, TopicAudit], spark_audits: dict[int, tuple[bool, str]] | None = None) -> Outcome:
    (kind, spec), = expectation.items()
    if kind == "audit":
        ok, detail = (spark_audits or {}).get(id(expectation), (False, "the audit did not run"))
        return Outcome(kind, spec, ok, detail)

    def audit() -> TopicAudit:
        topic = spec["topic"]
        if topic not in audits:
            found = state.topics.get(topic)
            audits[topic] = audit_topic(found.partitions if found is not None else [])
        return audits[topic]

    if kind in TOPIC_COUNTS:
        ok, detail = _compare(getattr(audit(), kind), spec)
        return Outcome(kind, spec, ok, f"{spec['topic']}: {detail}")
    if kind == "no_gaps_or_duplicates":
        found = audit()
        problems = found.sequence_gaps + found.sequence_duplicates
        return Outcome(kind, spec, not problems, "; ".join(problems[:5]) if problems else
                       f"{spec['topic']}: sequences contiguous")
    if kind == "no_open_transactions":
        found = audit()
        return Outcome(kind, spec, found.open == 0, f"{spec['topic']}: {found.open} records in open transactions")
    if kind == "group_stable":
        name, members = group_state(state, spec["group"])
        return Outcome(kind, spec, group_is_stable(state, spec), f"group {spec['group']}: {name}, {members} members")
    if kind == "fault_hits":
        rule = faults.get(spec["fault"])
        ok, detail = _compare(rule.hits if rule is not None else 0, spec)
        return Outcome(kind, spec, ok, f"fault {spec['fault']}: {detail}")
    if kind == "requests":
        entries = state.journal.entries(api=spec.get("api"))
        if "error" in spec:
            entries = [e for e in entries if spec["error"] in e.errors]
        ok, detail = _compare(len(entries), spec)
        return Outcome(kind, spec, ok, f"{spec.get('api', 'requests')}" + (
            f" answered {spec['error']}" if "error" in spec else "") + f": {detail}")
    if kind == "app_exit":
        if app_exit is None:
            return Outcome(kind, spec, False, "no app ran")
        return Outcome(kind, spec, app_exit == spec, f"the app exited with {app_exit} (wanted {spec})")
    raise ValueError(f"unknown expectation {kind!r}")
