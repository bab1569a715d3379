"""The KRaft metadata quorum, as DescribeQuorum (API 55) reports it.

The mock runs as a combined-mode KRaft cluster with a single voter: the controller (``controller_id``,
which DescribeCluster and Metadata name too) leads the ``__cluster_metadata`` log, and every other live
broker replicates it as an observer (Kafka's LeaderState voters and observers).  The leader epoch starts at 1
and moves by one each time the controller moves to another broker (its broker taken down).

The metadata log is not kept record by record.  Its end offset advances as an idle Kafka controller's does:
one NoOpRecord every ``metadata.max.idle.interval.ms`` (Kafka's default, 500 ms; KIP-835) since the cluster
started, and one record per controller election (the first included), so it never goes back; with a single
voter the high watermark is that end offset.  Observers are caught up (they fetched now), as a broker that is up is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState

METADATA_TOPIC, METADATA_PARTITION = "__cluster_metadata", 0
IDLE_INTERVAL_MS = 500  # Kafka's metadata.max.idle.interval.ms: how often an idle controller writes a NoOpRecord


@dataclass(frozen=True)
class ReplicaState:
    """One replica of the metadata log: its end offset and when it last fetched and was caught up (-1: unknown)."""

    replica_id: int
    log_end_offset: int
    last_fetch_ms: int
    last_caught_up_ms: int


@dataclass(frozen=True)
class QuorumState:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaState, ...]
    observers: tuple[ReplicaState, ...]


class MetadataQuorum:
    """The quorum's own facts: when its log started and the controller elections so far."""

    def __init__(self, started_ms: int) -> None:
        self.started_ms = started_ms
        self.leader_epoch = 1

    def controller_moved(self) -> None:
        """A new controller was elected (the old one's broker went down): a new leader epoch."""
        self.leader_epoch += 1

    def describe(self, cluster: ClusterState, now_ms: int) -> QuorumState:
        """The quorum now: the controller the single voter and leader, the other live brokers observers."""
        leader = cluster.controller_id
        end_offset = self.leader_epoch + max(0, now_ms - self.started_ms) // IDLE_INTERVAL_MS
        voter = ReplicaState(leader, end_offset, now_ms, now_ms)  # the leader: now, as Kafka reports it
        observers = tuple(ReplicaState(node, end_offset, now_ms, now_ms)
                          for node in sorted(cluster.brokers) if node != leader)
        return QuorumState(leader, self.leader_epoch, end_offset, (voter,), observers)


def is_metadata_partition(topics: list[tuple[str, list[int]]]) -> bool:
    """Kafka's RaftUtil.hasValidTopicPartition: exactly one topic, ``__cluster_metadata``, with exactly one
    partition, 0."""
    return len(topics) == 1 and topics[0][0] == METADATA_TOPIC and topics[0][1] == [METADATA_PARTITION]
