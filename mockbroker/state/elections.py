"""Leader elections on cluster state (ElectLeaders, brokers going down and up), as Kafka's KRaft
controller runs them.

The mock keeps no follower lag: a partition's ISR is its replicas on live brokers (Metadata's
isr_nodes), so every live replica of a led partition is in sync and an election never loses data (one
log per partition: an unclean election here loses nothing either; a real one may lose what the old
leader had alone).

- PREFERRED: the partition's first replica becomes leader if it is live and in sync (for a leaderless
  partition: the replica it last had in sync); ELECTION_NOT_NEEDED when it leads already,
  PREFERRED_LEADER_NOT_AVAILABLE otherwise.
- UNCLEAN: only for a partition without a live leader; the first live replica becomes leader whatever
  ``unclean.leader.election.enable`` says (an explicit unclean election, as Kafka), else
  ELIGIBLE_LEADERS_NOT_AVAILABLE; ELECTION_NOT_NEEDED for a partition with a live leader.
- A broker going down (broker_actions.take_down) hands each partition it led to the first other live
  replica.  With none, Kafka leaves the partition leaderless (leader -1, Metadata's
  LEADER_NOT_AVAILABLE) with the downed leader as its last in-sync replica: so does the mock when
  ``mock.leader.failover.to.any.broker`` is false; by default (true) it hands the partition to another
  live broker instead, so replication-factor-1 topics survive a broker restart in tests.
- A broker coming back (broker_actions.bring_up) leads the leaderless partitions whose last in-sync
  replica it is (a clean election), and, where the topic's ``unclean.leader.election.enable`` (else
  the broker's) is true, those it is only a replica of (an unclean election, logged as such); others
  stay leaderless until that replica returns or an UNCLEAN ElectLeaders.  (Turning the config on
  later does not by itself elect: Kafka's controller does that on a timer the mock does not run.)
- A leader change bumps the leader epoch, so clients learn of it from Metadata.
- ``topics`` None = every partition; partitions needing no election are then left out of the answer.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mockbroker.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState
    from mockbroker.state.log import PartitionLog

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
        last_in_sync = leaderless(cluster).get(partition) if partition.leader < 0 else None
        if preferred not in live or (last_in_sync is not None and preferred != last_in_sync):
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
        if leaderless(cluster).get(partition) != new:
            log.warning("ElectLeaders: unclean election of out-of-sync replica %s for %s-%s", new, topic, index)
    set_leader(cluster, partition, new)
    log.info("ElectLeaders: %s-%s now led by broker %s (epoch %s)", topic, index, new, partition.leader_epoch)
    return new


def leaderless(cluster: ClusterState) -> weakref.WeakKeyDictionary[PartitionLog, int]:
    """The cluster's partitions without a leader (leader -1) -> the replica they last had in sync."""
    held = cluster.__dict__.get("_leaderless")
    if held is None:
        held = cluster.__dict__["_leaderless"] = weakref.WeakKeyDictionary()
    return held


def set_leader(cluster: ClusterState, partition: PartitionLog, new: int) -> None:
    """Make ``new`` lead the partition (-1: none), with a new leader epoch."""
    if new < 0:
        leaderless(cluster)[partition] = partition.leader
        partition.leader = -1
        partition.bump_leader_epoch()
        return
    leaderless(cluster).pop(partition, None)
    partition.bump_leader_epoch(new)


def unclean_allowed(cluster: ClusterState, topic: str) -> bool:
    """The topic's ``unclean.leader.election.enable``, else the broker's (Kafka's default: false)."""
    return bool(cluster.topics[topic].config["unclean.leader.election.enable"])


def leader_gone(cluster: ClusterState, partition: PartitionLog, node_id: int) -> int:
    """The new leader of a partition led by ``node_id``, which went down: the first other live
    replica; with none, -1 (leaderless, as Kafka) or, while ``mock.leader.failover.to.any.broker``
    is on, another live broker."""
    new = next((r for r in partition.replicas if r in cluster.brokers and r != node_id), None)
    if new is not None:
        return new
    if cluster.config["mock.leader.failover.to.any.broker"]:
        live = cluster.live_broker_ids()
        return live[partition.index % len(live)]
    log.warning("%s-%s is leaderless: broker %s, its last in-sync replica, is down", partition.topic,
                partition.index, node_id)
    return -1


def broker_back(cluster: ClusterState, node_id: int) -> list[PartitionLog]:
    """Elections a broker coming back runs: it leads each leaderless partition whose last in-sync replica
    it is, and, where unclean election is enabled, those it is a replica of.  The partitions it now leads."""
    elected = []
    held = leaderless(cluster)
    for partition, last in list(held.items()):
        if partition.leader >= 0:  # led again meanwhile (MockCluster.move_leader, a reassignment)
            del held[partition]
            continue
        if node_id not in partition.replicas or partition.topic not in cluster.topics:
            continue
        if last != node_id:
            if not unclean_allowed(cluster, partition.topic):
                continue
            log.warning("unclean election: out-of-sync replica %s now leads %s-%s (its last in-sync replica %s "
                        "is down)", node_id, partition.topic, partition.index, last)
        set_leader(cluster, partition, node_id)
        elected.append(partition)
    return elected


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
