"""Console page of transactions: transactional ids, producer ids and epochs, state, partitions of the open
transaction.  (Stub: the groups helper fills it in.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mockbroker.console.markup import Links, Query, Safe, View, tag

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster


def transactions_view(cluster: MockCluster, links: Links, query: Query) -> View:
    return View("Transactions", transactions_section(cluster, links))


def transactions_section(cluster: MockCluster, links: Links) -> Safe:
    return tag("p", "no transactions", class_="empty")
