"""The console's page frame: head, navigation, the live part the page's script redraws, and the controls.

Everything a page needs comes from ``/ui/static/`` (one stylesheet, one script): nothing is fetched from
outside, so the console works offline.
"""

from __future__ import annotations

from mockbroker.console.markup import Links, Safe, View, esc, join, link, tag

NAV = (("overview", "Cluster"), ("groups", "Groups"), ("transactions", "Transactions"), ("journal", "Journal"),
       ("faults", "Faults"))


def nav(links: Links, active: str) -> Safe:
    targets = {"overview": links.overview(), "groups": links.groups(), "transactions": links.transactions(),
               "journal": links.journal(), "faults": links.faults()}
    items = [link(targets[key] or "#", text, class_="active" if key == active else None) for key, text in NAV]
    return tag("nav", tag("span", "mockbroker", class_="brand") + join(items))


def page(view: View, links: Links, active: str) -> str:
    """A whole console page: ``view.live`` inside ``#live`` (redrawn while open), ``view.controls`` below it."""
    head = (Safe('<meta charset="utf-8">') + Safe('<meta name="viewport" content="width=device-width">')
            + tag("title", f"{view.title} · mockbroker")
            + Safe('<link rel="stylesheet" href="/ui/static/console.css">')
            + Safe('<script src="/ui/static/console.js" defer></script>'))
    live_bar = tag("div", Safe('<label><input type="checkbox" id="live-toggle" checked> live</label> ')
                   + tag("span", "", id="live-state"), class_="livebar")
    body = (nav(links, active)
            + tag("main", tag("h1", view.title) + live_bar
                  + tag("div", view.above, id="above")
                  + tag("div", view.live, id="live")
                  + tag("div", view.controls, id="controls")
                  + tag("p", "", id="action-result", role="status")))
    return str(Safe("<!doctype html>\n") + tag("html", tag("head", head) + tag("body", body), lang="en"))


def error_line(text: object) -> Safe:
    return tag("p", esc(text), class_="problem")
