"""Broker racks and fetch-from-follower (KIP-392): which replica a consumer should read from.

Racks: each broker has Kafka's static ``broker.rack`` (``MockCluster(racks=...)``, ``--racks``;
a cluster-wide ``broker.rack`` config gives every broker without its own the same one).  Metadata,
DescribeCluster and DescribeConfigs of a BROKER resource report it.

``replica.selector.class`` (static, as in Kafka; default null: consumers read from the leader) may
name ``org.apache.kafka.common.replica.RackAwareReplicaSelector`` or Kafka's ``LeaderSelector``.
With the rack-aware one, the leader answers a consumer's Fetch (v11+, a non-empty rack id) with
``preferred_read_replica`` and no records when, as ReplicaManager.findPreferredReadReplica and
RackAwareReplicaSelector decide, a replica in the consumer's rack other than the leader qualifies:
in the ISR, its log end offset at or past the fetch offset and its log start at or before it.  The
leader's own rack matching wins (it keeps serving); among qualifying followers the most caught-up is
chosen (here: all equal, so the lowest node id).

In the mock every replica of a partition shares its one log, so "caught up" reduces to the ISR,
which is the live replicas (Metadata's isr_nodes): a follower in the ISR has the leader's log end and
log start, so it qualifies whenever the fetch offset lies within the log.  A follower serves consumer
fetches (replica id < 0, Fetch v11+: Kafka's fetchOnlyLeader is false once client metadata is there,
with or without a selector) from that same log capped at the high watermark (the last stable offset
for read_committed), exactly as the leader would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from mockbroker.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState
    from mockbroker.state.log import PartitionLog

SELECTOR_CONFIG = "replica.selector.class"
RACK_CONFIG = "broker.rack"
RACK_AWARE = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
LEADER_ONLY = "org.apache.kafka.common.replica.LeaderSelector"
SELECTORS = (RACK_AWARE, LEADER_ONLY)
# Kafka's first Fetch version carrying the consumer's rack id and answering a preferred read replica
RACK_FETCH_VERSION = 11


def check_selector(value: str) -> None:
    """INVALID_CONFIG for a ``replica.selector.class`` the mock does not know (empty: Kafka's null)."""
    if value == "" or value in SELECTORS:
        return
    import difflib  # (only for the refusal)

    near = difflib.get_close_matches(value, SELECTORS, 1, 0.0)
    raise KafkaError(ErrorCode.INVALID_CONFIG,
                     f"unknown {SELECTOR_CONFIG} {value!r}: did you mean {near[0]}? "
                     f"(one of {', '.join(SELECTORS)}, or empty for the leader only)")


def parse_racks(racks: Sequence[str] | Mapping[int, str] | str | None, brokers: int) -> dict[int, str]:
    """Node id -> rack from ``racks``: one name per broker in node id order (a list, or a comma list
    as ``--racks a,b,c`` gives it) or a mapping of node ids to names.  ValueError (one line) for a
    wrong count, an empty or blank name, or a node id that is not one of the cluster's."""
    if racks is None:
        return {}
    if isinstance(racks, str):
        racks = racks.split(",")
    if isinstance(racks, Mapping):
        out = {}
        for node, rack in racks.items():
            if not isinstance(node, int) or not 0 <= node < brokers:
                raise ValueError(f"racks: node id {node!r} is not one of the brokers 0-{brokers - 1}")
            out[node] = _rack_name(rack, node)
        return out
    names = list(racks)
    if len(names) != brokers:
        raise ValueError(f"racks: {len(names)} rack name(s) given for {brokers} broker(s); give one per broker")
    return {node: _rack_name(rack, node) for node, rack in enumerate(names)}


def _rack_name(rack: object, node: int) -> str:
    if not isinstance(rack, str) or not rack.strip():
        raise ValueError(f"racks: the rack of broker {node} is empty")
    return rack.strip()


def rack_aware(cluster: ClusterState) -> bool:
    """Whether the leader may send consumers to a follower (the rack-aware selector is configured)."""
    return cluster.config.values.get(SELECTOR_CONFIG) == RACK_AWARE


def in_sync(cluster: ClusterState, log: PartitionLog) -> list[int]:
    """The partition's ISR as the mock keeps it: its replicas on live brokers (Metadata's isr_nodes)."""
    live = cluster.brokers
    return [r for r in log.replicas if r in live]


def serves_consumers(log: PartitionLog, broker_id: int) -> bool:
    """Whether ``broker_id`` holds the partition and so answers consumer fetches (v11+) for it."""
    return log.leader == broker_id or broker_id in log.replicas


def preferred_read_replica(cluster: ClusterState, log: PartitionLog, rack_id: str, fetch_offset: int) -> int:
    """The follower a consumer in ``rack_id`` should fetch ``fetch_offset`` from, or -1 (read here, at
    the leader): RackAwareReplicaSelector over the leader and the caught-up followers in the ISR."""
    if not rack_id:
        return -1
    brokers = cluster.brokers
    leader = brokers.get(log.leader)
    if leader is not None and leader.rack == rack_id:
        return -1
    if not log.log_start_offset <= fetch_offset <= log.next_offset:  # no replica has it: the leader answers
        return -1
    for node in sorted(in_sync(cluster, log)):
        if node != log.leader and brokers[node].rack == rack_id:
            return node
    return -1
