"""Console page of transactions (``/ui/transactions``): every transactional id the coordinator knows with its
producer id and epoch, state, timeout, when its transaction started and last changed, the partitions in the open
transaction (linked to their topics) and the groups whose offsets it commits (linked to the groups).

The transaction coordinator is made on first use (``cluster.state.transactions``, a cached property): viewing
never makes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mockbroker.console.markup import Links, Query, Safe, View, esc, join, pill, table, tag, when

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster
    from mockbroker.state.transactions import Transaction

STATE_KINDS = {"Ongoing": "warn", "PrepareCommit": "info", "PrepareAbort": "info", "CompleteCommit": "ok",
               "CompleteAbort": "bad", "Dead": "bad", "PrepareEpochFence": "bad", "Empty": ""}


def listed(cluster: MockCluster) -> list[Transaction]:
    state = cluster.state
    return state.transactions.listed() if "transactions" in state.__dict__ else []


def _partitions(txn: Transaction, links: Links) -> Safe:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in txn.partitions:
        by_topic.setdefault(topic, []).append(partition)
    return join(tag("div", links.to(links.topic(t), t) + Safe(": ") + ", ".join(str(p) for p in sorted(ps)))
                for t, ps in sorted(by_topic.items()))


def _groups(txn: Transaction, links: Links) -> Safe:
    return join(tag("div", links.to(links.group(g), g)) for g in sorted(txn.groups))


def _time(ms: int) -> Safe:
    return esc("-") if ms < 0 else when(ms)


def transactions_table(cluster: MockCluster, links: Links) -> Safe:
    rows = [[txn.transactional_id, txn.producer_id, txn.epoch,
             pill(txn.state, STATE_KINDS.get(txn.state, "info")), f"{txn.timeout_ms} ms", _time(txn.start_ms),
             _time(txn.last_update_ms), _partitions(txn, links), _groups(txn, links)]
            for txn in listed(cluster)]
    return table(["transactional id", "producer id", "epoch", "state", "timeout", "started", "last update",
                  "partitions", "groups"], rows, empty="no transactions")


def transactions_view(cluster: MockCluster, links: Links, query: Query) -> View:
    hint = tag("p", "Partitions and groups are those of the open transaction: when it ends, a marker goes to each "
                    "partition and each group's offsets are settled, and both lists empty.", class_="hint")
    return View("Transactions", hint + transactions_table(cluster, links))


def transactions_section(cluster: MockCluster, links: Links) -> Safe:
    """Every transactional id (the report's section)."""
    return transactions_table(cluster, links)
