"""Console page of the request journal (``/ui/journal``): a timeline of requests, newest first, filtered by the
query (``api``, ``broker``, ``client_id``, ``topic``, ``group``, ``error``, ``fault``, ``limit``, ``window``), with
a summary line and a chart of requests per second by API (mockbroker.console.chart); and the journal's section
of the HTML report.

Every value of a row that a client chose (client ids, topics, groups, transactional ids) goes through
mockbroker.console.markup's escaping; the filter form is a plain GET form, so filtering is a link like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mockbroker.console.chart import chart_svg
from mockbroker.console.markup import Links, Query, Safe, View, esc, join, link, pill, query_int, tag, when
from mockbroker.faults.journal import JournalEntry
from mockbroker.nearest import hint
from mockbroker.protocol.errors import ERRORS

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster

DEFAULT_LIMIT = 200
MAX_LIMIT = 2000
DEFAULT_WINDOW_S = 300
MAX_WINDOW_S = 3600
ANY = "any"
HEADERS = ("seq", "time", "broker", "client", "API", "about", "latency ms", "outcome", "errors", "faults", "throttle")
# the filter form's fields: (query parameter, label, placeholder)
FILTER_FIELDS = (("api", "API", "Produce"), ("broker", "broker", ""), ("client_id", "client id", ""),
                 ("topic", "topic", ""), ("group", "group", ""), ("error", "error", "any"),
                 ("fault", "fault rule", "any"), ("limit", "rows", str(DEFAULT_LIMIT)),
                 ("window", "chart seconds", str(DEFAULT_WINDOW_S)))
OUTCOME_PILLS = {"pending": "info", "closed": "warn", "no response": "info"}


@dataclass(frozen=True)
class Filters:
    """What the page's query asks for; empty parameters are no filter."""

    api: str | int | None = None
    broker: int | None = None
    client_id: str | None = None
    topic: str | None = None
    group: str | None = None
    error: str | None = None  # an error name, or "any"
    fault: int | str | None = None  # a rule id, or "any"
    limit: int = DEFAULT_LIMIT
    window_s: int = DEFAULT_WINDOW_S

    def matches(self, entry: JournalEntry) -> bool:
        if self.error is not None:
            errors = entry.errors
            if not errors or (self.error != ANY and self.error not in errors):
                return False
        if self.fault is not None:
            faults = entry.faults
            if not faults or (self.fault != ANY and self.fault not in faults):
                return False
        if self.topic is not None or self.group is not None:
            about = entry.about
            if self.topic is not None and self.topic not in (about.get("topics") or {}):
                return False
            if self.group is not None and self.group not in (about.get("groups") or []):
                return False
        return True


def _text(query: Query, name: str) -> str | None:
    value = query.get(name)
    return None if value is None or value.strip() == "" else value.strip()


def _error_name(raw: str) -> str:
    if raw.casefold() == ANY:
        return ANY
    known = {entry[0] for entry in ERRORS.values()}
    name = raw.upper()
    if name in known or name.startswith("UNKNOWN_ERROR_"):
        return name
    raise ValueError(f"unknown error {raw!r}{hint(raw, known, prefix=True)}")


def parse_filters(query: Query) -> Filters:
    """The page's query as filters; a malformed one raises ValueError (a 400 page naming the parameter)."""
    api: str | int | None = _text(query, "api")
    if isinstance(api, str) and api.isdigit():
        api = int(api)
    error = _text(query, "error")
    fault_raw = _text(query, "fault")
    fault: int | str | None = None
    if fault_raw is not None:
        fault = ANY if fault_raw.casefold() == ANY else query_int(query, "fault")
    limit = query_int(query, "limit")
    window = query_int(query, "window")
    client_id = query.get("client_id")  # a client id is matched as given (it may be blank or spaced)
    return Filters(api=api, broker=query_int(query, "broker"), client_id=client_id or None,
                   topic=_text(query, "topic"), group=_text(query, "group"),
                   error=None if error is None else _error_name(error), fault=fault,
                   limit=DEFAULT_LIMIT if limit is None else max(1, min(limit, MAX_LIMIT)),
                   window_s=DEFAULT_WINDOW_S if window is None else max(1, min(window, MAX_WINDOW_S)))


