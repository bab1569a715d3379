"""Console page of the request journal: a timeline, newest first, filtered, and a chart of requests per second
by API with errors and fault hits marked.  (Stub: the journal helper fills it in.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mockbroker.console.markup import Links, Query, Safe, View, tag

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster


def journal_view(cluster: MockCluster, links: Links, query: Query) -> View:
    return View("Journal", journal_section(cluster, links))


def journal_section(cluster: MockCluster, links: Links, limit: int = 500) -> Safe:
    return tag("p", f"{len(cluster.state.journal.entries())} requests")
