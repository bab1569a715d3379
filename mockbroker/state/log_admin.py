"""Log admin on cluster state: DeleteRecords (moving a partition's log start) and log directories
(DescribeLogDirs, AlterReplicaLogDirs).

Log directories: each broker has the directories of the ``log.dirs`` config (a comma list; ``{id}``
becomes the broker's node id; default ``/var/lib/mockbroker/broker-{id}``).  Each replica of a partition
sits in one of its broker's directories: the partition index modulo the number of directories, unless
AlterReplicaLogDirs moved it (a move is instant: no future replica stays behind).  A directory can be
marked offline (``set_offline``, for tests): it is then described with KAFKA_STORAGE_ERROR and no logs,
and replicas cannot move into it.  Sizes come from the partition logs; every directory reports
``mock.log.dir.total.bytes`` in all, usable = that minus the sizes of the logs it holds.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mockbroker.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState, Topic
    from mockbroker.state.log import PartitionLog

log = logging.getLogger("mockbroker.state")

HIGH_WATERMARK = -1  # DeleteRecords: delete everything below the high watermark


def delete_records(cluster: ClusterState, topic: str, index: int, offset: int, broker_id: int) -> int:
    """Move the log start of ``topic``-``index`` up to ``offset`` (-1: the high watermark) on its leader
    ``broker_id``, as Kafka's DeleteRecords does; returns the new low watermark (the log start).

    UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER on another broker, POLICY_VIOLATION when the
    topic's cleanup.policy lacks "delete", OFFSET_OUT_OF_RANGE for a negative offset or one past the high
    watermark.  An offset at or below today's log start changes nothing."""
    partition = cluster.leader_partition(topic, index, broker_id)
    policy = str(cluster.topic(topic).config["cleanup.policy"])
    if "delete" not in [p.strip() for p in policy.split(",")]:
        raise KafkaError(ErrorCode.POLICY_VIOLATION,
                         f"Records of partition {topic}-{index} can not be deleted due to the configured policy")
    target = partition.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                         f"The offset {target} for partition {topic}-{index} is not valid")
    if target > partition.high_watermark:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                         f"Cannot increment the log start offset to {target} of partition {topic}-{index} "
                         f"since it is larger than the high watermark {partition.high_watermark}")
    return partition.advance_log_start(target)


@dataclass
class DirReport:
    """One log directory of one broker, as DescribeLogDirs reports it."""

    path: str
    error_code: int = 0
    # topic -> [(partition index, size in bytes)]
    topics: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    total_bytes: int = -1
    usable_bytes: int = -1


class LogDirs:
    """Which log directory holds each replica, and which directories are offline."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.placement: dict[tuple[bytes, int, int], str] = {}  # (topic id, partition, broker) -> dir
        self.offline: set[tuple[int, str]] = set()  # (broker, dir)

    def dirs(self, broker_id: int) -> list[str]:
        """The broker's log directories, from ``log.dirs``."""
        text = str(self.cluster.config["log.dirs"]).replace("{id}", str(broker_id))
        return [posixpath.normpath(d.strip()) for d in text.split(",") if d.strip()]

    def set_offline(self, broker_id: int, path: str, offline: bool = True) -> None:
        """Mark one of the broker's directories offline (or back online)."""
        path = posixpath.normpath(path)
        if path not in self.dirs(broker_id):
            raise KafkaError(ErrorCode.LOG_DIR_NOT_FOUND, f"broker {broker_id} has no log directory {path}")
        if offline:
            self.offline.add((broker_id, path))
        else:
            self.offline.discard((broker_id, path))

    def dir_of(self, topic: Topic, index: int, broker_id: int) -> str:
        """The directory holding the broker's replica of the partition."""
        dirs = self.dirs(broker_id)
        chosen = self.placement.get((topic.topic_id, index, broker_id))
        return chosen if chosen in dirs else dirs[index % len(dirs)]

    def describe(self, broker_id: int, wanted: dict[str, set[int]] | None) -> list[DirReport]:
        """The broker's directories with the replicas it hosts (all, or those in ``wanted``)."""
        reports = {path: DirReport(path) for path in self.dirs(broker_id)}
        for topic in sorted(self.cluster.topics.values(), key=lambda t: t.name):
            indexes = wanted.get(topic.name) if wanted is not None else None
            if wanted is not None and indexes is None:
                continue
            for p in self._hosted(topic, broker_id):
                if indexes is None or p.index in indexes:
                    report = reports[self.dir_of(topic, p.index, broker_id)]
                    report.topics.setdefault(topic.name, []).append((p.index, p.size_bytes))
        total = self.cluster.config["mock.log.dir.total.bytes"]
        for path, report in reports.items():
            if (broker_id, path) in self.offline:
                report.error_code = ErrorCode.KAFKA_STORAGE_ERROR
                report.topics = {}
                log.warning("DescribeLogDirs: broker %s log directory %s is offline", broker_id, path)
                continue
            used = sum(self._size_in(broker_id, path))
            report.total_bytes, report.usable_bytes = total, max(total - used, 0)
        return list(reports.values())

    def _size_in(self, broker_id: int, path: str) -> Iterable[int]:
        for topic in self.cluster.topics.values():
            for p in self._hosted(topic, broker_id):
                if self.dir_of(topic, p.index, broker_id) == path:
                    yield p.size_bytes

    @staticmethod
    def _hosted(topic: Topic, broker_id: int) -> list[PartitionLog]:
        return [p for p in topic.partitions if broker_id in p.replicas]

    def alter(self, broker_id: int, path: str, topic_name: str, index: int) -> None:
        """Move the broker's replica of ``topic_name``-``index`` into ``path``, as Kafka's
        AlterReplicaLogDirs: LOG_DIR_NOT_FOUND for a directory the broker does not have,
        KAFKA_STORAGE_ERROR for an offline one, UNKNOWN_TOPIC_OR_PARTITION, REPLICA_NOT_AVAILABLE when the
        broker holds no replica of the partition."""
        path = posixpath.normpath(path) if path else path
        if not path or not posixpath.isabs(path) or path not in self.dirs(broker_id):
            raise KafkaError(ErrorCode.LOG_DIR_NOT_FOUND, f"Log dir {path} is not found in the config.")
        if (broker_id, path) in self.offline:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"Log directory {path} is offline")
        partition = self.cluster.partition(topic_name, index)
        if broker_id not in partition.replicas:
            raise KafkaError(ErrorCode.REPLICA_NOT_AVAILABLE,
                             f"Broker {broker_id} holds no replica of {topic_name}-{index}")
        topic = self.cluster.topic(topic_name)
        self.placement[(topic.topic_id, index, broker_id)] = path
