"""The HTML report of a cluster: one self-contained file that opens from disk, with no server and nothing
fetched from anywhere (the console's stylesheet is inlined, there is no script, links are anchors inside the
file).

It holds what a test's cluster saw: the brokers and topics, each topic's records (decoded as the console
decodes them), the consumer groups and their offsets, transactions, the request journal with its errors and
fault hits, every fault rule that ran (also the ones removed before the end, with their hits: FaultSet.ran)
and the scenario's steps.  ``MockCluster.write_report`` and the pytest plugin's ``--mockbroker-report`` call
:func:`report_html` on the cluster's loop, so the state does not change while it is read.

Every name, key, value and header shown is data a client chose: everything goes through
mockbroker.console.markup, which escapes whatever it did not build.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from mockbroker.console.groups import groups_section
from mockbroker.console.journal import journal_section
from mockbroker.console.markup import Links, Safe, esc, join, link, pill, table, tag
from mockbroker.console.overview import brokers_table, fault_rows, scenario_part, topics_table
from mockbroker.console.topics import topic_section
from mockbroker.console.transactions import transactions_section

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster

log = logging.getLogger("mockbroker.console")
STYLESHEET = Path(__file__).with_name("static") / "console.css"
LINKS = Links(anchors=True)
DETAIL_LIMIT = 20_000  # characters of the failure's text kept in the header
RECORDS_PER_TOPIC = 200
# (id, nav label): the report's sections in order
SECTIONS = (("cluster", "Cluster"), ("topics", "Topics"), ("groups", "Groups"), ("transactions", "Transactions"),
            ("journal", "Journal"), ("faults", "Faults"), ("scenario", "Scenario"))
OUTCOME_KINDS = {"passed": "ok", "failed": "bad", "error": "bad", "skipped": "info"}


def _stylesheet() -> str:
    try:
        return STYLESHEET.read_text(encoding="utf-8").replace("</", "<\\/")  # (never ends the <style> early)
    except OSError:  # an install without the package data: the report is plain, still complete
        return ""


def _guarded(name: str, draw: Callable[[], Safe]) -> Safe:
    """One part of the report; a part that cannot be drawn says so instead of losing the whole report."""
    try:
        return draw()
    except Exception as exc:  # a report written at a test's end must not fail the test's teardown
        log.warning("report: the %s part could not be drawn", name, exc_info=True)
        return tag("p", f"this part could not be drawn: {type(exc).__name__}: {exc}", class_="problem")


def header(cluster: MockCluster, title: str, outcome: str | None, detail: str) -> Safe:
    state = cluster.state
    heading = esc(title)
    if outcome:
        heading = heading + Safe(" ") + pill(outcome, OUTCOME_KINDS.get(outcome, "info"))
    facts = join([tag("b", "cluster id "), state.cluster_id, " · ", tag("b", "bootstrap "),
                  cluster.bootstrap_servers or "(stopped)",
                  " · ", tag("b", "written "), time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())])
    parts = tag("h1", heading) + tag("p", facts)
    if detail:
        cut = detail if len(detail) <= DETAIL_LIMIT else detail[:DETAIL_LIMIT] + "\n..."
        parts = parts + tag("pre", cut, class_="value detail")
    return tag("header", parts, id="top")


def nav() -> Safe:
    items = [link("#" + key, text) for key, text in SECTIONS]
    return tag("nav", tag("span", "mockbroker report", class_="brand") + join(items))


def topics_part(cluster: MockCluster) -> Safe:
    """Every topic a client made, with its records; an internal topic only when it holds records."""
    shown = []
    for topic in sorted(cluster.state.topics.values(), key=lambda t: (t.is_internal, t.name)):
        if topic.is_internal and not any(p.high_watermark > p.log_start_offset for p in topic.partitions):
            continue
        shown.append(_guarded(f"topic {topic.name!r}",
                              partial(topic_section, cluster, LINKS, topic.name, limit=RECORDS_PER_TOPIC)))
    if not shown:
        return tag("p", "no topics", class_="empty")
    hint = tag("p", f"Each topic's newest {RECORDS_PER_TOPIC} records, newest first.", class_="hint")
    return hint + join(shown)


def faults_part(cluster: MockCluster) -> Safe:
    """Every fault rule that ran on the cluster, also the ones removed before the report, with their hits."""
    faults = cluster.state.faults
    rules = faults.ran()
    listed = {r.id for r in faults.listed()}
    rows = fault_rows(rules, actions=False)
    for rule, row in zip(rules, rows, strict=True):
        if rule.id not in listed:
            row[-1] = pill("removed")
    headers = ["id", "name", "API", "does", "where", "client", "hits", ""]
    return table(headers, rows, empty="no fault rules ran")


def report_html(cluster: MockCluster, title: str, outcome: str | None = None, detail: str = "") -> str:
    """The whole report of ``cluster`` as it is now (call it on the cluster's loop): one HTML document."""
    draw: dict[str, Callable[[], Safe]] = {
        "cluster": lambda: (tag("h3", "Brokers") + brokers_table(cluster, actions=False)
                            + tag("h3", "Topics") + topics_table(cluster, LINKS)),
        "topics": lambda: topics_part(cluster),
        "groups": lambda: groups_section(cluster, LINKS),
        "transactions": lambda: transactions_section(cluster, LINKS),
        "journal": lambda: journal_section(cluster, LINKS),
        "faults": lambda: faults_part(cluster),
        "scenario": lambda: scenario_part(cluster),
    }
    body = join(tag("section", tag("h2", text) + _guarded(key, draw[key]), id=key) for key, text in SECTIONS)
    head = (Safe('<meta charset="utf-8">') + Safe('<meta name="viewport" content="width=device-width">')
            + tag("title", f"{title} · mockbroker report") + tag("style", Safe(_stylesheet())))
    main = tag("main", _guarded("header", lambda: header(cluster, title, outcome, detail)) + body)
    document = tag("html", tag("head", head) + tag("body", nav() + main), lang="en")
    return f"<!doctype html>\n{document}\n"  # (a str + Safe would escape the str)