def matching(cluster: MockCluster, filters: Filters) -> list[JournalEntry]:
    """The journal's entries the filters keep, oldest first (an unknown API name raises ValueError)."""
    entries = cluster.state.journal.entries(api=filters.api, client_id=filters.client_id, broker=filters.broker,
                                            errors_only=filters.error is not None)
    return [e for e in entries if filters.matches(e)]


# -- rows --------------------------------------------------------------------------------------------------------

Filter = Callable[..., Safe]


def _filter_link(links: Links) -> Filter:
    """A value as a link to the journal filtered by it; plain text in the report (its links are anchors)."""
    def make(text: object, title: str | None = None, **filters: object) -> Safe:
        if links.anchors:
            return tag("span", text, title=title) if title else esc(text)
        return link(links.journal(**filters) or "#", text, title=title)

    return make


def _about(entry: JournalEntry, links: Links, filtered: Filter) -> Safe:
    about = entry.about
    parts: list[Safe] = []
    for name, partitions in sorted((about.get("topics") or {}).items()):
        shown = ",".join(str(p) for p in sorted(partitions or []))
        parts.append(tag("span", links.to(links.topic(name), name)
                         + (Safe(" ") + filtered(f"[{shown}]" if shown else "[·]",
                                                 f"requests about topic {name}", topic=name)),
                         class_="topic"))
    for group in about.get("groups") or []:
        parts.append(tag("span", Safe("group ") + links.to(links.group(group), group)
                         + Safe(" ") + filtered("[·]", f"requests about group {group}", group=group), class_="group"))
    if about.get("transactional_id"):
        parts.append(tag("span", Safe("txn ") + tag("code", about["transactional_id"]), class_="txn"))
    return join(parts, Safe(" "))


def _fault_pills(entry: JournalEntry, cluster: MockCluster, links: Links, filtered: Filter) -> Safe:
    pills = []
    for rule_id in entry.faults:
        rule = cluster.state.faults.get(rule_id)
        text = f"rule {rule_id}" + (f" {rule.name}" if rule is not None and rule.name else "")
        what = "a rule since removed" if rule is None else f"{rule.action} ({rule.hits} hits)"
        if links.anchors:
            pills.append(pill(links.to(links.faults(), text), "warn"))
        else:
            pills.append(pill(filtered(text, f"requests rule {rule_id} acted on: {what}", fault=rule_id), "warn"))
    return join(pills)


def entry_cells(entry: JournalEntry, cluster: MockCluster, links: Links) -> list[Safe]:
    """One request's cells, in the order of HEADERS."""
    filtered = _filter_link(links)
    client: Safe = esc("-")
    if entry.client_id is not None:
        client = filtered(entry.client_id if entry.client_id else '""', entry.client_software or None,
                          client_id=entry.client_id)
    outcome = (pill(entry.outcome, OUTCOME_PILLS[entry.outcome]) if entry.outcome in OUTCOME_PILLS
               else esc(entry.outcome))
    errors = join(pill(filtered(name, f"requests answered with {name}", error=name), "bad") for name in entry.errors)
    return [esc(entry.seq), when(entry.time_ms), filtered(entry.broker, None, broker=entry.broker), client,
            filtered(f"{entry.api} v{entry.version}", f"api key {entry.api_key}", api=entry.api),
            _about(entry, links, filtered), esc("-" if entry.latency_ms < 0 else f"{entry.latency_ms:.3f}"),
            outcome, errors, _fault_pills(entry, cluster, links, filtered),
            esc(f"{entry.throttle_ms} ms" if entry.throttle_ms else "")]


def row_class(entry: JournalEntry) -> str | None:
    kinds = (["error"] if entry.errors else []) + (["fault"] if entry.faults else [])
    return " ".join(kinds) or None


