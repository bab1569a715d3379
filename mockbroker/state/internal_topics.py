"""Kafka's internal topics: ``__consumer_offsets``, ``__transaction_state`` and ``__share_group_state``,
flagged internal in Metadata and refused to producers.

Kafka creates the first two when a client first looks for a group or transaction coordinator
(FindCoordinator), with ``offsets.topic.num.partitions`` / ``transaction.state.log.num.partitions``
partitions (50 each), compacted; the share coordinator's ``__share_group_state``
(``share.coordinator.state.topic.num.partitions``, 50) is made when the first share-partition state is
written.  The mock does the same, with two differences a test may notice: the topic exists as soon as the
FindCoordinator is answered (Kafka answers COORDINATOR_NOT_AVAILABLE while it creates it), and its
replication factor is capped at the number of brokers (Kafka's default of 3 fails on a smaller cluster).

Each coordinator writes its records as Kafka does, in :func:`partition_for`'s partition of its key: the
group coordinator's (committed offsets, classic and KIP-848 groups, their tombstones) to
``__consumer_offsets`` (state/offsets_topic.py), the transaction coordinator's TransactionLog records to
``__transaction_state`` (state/txn_log.py), the share coordinator's ShareSnapshot / ShareUpdate records to
``__share_group_state`` (state/share_state_log.py).  The coordinators also keep their state in memory,
which is what they answer from, and are rebuilt from the records on load (state/coordinator_load.py).
Coordinators are placed by the mock's own hash over live brokers, not by the leader of that partition.
"""

from __future__ import annotations

from typing import Any

CONSUMER_OFFSETS = "__consumer_offsets"
TRANSACTION_STATE = "__transaction_state"
SHARE_GROUP_STATE = "__share_group_state"
INTERNAL_TOPICS = frozenset({CONSUMER_OFFSETS, TRANSACTION_STATE, SHARE_GROUP_STATE})

# topic -> its broker configs: partitions, replication factor, segment bytes
_SETTINGS = {
    CONSUMER_OFFSETS: ("offsets.topic.num.partitions", "offsets.topic.replication.factor",
                       "offsets.topic.segment.bytes"),
    TRANSACTION_STATE: ("transaction.state.log.num.partitions", "transaction.state.log.replication.factor",
                        "transaction.state.log.segment.bytes"),
    SHARE_GROUP_STATE: ("share.coordinator.state.topic.num.partitions",
                        "share.coordinator.state.topic.replication.factor",
                        "share.coordinator.state.topic.segment.bytes"),
}


def is_internal(name: str) -> bool:
    """Kafka's Topic.isInternal: one of the internal topics' names (not any name starting "__")."""
    return name in INTERNAL_TOPICS


def ensure(cluster: Any, name: str) -> Any:
    """The internal topic ``name`` (``__consumer_offsets``, ``__transaction_state`` or
    ``__share_group_state``), created with Kafka's settings when it is not there yet."""
    topic = cluster.topics.get(name)
    if topic is not None:
        return topic
    partitions_key, replication_key, segment_key = _SETTINGS[name]
    config = cluster.config
    replication = max(1, min(config[replication_key], len(cluster.brokers)))
    return cluster.create_topic(name, config[partitions_key], replication,
                                {"cleanup.policy": "compact", "segment.bytes": config[segment_key]})


def partition_for(key: str, partitions: int) -> int:
    """The internal topic's partition that holds ``key`` (a group or transactional id), as Kafka
    computes it: Utils.abs(key.hashCode()) % partitions, with Java's String.hashCode over UTF-16."""
    h = 0
    units = key.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    if h >= 0x80000000:
        h -= 0x100000000
    return (0 if h == -0x80000000 else abs(h)) % partitions
