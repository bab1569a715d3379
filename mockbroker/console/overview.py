"""Console pages of the cluster as a whole: brokers (up, down, partitioned) with their down/up buttons, the
controller, topics with partitions, leaders and replicas, the fault rules and the running scenario (``/ui/``),
and the fault rules with the form that adds one and the buttons that remove them (``/ui/faults``).

Buttons and forms carry the control API route they call (``data-api``) and its JSON body (``data-body``); the
page's script sends them there, so the console does only what the API does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.console.markup import Links, Query, Safe, View, data_json, esc, join, pill, section, table, tag
from mockbroker.protocol.errors import error_name

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster
    from mockbroker.faults.rules import FaultRule

# the fault form's fields, named as POST /faults names them: (name, label, placeholder); "action" and "scope" are
# choices, "api" and "error" offer Kafka's names
FAULT_FIELDS = (
    ("api", "API", "Produce"), ("error", "error", "NOT_LEADER_OR_FOLLOWER"), ("action", "action", ""),
    ("topic", "topic", ""), ("partition", "partition", ""), ("broker", "broker", ""), ("group", "group", ""),
    ("transactional_id", "transactional id", ""), ("client_id", "client id (regex)", ""), ("version", "version", ""),
    ("times", "times", "1 (null: every time)"), ("nth", "nth", "1"), ("probability", "probability", "1.0"),
    ("seed", "seed", ""), ("after_ms", "after ms", "0"), ("until_ms", "until ms", ""), ("scope", "scope", ""),
    ("delay_ms", "delay ms", ""), ("throttle_ms", "throttle ms", ""), ("name", "name", ""),
)
NUMBER_FIELDS = ("partition", "broker", "version", "times", "nth", "probability", "seed", "after_ms", "until_ms",
                 "delay_ms", "throttle_ms")


def button(text: str, api: str, body: Any = None, kind: str = "") -> Safe:
    """A button the page's script turns into a control API call (``api``: "METHOD /path")."""
    return tag("button", text, type="button", class_=f"act {kind}".strip(), data_api=api,
               data_body=None if body is None else data_json(body))


def brokers_table(cluster: MockCluster, actions: bool = True) -> Safe:
    state = cluster.state
    rows = []
    for server in cluster.brokers:
        status = server.status
        kind = {"up": "ok", "down": "bad", "partitioned": "warn"}[status]
        row: list[object] = [server.node_id, f"{server.host}:{server.port}", pill(status, kind),
                             pill("controller", "info") if state.controller_id == server.node_id else ""]
        if actions:
            down = status == "up"  # a partitioned broker is brought back with broker_up too
            row.append(button("down" if down else "up", "POST /actions",
                              {"action": "broker_down" if down else "broker_up", "broker": server.node_id},
                              "bad" if down else ""))
        rows.append(row)
    headers = ["node", "address", "state", "", *(["action"] if actions else [])]
    return table(headers, rows, empty="no brokers")


def topics_table(cluster: MockCluster, links: Links) -> Safe:
    rows = []
    for topic in sorted(cluster.state.topics.values(), key=lambda t: (t.is_internal, t.name)):
        parts = topic.partitions
        records = sum(p.high_watermark - p.log_start_offset for p in parts)
        leaders = sorted({p.leader for p in parts})
        rows.append([links.to(links.topic(topic.name), topic.name), len(parts), len(parts[0].replicas) if parts else 0,
                     join((str(n) for n in leaders), ", "), records,
                     pill("internal", "info") if topic.is_internal else ""])
    return table(["topic", "partitions", "replicas", "leaders", "records", ""], rows, empty="no topics")


def _list(values: Any) -> str:
    return ", ".join(str(v) for v in sorted(values)) if values else "any"


def fault_rows(rules: list[FaultRule], actions: bool = True) -> list[list[object]]:
    from mockbroker.faults.rules import api_names

    names = {key: name for name, key in api_names().items()}
    rows = []
    for rule in rules:
        what = rule.action + (f" {error_name(rule.error)}" if rule.error else "")
        if rule.delay_ms:
            what += f" +{rule.delay_ms} ms"
        if rule.throttle_ms:
            what += f" throttle {rule.throttle_ms} ms"
        apis = _list(names.get(k, str(k)) for k in rule.apis) if rule.apis else "any"
        scope = "; ".join(f"{label} {_list(getattr(rule, attr))}" for label, attr in (
            ("topic", "topics"), ("partition", "partitions"), ("broker", "brokers"), ("group", "groups"),
            ("transactional id", "transactional_ids")) if getattr(rule, attr))
        times = "∞" if rule.times is None else str(rule.times)
        row: list[object] = [rule.id, rule.name, apis, what, scope or "-", rule.client_id or "-",
                             f"{rule.hits} / {times}", pill("active", "warn") if rule.active else pill("spent")]
        if actions:
            row.append(button("remove", f"DELETE /faults/{rule.id}", None, "bad"))
        rows.append(row)
    return rows


