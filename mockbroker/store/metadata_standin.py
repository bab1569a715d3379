"""A small stand-in for ``mockbroker.store.metadata`` (written by another change, which captures the whole
cluster's metadata): the same two functions, keeping the cluster id, the topics with their ids, partition
assignments, leaders, leader epochs and configs.  ``store.data_dir`` uses the real module when it is there."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.state import answer_epoch
from mockbroker.state.config import TopicConfig

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState


def capture(state: ClusterState) -> dict[str, Any]:
    """The cluster id and the topics, as JSON-able data."""
    topics = []
    for topic in state.topics.values():
        topics.append({
            "name": topic.name, "id": topic.topic_id.hex(), "internal": topic.is_internal,
            "replication_factor": topic.replication_factor,
            "configs": {k: str(v) for k, v in topic.config.overrides.items()},
            "partitions": [{"replicas": list(p.replicas), "leader": p.leader, "leader_epoch": p.leader_epoch}
                           for p in topic.partitions],
        })
    return {"cluster_id": state.cluster_id, "topics": topics}


def restore(state: ClusterState, data: dict[str, Any]) -> None:
    """Make the captured topics in a fresh ``state`` (their logs empty, made by ``state.new_log``)."""
    from mockbroker.state.cluster import Topic

    if data.get("cluster_id"):
        state.config.set("cluster.id", data["cluster_id"])
    for t in data.get("topics", []):
        topic = Topic(t["name"], bytes.fromhex(t["id"]), [], TopicConfig(state.config, t["configs"]),
                      bool(t["internal"]), int(t["replication_factor"]))
        for index, p in enumerate(t["partitions"]):
            log = state.new_log(topic, index, list(p["replicas"]))
            log.leader = int(p["leader"])
            log.leader_epoch = int(p["leader_epoch"])
            topic.partitions.append(log)
        state.topics[topic.name] = topic
        state.topics_by_id[topic.topic_id] = topic
    answer_epoch.bump()