def timeline(entries: Sequence[JournalEntry], cluster: MockCluster, links: Links, limit: int) -> Safe:
    """The newest ``limit`` of ``entries`` (oldest first as the journal keeps them), newest first."""
    shown = list(entries[-limit:])[::-1] if limit > 0 else []
    if not shown:
        return tag("p", "no requests", class_="empty")
    head = tag("thead", tag("tr", join(tag("th", h) for h in HEADERS)))
    body = join(tag("tr", join(tag("td", cell) for cell in entry_cells(e, cluster, links)), class_=row_class(e),
                    data_seq=e.seq) for e in shown)
    return tag("table", head + tag("tbody", body), class_="journal")


def summary(shown: int, entries: Sequence[JournalEntry], kept: int) -> Safe:
    errors = sum(1 for e in entries if e.errors)
    hits = sum(len(e.faults) for e in entries)
    items: list[tuple[object, str]] = [(shown, "shown"), (len(entries), "matching"), (kept, "kept"),
                                       (errors, "with errors"), (hits, "fault hits")]
    return tag("div", join(tag("div", tag("b", n) + esc(label), class_=label.replace(" ", "-"))
                           for n, label in items), class_="summary")


# -- the page and the report's section --------------------------------------------------------------------------

def filter_form(filters: Query, links: Links) -> Safe:
    """The plain GET form of the page's filters (no ``data-api``: the browser submits it as a link)."""
    from mockbroker.faults.rules import api_names

    lists = {"api": "journal-apis", "error": "journal-errors"}
    fields = join(tag("label", esc(label) + tag("input", "", name=name, value=filters.get(name) or None,
                                                placeholder=placeholder or None, list=lists.get(name)))
                  for name, label, placeholder in FILTER_FIELDS)
    errors = [ANY, *sorted(entry[0] for entry in ERRORS.values())]
    choices = (tag("datalist", join(tag("option", "", value=n) for n in sorted(api_names())), id=lists["api"])
               + tag("datalist", join(tag("option", "", value=n) for n in errors), id=lists["error"]))
    buttons = tag("button", "filter", type="submit") + link(links.journal() or "#", "clear", class_="clear")
    return tag("form", fields + choices + buttons, method="get", action=links.journal(), class_="filters")


def _described(filters: Filters) -> str:
    said = [f"{name} {value}" for name, value in (("API", filters.api), ("broker", filters.broker),
                                                 ("client", filters.client_id), ("topic", filters.topic),
                                                 ("group", filters.group), ("error", filters.error),
                                                 ("fault", filters.fault)) if value is not None]
    return "requests of " + ", ".join(said) if said else "every request"


def journal_view(cluster: MockCluster, links: Links, query: Query) -> View:
    filters = parse_filters(query)
    entries = matching(cluster, filters)
    kept = len(cluster.state.journal.entries())
    now_ms = cluster.state.clock.now_ms()
    shown = min(len(entries), filters.limit)
    caption = tag("p", f"{_described(filters)}, newest first", class_="hint")
    live = (summary(shown, entries, kept) + tag("div", chart_svg(entries, now_ms, filters.window_s),
                                                class_="journal-chart")
            + caption + timeline(entries, cluster, links, filters.limit))
    return View("Journal", live, above=filter_form(query, links))


def journal_section(cluster: MockCluster, links: Links, limit: int = 500) -> Safe:
    """The journal for the report: the chart over its whole span (an hour at most) and the newest ``limit`` rows."""
    entries = cluster.state.journal.entries()
    body: list[Any] = [summary(min(len(entries), limit), entries, len(entries))]
    if entries:
        last = entries[-1].time_ms  # the newest entry ends the window; the oldest's second is its first
        window_s = min(MAX_WINDOW_S, max(0, last - entries[0].time_ms) // 1000 + 1)
        body.append(tag("div", chart_svg(entries, last, window_s), class_="journal-chart"))
    body.append(timeline(entries, cluster, links, limit))
    return join(body)  # (the report gives it its own section and heading)
