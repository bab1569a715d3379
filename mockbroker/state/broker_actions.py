"""Cluster actions on state: brokers going down and up, leaders and coordinators moving.

A broker taken down leaves Metadata; every partition it led gets a new leader (the first live replica,
else the first live broker, or none: state/elections.py) with a bumped leader epoch, as Kafka's
controller does; coordinators are re-hashed over the live brokers.  Coming back, a broker rejoins
Metadata and leads only the leaderless partitions elections.broker_back gives it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state import answer_epoch

if TYPE_CHECKING:
    from mockbroker.state.cluster import BrokerInfo, ClusterState


def take_down(cluster: ClusterState, node_id: int) -> BrokerInfo:
    info = cluster.brokers.get(node_id)
    if info is None:
        raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {node_id} is not up")
    if len(cluster.brokers) == 1:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "cannot take down the last live broker")
    from mockbroker.state import elections  # (loaded on first use: start time)

    del cluster.brokers[node_id]
    cluster.down_brokers[node_id] = info
    live = cluster.live_broker_ids()
    for topic in cluster.topics.values():
        for log in topic.partitions:
            if log.leader == node_id:
                elections.set_leader(cluster, log, elections.leader_gone(cluster, log, node_id))
    if cluster.controller_id == node_id:
        cluster.controller_id = live[0]
        cluster.quorum.controller_moved()  # a new leader of the metadata quorum (mockbroker.state.quorum)
    answer_epoch.bump_brokers()
    return info


def bring_up(cluster: ClusterState, node_id: int) -> BrokerInfo:
    info = cluster.down_brokers.pop(node_id, None)
    if info is None:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"broker {node_id} is not down")
    cluster.brokers[node_id] = info
    from mockbroker.state import elections  # (loaded on first use: start time)

    elections.broker_back(cluster, node_id)
    answer_epoch.bump_brokers()
    return info


def move_leader(cluster: ClusterState, topic: str, partition: int, node_id: int | None = None) -> int:
    """Make ``node_id`` (default: the next live broker) lead the partition; returns the new leader."""
    log = cluster.partition(topic, partition)
    live = cluster.live_broker_ids()
    if node_id is None:
        later = [b for b in live if b > log.leader]
        node_id = later[0] if later else live[0]
    if node_id not in cluster.brokers:
        raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {node_id} is not up")
    log.bump_leader_epoch(node_id)
    return node_id


def move_coordinator(cluster: ClusterState, key: str, node_id: int | None = None) -> int:
    """Pin the coordinator of a group or transactional id to ``node_id`` (default: the next live broker)."""
    current = cluster.coordinator_for(key).node_id
    live = cluster.live_broker_ids()
    if node_id is None:
        later = [b for b in live if b > current]
        node_id = later[0] if later else live[0]
    if node_id not in cluster.brokers:
        raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {node_id} is not up")
    cluster.coordinator_overrides[key] = node_id
    answer_epoch.bump_brokers()  # FindCoordinator answers name it
    return node_id
