"""Console pages of consumer groups (classic, KIP-848 consumer, share): the list and one group.  (Stub: the
groups helper fills it in.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mockbroker.console.markup import Links, Query, Safe, View, tag

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster


def groups_view(cluster: MockCluster, links: Links, query: Query) -> View:
    return View("Groups", groups_section(cluster, links))


def group_view(cluster: MockCluster, links: Links, group_id: str, query: Query) -> View:
    return View(f"Group {group_id}", tag("p", group_id))


def groups_section(cluster: MockCluster, links: Links) -> Safe:
    """Every group with its members, assignments, committed offsets and lag (the report's section)."""
    return tag("p", "no groups", class_="empty")
