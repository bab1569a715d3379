"""Leader elections on cluster state (ElectLeaders), as Kafka's KRaft controller runs them.

- PREFERRED: the partition's first replica becomes leader if it is live (in the ISR, which here is the
  live replicas); ELECTION_NOT_NEEDED when it leads already, PREFERRED_LEADER_NOT_AVAILABLE when it is
  down.
- UNCLEAN: only for a partition without a live leader; the first live replica becomes leader, else
  ELIGIBLE_LEADERS_NOT_AVAILABLE.  The mock always keeps a live leader (a broker going down hands its
  leaderships on), so an unclean election normally answers ELECTION_NOT_NEEDED, as Kafka does for a
  partition that has a leader.
- A leader change bumps the leader epoch, so clients learn of it from Metadata.
- ``topics`` None = every partition; partitions needing no election are then left out of the answer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mockbroker.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState

log = logging.getLogger("mockbroker.state")

PREFERRED, UNCLEAN = 0, 1


@dataclass
class ElectionResult:
    topic: str
    partition: int
    error_code: int = 0
    message: str | None = None


def elect_leader(cluster: ClusterState, topic: str, index: int, election_type: int) -> int:
    """Run one election; returns the new leader or raises KafkaError with Kafka's code."""
    if election_type not in (PREFERRED, UNCLEAN):
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"unknown election type {election_type}")
    if topic not in cluster.topics:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}")
    log_ = cluster.topics[topic].partitions
    if not 0 <= index < len(log_):
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{index}")
    partition = log_[index]
    live = cluster.brokers
    if election_type == PREFERRED:
        preferred = partition.replicas[0]
        if partition.leader == preferred:
            raise KafkaError(ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
        if preferred not in live:
            raise KafkaError(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                             "The preferred leader was not available.")
        new = preferred
    else:
        if partition.leader in live:
            raise KafkaError(ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
        candidates = [r for r in partition.replicas if r in live]
        if not candidates:
            raise KafkaError(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                             "Eligible topic partition leaders are not available.")
        new = candidates[0]
    partition.bump_leader_epoch(new)
    log.info("ElectLeaders: %s-%s now led by broker %s (epoch %s)", topic, index, new, partition.leader_epoch)
    return new


def elect_leaders(cluster: ClusterState, election_type: int,
                  wanted: list[tuple[str, list[int]]] | None) -> list[tuple[str, list[ElectionResult]]]:
    """Elections for the named partitions (None: all partitions, leaving out those needing none)."""
    out: list[tuple[str, list[ElectionResult]]] = []
    if wanted is None:
        for name, topic in list(cluster.topics.items()):
            results = [_one(cluster, name, p.index, election_type) for p in topic.partitions]
            out.append((name, [r for r in results if r.error_code != ErrorCode.ELECTION_NOT_NEEDED]))
        return out
    for name, indexes in wanted:
        out.append((name, [_one(cluster, name, i, election_type) for i in indexes]))
    return out


def _one(cluster: ClusterState, topic: str, index: int, election_type: int) -> ElectionResult:
    try:
        elect_leader(cluster, topic, index, election_type)
    except KafkaError as exc:
        if exc.code != ErrorCode.ELECTION_NOT_NEEDED:
            log.info("ElectLeaders: %s-%s: %s", topic, index, exc)
        return ElectionResult(topic, index, exc.code, exc.message)
    return ElectionResult(topic, index)
