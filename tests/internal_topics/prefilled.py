"""Test helper: a cluster whose ``__consumer_offsets`` holds another cluster's records, loaded as a
data directory or snapshot would (coordinator_load.load_all once the logs are filled)."""

from __future__ import annotations

from typing import Any

from mockbroker.cluster import MockCluster
from mockbroker.state.cluster import ClusterState
from mockbroker.state.coordinator_load import load_all
from mockbroker.state.internal_topics import CONSUMER_OFFSETS, ensure, is_internal
from mockbroker.state.log import StoredBatch


def copy_topics(src: ClusterState, dst: ClusterState) -> None:
    """The source's ordinary topics, same names, partition counts and topic ids (KIP-848 assignments
    name topics by id)."""
    for name, topic in src.topics.items():
        if is_internal(name) or name in dst.topics:
            continue
        made = dst.create_topic(name, len(topic.partitions))
        del dst.topics_by_id[made.topic_id]
        made.topic_id = topic.topic_id
        dst.topics_by_id[made.topic_id] = made


def copy_offsets_topic(src: ClusterState, dst: ClusterState) -> int:
    """Every ``__consumer_offsets`` batch of ``src`` appended, byte for byte, to ``dst``'s; the batch count."""
    source = src.topics[CONSUMER_OFFSETS]
    target = ensure(dst, CONSUMER_OFFSETS)
    count = 0
    for s_log, d_log in zip(source.partitions, target.partitions, strict=True):
        for b in s_log.batches:
            data = b"".join(bytes(x) for x in b.buffers)
            d_log.next_offset = b.base_offset  # (a compacted log has gaps: its offsets are kept)
            d_log.append(StoredBatch(b.base_offset, b.last_offset, b.max_timestamp, len(data), (data,),
                                     b.producer_id, b.is_transactional, b.is_control))
            count += 1
    return count


def rebuilt_state(src: ClusterState) -> ClusterState:
    """A fresh ClusterState with ``src``'s topics and ``__consumer_offsets``, its coordinators loaded."""
    dst = ClusterState()
    copy_topics(src, dst)
    copy_offsets_topic(src, dst)
    load_all(dst)
    return dst


def cluster_from(src: ClusterState, **options: Any) -> MockCluster:
    """A MockCluster (not started) whose state holds ``src``'s topics and ``__consumer_offsets``, loaded."""
    cluster = MockCluster(**options)
    copy_topics(src, cluster.state)
    copy_offsets_topic(src, cluster.state)
    load_all(cluster.state)
    return cluster