def faults_table(cluster: MockCluster, actions: bool = True) -> Safe:
    rules = list(cluster.state.faults.listed())
    headers = ["id", "name", "API", "does", "where", "client", "hits", "", *(["action"] if actions else [])]
    return table(headers, fault_rows(rules, actions), empty="no fault rules")


def scenario_part(cluster: MockCluster) -> Safe:
    run = getattr(cluster, "scenario_run", None)
    if run is None:
        return tag("p", "no scenario runs on this cluster", class_="empty")
    rows = [[i + 1, s.name, "-" if s.at_s is None else f"{s.at_s:.2f} s", s.detail or "",
             pill("ok", "ok") if s.ok else pill("failed", "bad") if s.at_s is not None else pill("waiting")]
            for i, s in enumerate(run.steps)]
    return tag("p", run.status_line()) + table(["#", "step", "at", "did", ""], rows, empty="no steps")


def overview_view(cluster: MockCluster, links: Links, query: Query) -> View:
    state = cluster.state
    facts = tag("p", join([tag("b", "cluster id "), state.cluster_id, " · ", tag("b", "bootstrap "),
                           cluster.bootstrap_servers, " · ", tag("b", "controller "), state.controller_id]))
    live = (facts + section("Brokers", brokers_table(cluster)) + section("Topics", topics_table(cluster, links))
            + section("Fault rules", faults_table(cluster)) + section("Scenario", scenario_part(cluster)))
    return View("Cluster", live)


def _field(name: str, label: str, placeholder: str) -> Safe:
    from mockbroker.faults.rules import ACTIONS

    if name in ("action", "scope"):
        choices = ("", *ACTIONS) if name == "action" else ("", "request", "partition")
        first = "error, else observe" if name == "action" else "request"
        options = join(tag("option", c or f"({first})", value=c) for c in choices)
        return tag("label", esc(label) + tag("select", options, name=name))
    listed = {"api": "api-names", "error": "error-names"}.get(name)
    return tag("label", esc(label) + tag("input", "", name=name, placeholder=placeholder or None, list=listed,
                                         inputmode="decimal" if name in NUMBER_FIELDS else None))


def _name_lists() -> Safe:
    from mockbroker.errors import ErrorCode
    from mockbroker.faults.rules import api_names

    apis = join(tag("option", "", value=name) for name in sorted(api_names()))
    errors = join(tag("option", "", value=e.name) for e in sorted(ErrorCode, key=lambda e: e.name) if e.value)
    return tag("datalist", apis, id="api-names") + tag("datalist", errors, id="error-names")


def fault_form() -> Safe:
    fields = join(_field(name, label, placeholder) for name, label, placeholder in FAULT_FIELDS)
    form = tag("form", fields + tag("button", "add fault", type="submit") + _name_lists(), class_="fault-form",
               data_api="POST /faults", data_numbers=",".join(NUMBER_FIELDS))
    leader = tag("form", join([tag("label", "topic" + tag("input", "", name="topic")),
                               tag("label", "partition" + tag("input", "", name="partition", value="0")),
                               tag("label", "to broker" + tag("input", "", name="broker", placeholder="next")),
                               tag("button", "move leader", type="submit")]),
                 class_="leader-form", data_api="POST /actions", data_action="move_leader",
                 data_numbers="partition,broker")
    hint = tag("p", "The fields of POST /faults (docs/faults.md); empty fields are left out, times null matches every "
                    "time.", class_="hint")
    return (section("Add a fault rule", hint + form)
            + section("Move a partition leader", leader)
            + tag("p", button("remove every fault rule", "DELETE /faults", None, "bad")))


def faults_view(cluster: MockCluster, links: Links, query: Query) -> View:
    return View("Faults", section("Fault rules", faults_table(cluster)) + section("Brokers", brokers_table(cluster)),
                fault_form())
