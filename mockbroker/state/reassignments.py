"""Partition reassignments on cluster state (AlterPartitionReassignments, ListPartitionReassignments),
after Kafka's KRaft controller.

- A reassignment to target replicas T of a partition with replicas C lists, while in progress,
  replicas T + (C not in T), adding T - C and removing C - T.  A new reassignment of a partition in
  progress starts from its in-progress replica list, as in Kafka.
- It completes once ``mock.reassignment.delay.ms`` has passed since it started (only when it adds
  replicas; a pure removal or reordering needs no copying) and every target replica is live (Kafka: in
  the ISR).  With the default delay 0 and live targets it completes within the request.
  ``ClusterState.tick()`` completes the others.
- On completion the replicas become T; a leader not in T (or not live) hands over to the first live
  target replica.  Every change of a partition's replica list bumps its leader epoch, so clients and
  the Metadata cache see it.
- Errors as Kafka: UNKNOWN_TOPIC_OR_PARTITION; INVALID_REPLICA_ASSIGNMENT for an empty list, a broker
  listed twice or a broker never registered (live or down both count as registered);
  INVALID_REPLICATION_FACTOR when ``allow_rf_change`` is off and the size changes;
  NO_REASSIGNMENT_IN_PROGRESS when cancelling (null replicas) a partition not being reassigned;
  INVALID_REPLICA_ASSIGNMENT when a cancellation would leave no live replica and the topic does not
  allow unclean leader election.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mockbroker.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState
    from mockbroker.state.log import PartitionLog

log = logging.getLogger("mockbroker.state")


@dataclass
class Reassignment:
    target: list[int]
    adding: list[int]
    removing: list[int]
    due_ms: int


Ongoing = tuple[int, list[int], list[int], list[int]]  # partition, replicas, adding, removing


class Reassignments:
    """The reassignments in progress, keyed by (topic id, partition)."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.ongoing: dict[tuple[bytes, int], Reassignment] = {}

    def _partition(self, topic: str, index: int) -> tuple[bytes, PartitionLog]:
        t = self.cluster.topics.get(topic)
        if t is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}.")
        if not 0 <= index < len(t.partitions):
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{index}.")
        return t.topic_id, t.partitions[index]

    def alter(self, topic: str, index: int, replicas: list[int] | None, allow_rf_change: bool = True) -> None:
        """Start (or replace) a reassignment of ``topic``-``index`` to ``replicas``; None cancels one."""
        topic_id, partition = self._partition(topic, index)
        key = (topic_id, index)
        if replicas is None:
            self._cancel(topic, key, partition)
            return
        self._check(replicas)
        current = self.ongoing.get(key)
        if not allow_rf_change:
            size = len(current.target) if current is not None else len(partition.replicas)
            if size != len(replicas):
                raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                                 f"The replication factor is changed from {size} to {len(replicas)}")
        now_replicas = list(partition.replicas)
        adding = [r for r in replicas if r not in now_replicas]
        removing = [r for r in now_replicas if r not in replicas]
        merged = list(replicas) + removing
        delay = self.cluster.config["mock.reassignment.delay.ms"] if adding else 0
        self.ongoing[key] = Reassignment(list(replicas), adding, removing, self.cluster.clock.now_ms() + delay)
        if merged != now_replicas:
            partition.replicas = merged
            partition.bump_leader_epoch()
        log.info("AlterPartitionReassignments: %s-%s to %s (adding %s, removing %s)",
                 topic, index, replicas, adding, removing)
        self._maybe_complete(key, partition)

    def _check(self, replicas: list[int]) -> None:
        if not replicas:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             "The manual partition assignment includes an empty replica list.")
        registered = set(self.cluster.brokers) | set(self.cluster.down_brokers)
        previous = None
        for broker in sorted(replicas):
            if broker not in registered:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"The manual partition assignment includes broker {broker}, but no such "
                                 "broker is registered.")
            if broker == previous:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"The manual partition assignment includes the broker {broker} more than once.")
            previous = broker

    def _cancel(self, topic: str, key: tuple[bytes, int], partition: PartitionLog) -> None:
        current = self.ongoing.get(key)
        if current is None:
            raise KafkaError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                             "No partition reassignment is in progress for this topic partition.")
        reverted = [r for r in partition.replicas if r not in current.adding]
        live = [r for r in reverted if r in self.cluster.brokers]
        if not live and not _unclean_allowed(self.cluster, topic):
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Unable to revert partition assignment for {topic}:{partition.index} because it "
                             "would require an unclean leader election.")
        del self.ongoing[key]
        partition.replicas = reverted
        new_leader = None
        if partition.leader not in reverted or partition.leader not in self.cluster.brokers:
            new_leader = live[0] if live else reverted[0]
        partition.bump_leader_epoch(new_leader)
        log.info("AlterPartitionReassignments: %s-%s reassignment cancelled, replicas back to %s",
                 topic, partition.index, reverted)

    def _maybe_complete(self, key: tuple[bytes, int], partition: PartitionLog) -> bool:
        r = self.ongoing[key]
        live = self.cluster.brokers
        if self.cluster.clock.now_ms() < r.due_ms or any(b not in live for b in r.target):
            return False
        del self.ongoing[key]
        changed = partition.replicas != r.target
        partition.replicas = list(r.target)
        new_leader = None
        if partition.leader not in r.target or partition.leader not in live:
            new_leader = next(b for b in r.target if b in live)
        if changed or new_leader is not None:
            partition.bump_leader_epoch(new_leader)
        log.info("AlterPartitionReassignments: %s-%s reassignment done: replicas %s, leader %s",
                 partition.topic, partition.index, r.target, partition.leader)
        return True

    def tick(self) -> None:
        """Complete the reassignments whose time has come; forget those of deleted topics."""
        if not self.ongoing:
            return
        for key in list(self.ongoing):
            topic = self.cluster.topics_by_id.get(key[0])
            if topic is None or key[1] >= len(topic.partitions):
                del self.ongoing[key]
                continue
            self._maybe_complete(key, topic.partitions[key[1]])

    def listing(self, wanted: list[tuple[str, list[int]]] | None) -> list[tuple[str, list[Ongoing]]]:
        """Reassignments in progress: (topic, [(partition, replicas, adding, removing)]), sorted by
        name; ``wanted`` None = all, else only those named (unknown names are left out, as Kafka does)."""
        by_topic: dict[str, list[Ongoing]] = {}
        filters: dict[str, set[int]] | None = None if wanted is None else {}
        if wanted is not None:
            for name, indexes in wanted:
                filters.setdefault(name, set()).update(indexes)  # type: ignore[union-attr]
        for (topic_id, index), r in sorted(self.ongoing.items(), key=lambda kv: kv[0][1]):
            topic = self.cluster.topics_by_id.get(topic_id)
            if topic is None or index >= len(topic.partitions):
                continue
            if filters is not None and index not in filters.get(topic.name, ()):
                continue
            by_topic.setdefault(topic.name, []).append(
                (index, list(topic.partitions[index].replicas), list(r.adding), list(r.removing)))
        return sorted(by_topic.items())


def _unclean_allowed(cluster: ClusterState, topic: str) -> bool:
    value = cluster.topics[topic].config.overrides.get("unclean.leader.election.enable", "false")
    return str(value).strip().lower() == "true"
