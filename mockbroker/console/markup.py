"""HTML building for the console and the report, escaped by default.

Every topic name, key, value, header, client id and group id shown is data a client chose, so nothing reaches
a page unescaped: :class:`Safe` marks markup built here, and every helper escapes whatever is not ``Safe``
(``esc("<script>")`` is text on the page, never a tag).  :class:`Links` makes the console's links (``/ui/...``)
or, for a report opened from disk, anchors inside the one file.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode


class Safe(str):
    """Markup already escaped (built by this module's helpers): passed through as it is."""

    __slots__ = ()

    def __add__(self, other: object) -> Safe:  # Safe + text escapes the text; Safe + Safe stays as it is
        return Safe(str.__add__(self, esc(other)))

    def __radd__(self, other: object) -> Safe:
        return Safe(str.__add__(esc(other), self))


def esc(value: object) -> Safe:
    """``value`` as text on a page (quotes escaped too, so it is safe inside an attribute); ``Safe`` as it is."""
    if isinstance(value, Safe):
        return value
    return Safe(html.escape("" if value is None else str(value), quote=True))


def join(parts: Iterable[object], sep: str = "") -> Safe:
    return Safe(esc(sep).join(esc(p) for p in parts))


def tag(name: str, content: object = "", /, **attrs: object) -> Safe:
    """``<name attrs>content</name>``; ``class_`` is ``class``, ``data_x`` is ``data-x``; None or False leaves an
    attribute out, True writes it bare."""
    parts = [name]
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        attr = key.rstrip("_").replace("_", "-")
        parts.append(attr if value is True else f'{attr}="{esc(value)}"')
    return Safe(f"<{' '.join(parts)}>{esc(content)}</{name}>")


def data_json(value: Any) -> str:
    """A JSON text for a ``data-body`` attribute (``tag`` escapes it)."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def table(headers: Iterable[object], rows: Iterable[Iterable[object]], empty: str = "none",
          class_: str | None = None) -> Safe:
    """A table; a cell is escaped unless ``Safe``.  No rows: one line saying ``empty``."""
    body = [tag("tr", join(tag("td", cell) for cell in row)) for row in rows]
    if not body:
        return tag("p", empty, class_="empty")
    head = tag("thead", tag("tr", join(tag("th", h) for h in headers)))
    return tag("table", head + tag("tbody", join(body)), class_=class_)


def link(href: str, text: object, **attrs: object) -> Safe:
    return tag("a", text, href=href, **attrs)


def section(title: object, body: object, id_: str | None = None) -> Safe:
    return tag("section", tag("h2", title) + esc(body), id=id_)


def pill(text: object, kind: str = "") -> Safe:
    """A short coloured label (``kind``: ok, warn, bad, info, or empty)."""
    return tag("span", text, class_=f"pill {kind}".strip())


def when(time_ms: int) -> Safe:
    """A time as the page shows it (UTC, to the millisecond), full date in the tooltip."""
    import time

    seconds, ms = divmod(int(time_ms), 1000)
    moment = time.gmtime(seconds)
    return tag("time", time.strftime("%H:%M:%S", moment) + f".{ms:03d}",
               title=time.strftime("%Y-%m-%d %H:%M:%S", moment) + f".{ms:03d} UTC")


@dataclass(frozen=True)
class Links:
    """Where a page's links go: the console's paths under ``base``, or (``anchors=True``, a report file) anchors
    inside the same page; ``None`` when the target is not part of it (the caller shows plain text)."""

    base: str = "/ui/"
    anchors: bool = False

    def _path(self, *parts: str, **query: object) -> str:
        path = self.base + "/".join(quote(p, safe="") for p in parts)
        kept = {k: str(v) for k, v in query.items() if v not in (None, "")}
        return path + ("?" + urlencode(kept) if kept else "")

    def overview(self) -> str | None:
        return "#cluster" if self.anchors else self.base

    def topic(self, name: str, **query: object) -> str | None:
        return "#topic-" + quote(name, safe="") if self.anchors else self._path("topics", name, **query)

    def groups(self) -> str | None:
        return "#groups" if self.anchors else self._path("groups")

    def group(self, group_id: str) -> str | None:
        return "#group-" + quote(group_id, safe="") if self.anchors else self._path("groups", group_id)

    def transactions(self) -> str | None:
        return "#transactions" if self.anchors else self._path("transactions")

    def journal(self, **filters: object) -> str | None:
        return "#journal" if self.anchors else self._path("journal", **filters)

    def faults(self) -> str | None:
        return "#faults" if self.anchors else self._path("faults")

    def to(self, href: str | None, text: object) -> Safe:
        """A link to ``href``, or the text alone where there is no such target."""
        return esc(text) if href is None else link(href, text)


NOTHING = Safe("")


@dataclass(frozen=True)
class View:
    """What a console page shows: ``live`` is redrawn while the page is open (the browser asks for it again);
    ``controls`` (forms, below it) and ``above`` (above it) stay as they are, so typing is never interrupted."""

    title: str
    live: Safe
    controls: Safe = NOTHING
    status: int = 200
    above: Safe = NOTHING  # controls shown above the live part (a filter form over a long table)


Query = Mapping[str, str]


def query_int(query: Query, name: str) -> int | None:
    """A page's integer parameter (None when absent or blank); anything else is ValueError naming it, which the
    console shows as a 400 page."""
    raw = (query.get(name) or "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, not {raw!r}") from None
