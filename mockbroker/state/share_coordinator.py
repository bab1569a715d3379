"""Share groups (KIP-932) as one part of the cluster: membership, share sessions and share-partitions
tied to the cluster's topics, logs, configs and clock.

The pieces are plain state of their own (share_groups: members and the simple assignor; share_sessions:
ShareFetch sessions; share_partitions: in-flight records); this module joins them as Kafka's share
coordinator and share-partition leaders do together:
- a member's share session closing (ShareFetch/ShareAcknowledge epoch -1, or a new session replacing it)
  or its group session expiring gives back the records it had acquired (AVAILABLE, or ARCHIVED at the
  delivery limit), as Kafka's releaseAcquiredRecords; so does the connection it opened the session on
  closing (a crashed client); a member that leaves with epoch -1 closes its share sessions itself;
- a share-partition starts where the group's ``share.auto.offset.reset`` says (latest by default), the
  first time a member fetches it; acquisition locks last ``share.record.lock.duration.ms`` (a GROUP
  config, else ``group.share.record.lock.duration.ms``) on the cluster clock, so tests move a manual
  clock instead of waiting;
- a fetch reads the log from the share-partition's next fetch offset (its first AVAILABLE record, else
  SPEO) in whole batches within the bytes the handler gives it, the first batch even when larger when it
  is the request's first read with data (Kafka's minOneMessage), and acquires only what it read;
- ``share.isolation.level`` read_committed reads up to the last stable offset and never delivers
  records of aborted transactions; control batches are never delivered;
- anything that makes records available again (a release, an expired lock) wakes the fetches waiting
  for records (``waiters``), as an append does through the log's listeners;
- a share-partition's state is written to ``__share_group_state`` when it starts and whenever its
  records' states change other than by acquisition (``log``: state/share_state_log.py), as Kafka's
  share-partitions persist theirs through the share coordinator.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state.share_groups import ShareGroup, ShareGroups, ShareGroupSettings, ShareHeartbeatResult
from mockbroker.state.share_partitions import (
    AcquiredRange,
    SharePartition,
    SharePartitionKey,
    SharePartitions,
    initial_start_offset,
)
from mockbroker.state.share_sessions import ShareSessions
from mockbroker.state.share_state_log import ShareStateLog

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState
    from mockbroker.state.log import PartitionLog, StoredBatch

log = logging.getLogger("mockbroker.state")

SHARE_VERSION = "share.version"


class ShareCoordinator:
    """Every share group of the cluster (ClusterState.share, made on first use)."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.groups = ShareGroups(cluster.clock, self._topics, self._settings, self._foreign_group)
        self.sessions: dict[int, ShareSessions] = {}  # broker id -> the share sessions it holds (as in Kafka)
        # (broker id, group id, member id) -> the connection its share session was opened on
        self.session_connections: dict[tuple[int, str, str], object] = {}
        self.partitions = SharePartitions()
        # fetches waiting for records: called (with no argument) when records may have become available
        self.waiters: list[Callable[[], None]] = []
        self.log = ShareStateLog(cluster)  # share-partition states as __share_group_state records

    def _written(self, keys: Iterable[SharePartitionKey]) -> bool:
        """Write the state of each share-partition in ``keys``; whether there were any."""
        keys = list(keys)
        for key in keys:
            sp = self.partitions.get(key)
            if sp is not None:
                self.log.write(key, sp)
        return bool(keys)

    def sessions_on(self, broker_id: int) -> ShareSessions:
        """The share sessions broker ``broker_id`` holds (``group.share.max.share.sessions`` each)."""
        sessions = self.sessions.get(broker_id)
        if sessions is None:
            config = self.cluster.config
            sessions = self.sessions[broker_id] = ShareSessions(lambda: int(config["group.share.max.share.sessions"]))
        return sessions

    # -- what the pieces read from the cluster ------------------------------------------------------
    def _topics(self) -> dict[str, tuple[Any, int]]:
        return {name: (t.topic_id, len(t.partitions)) for name, t in self.cluster.topics.items()}

    def _settings(self, group_id: str) -> ShareGroupSettings:
        value = self.cluster.group_config_value
        return ShareGroupSettings(session_timeout_ms=value(group_id, "share.session.timeout.ms"),
                                  heartbeat_interval_ms=value(group_id, "share.heartbeat.interval.ms"),
                                  max_size=int(self.cluster.config["group.share.max.size"]))

    def _foreign_group(self, group_id: str) -> bool:
        """A classic or consumer group holds the id (made only if the group coordinator exists)."""
        if "groups" not in self.cluster.__dict__:
            return False
        group = self.cluster.groups.groups.get(group_id)
        return group is not None and bool(group.members or group.offsets or
                                          (group.consumer is not None and group.consumer.members))

    def delivery_limit(self, _group_id: str = "") -> int:
        return int(self.cluster.config["group.share.delivery.count.limit"])

    def lock_ms(self, group_id: str) -> int:
        return self.cluster.group_config_value(group_id, "share.record.lock.duration.ms")

    def read_committed(self, group_id: str) -> bool:
        return self.cluster.group_config_text(group_id, "share.isolation.level").strip().lower() == "read_committed"

    def enabled(self) -> bool:
        """share.version finalized at 1 or more (a fresh cluster: 1); 0 turns share groups off, as Kafka."""
        return self.cluster.features.finalized.get(SHARE_VERSION, 0) >= 1

    # -- membership -----------------------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  subscribed: list[str] | None, client_id: str = "", client_host: str = "") -> ShareHeartbeatResult:
        # (a member leaving keeps its share sessions: a client closing sends its last acknowledgements and
        # its session's close beside the leave, on another connection, and either may come first)
        return self.groups.heartbeat(group_id, member_id, member_epoch, rack_id, subscribed, client_id, client_host)

    def member_gone(self, group_id: str, member_id: str) -> None:
        """A member left or expired: its share sessions close and its acquired records go back."""
        for sessions in self.sessions.values():
            sessions.drop_member(group_id, member_id)
        if self._written(self.partitions.release_member(group_id, member_id, self.delivery_limit(group_id))):
            self.wake()

    def opened_on(self, broker_id: int, group_id: str, member_id: str, connection: object) -> None:
        """A share session (re)opened by a ShareFetch epoch 0 arriving on ``connection``."""
        self.session_connections[(broker_id, group_id, member_id)] = connection

    def connection_closed(self, broker_id: int, connection: object) -> None:
        """A client connection closed: the share sessions opened on it go and their records come back,
        as Kafka's ShareSessionCache evicts a disconnected client's sessions."""
        gone = [key for key, conn in self.session_connections.items() if conn is connection and key[0] == broker_id]
        for key in gone:
            del self.session_connections[key]
            _broker, group_id, member_id = key
            partitions = self.sessions_on(broker_id).close(group_id, member_id)
            self.session_closed(group_id, member_id, partitions)

    def session_closed(self, group_id: str, member_id: str, partitions: Iterable[tuple[Any, int]]) -> None:
        """A member's share session on one broker closed (ShareFetch/ShareAcknowledge epoch -1): the records
        it acquired on the session's partitions (topic id, index) go back, as Kafka's releaseSession."""
        by_id = self.cluster.topics_by_id
        named = [(by_id[tid].name, index) for tid, index in partitions if tid in by_id]
        if named and self._written(self.partitions.release_member(group_id, member_id, self.delivery_limit(group_id),
                                                                  named)):
            self.wake()

    def wake(self) -> None:
        for waiter in list(self.waiters):
            waiter()

    # -- share-partitions --------------------------------------------------------------------------
    def partition(self, group_id: str, plog: PartitionLog) -> SharePartition:
        """The group's share-partition of ``plog``, started where share.auto.offset.reset says when new."""
        key: SharePartitionKey = (group_id, plog.topic, plog.index)

        def start() -> int:
            reset = self.cluster.group_config_text(group_id, "share.auto.offset.reset")
            return initial_start_offset(reset, log_start_offset=plog.log_start_offset,
                                        high_watermark=plog.next_offset, now_ms=self.cluster.clock.now_ms(),
                                        offset_for_timestamp=lambda ts: _first_batch_at(plog, ts))

        new = self.partitions.get(key) is None
        sp = self.partitions.get_or_create(key, start)
        if sp.start_offset < plog.log_start_offset:  # retention or DeleteRecords moved the log's start
            sp.advance_to_log_start(plog.log_start_offset)
            new = True
        if new:
            self.log.write(key, sp)
        return sp

    def acquirable(self, group_id: str, plog: PartitionLog) -> bool:
        """Whether a fetch may acquire on the group's share-partition of ``plog`` (Kafka's canAcquireRecords):
        records wait for redelivery, or the in-flight window is under the record lock limit.  Only such
        partitions are read, and share a request's MaxBytes."""
        sp = self._expired(group_id, plog)
        return sp.has_available() or sp.can_acquire_new(self._max_record_locks())

    def acquire(self, group_id: str, member_id: str, plog: PartitionLog, max_records: int,
                max_bytes: int = 2**31 - 1, min_one: bool = True) -> tuple[list[AcquiredRange], int]:
        """Read the log from the share-partition's next fetch offset as Kafka's share fetch does -- whole
        batches within ``max_bytes``, the first one even when larger with ``min_one`` (minOneMessage) -- and
        acquire up to ``max_records`` (whole log batches) of what was read for ``member_id``: (the acquired
        ranges, the bytes the read took from the request's budget)."""
        sp = self._expired(group_id, plog)
        committed = self.read_committed(group_id)
        end = plog.last_stable_offset if committed else plog.next_offset
        batches, read = _read(plog, sp.next_fetch_offset(), end, max_bytes, min_one)
        fetchable, skip = _fetchable(plog, batches, end, committed)
        ranges = sp.acquire(member_id, self.cluster.clock.now_ms(), self.lock_ms(group_id), max_records,
                            self.delivery_limit(group_id), fetchable, max_record_locks=self._max_record_locks(),
                            skip=skip)
        return ranges, read

    def _expired(self, group_id: str, plog: PartitionLog) -> SharePartition:
        """The share-partition, its locks past due expired (Kafka's lock timers run on their own)."""
        sp = self.partition(group_id, plog)
        if sp.expire_locks(self.cluster.clock.now_ms(), self.delivery_limit(group_id)):
            self.log.write((group_id, plog.topic, plog.index), sp)
        return sp

    def _max_record_locks(self) -> int:
        return int(self.cluster.config["group.share.partition.max.record.locks"])

    def acknowledge(self, group_id: str, member_id: str, plog: PartitionLog,
                    batches: Sequence[tuple[int, int, Sequence[int]]]) -> None:
        """A member's acknowledgements for one partition (KafkaError: INVALID_RECORD_STATE, INVALID_REQUEST)."""
        sp = self.partitions.get((group_id, plog.topic, plog.index))
        if sp is None:
            raise KafkaError(ErrorCode.INVALID_RECORD_STATE, "no records of this partition are in flight")
        released = sp.acknowledge(member_id, batches, self.delivery_limit(group_id), self.cluster.clock.now_ms())
        self.log.write((group_id, plog.topic, plog.index), sp)
        if released:
            self.wake()

    # -- time -----------------------------------------------------------------------------------------
    def timers_live(self) -> bool:
        return self.groups.timers_live() or self.partitions.next_deadline() is not None

    def tick(self) -> None:
        """Expire members whose session ran out (their records go back) and acquisition locks past due."""
        for group_id, member_id in self.groups.tick():
            log.info("share group %s: member %s expired", group_id, member_id)
            self.member_gone(group_id, member_id)
        if self._written(self.partitions.expire(self.cluster.clock.now_ms(), self.delivery_limit)):
            self.wake()

    # -- admin --------------------------------------------------------------------------------------
    def delete_group(self, group_id: str) -> None:
        """DeleteGroups of a share group: GROUP_ID_NOT_FOUND / NON_EMPTY_GROUP as Kafka."""
        self.groups.delete(group_id)
        for sessions in self.sessions.values():
            sessions.drop_group(group_id)
        for tp in self.partitions.all_for_group(group_id):
            self.log.delete((group_id, *tp))
        self.partitions.forget_group(group_id)

    def forget_topic(self, topic: str) -> None:
        self.partitions.forget_topic(topic)
        self.log.forget_topic(topic)

    def share_group(self, group_id: str) -> ShareGroup:
        """The share group holding ``group_id``, else GROUP_ID_NOT_FOUND with Kafka's messages (unknown, or
        held by a classic or consumer group: GroupMetadataManager.shareGroup)."""
        if self._foreign_group(group_id):
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        group = self.groups.group(group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        return group

    def is_share_group(self, group_id: str) -> bool:
        """A share group holds ``group_id`` (and no classic or consumer group does)."""
        return group_id in self.groups.groups and not self._foreign_group(group_id)

    def check_offsets_alterable(self, group_id: str) -> None:
        """Alter/DeleteShareGroupOffsets: the share group exists and has no members (Kafka's
        validateOffsetsAlterable): GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP."""
        if self.share_group(group_id).members:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")

    def offsets_summary(self, group_id: str) -> dict[tuple[str, int], tuple[int, int]]:
        """(SPSO, records at or past it already ACKNOWLEDGED or ARCHIVED) of each started share-partition:
        what Kafka's share coordinator reads for DescribeShareGroupOffsets (start offset, delivery complete
        count)."""
        out: dict[tuple[str, int], tuple[int, int]] = {}
        for tp, sp in self.partitions.all_for_group(group_id).items():
            done = sum(1 for r in sp.state()["records"]
                       if r["offset"] >= sp.start_offset and r["state"] in ("ACKNOWLEDGED", "ARCHIVED"))
            out[tp] = (sp.start_offset, done)
        return out

    def alter_start_offset(self, group_id: str, topic: str, partition: int, offset: int) -> None:
        """A new SPSO; -1 (Kafka's uninitialized start offset) forgets the share-partition, so the next
        fetch starts it where share.auto.offset.reset says."""
        key: SharePartitionKey = (group_id, topic, partition)
        if offset < 0:
            self.partitions.forget(key)
            self.log.delete(key)
            return
        self.log.write(key, self.partitions.set_start_offset(key, offset), new_state_epoch=True)

    def delete_offsets(self, group_id: str, topic: str) -> None:
        for (name, index) in list(self.partitions.all_for_group(group_id)):
            if name == topic:
                self.partitions.forget((group_id, name, index))
                self.log.delete((group_id, name, index))

    def state(self, group_id: str) -> dict[str, Any]:
        """The group as the control API shows it: members with assignments, share-partitions in flight."""
        described = self.groups.describe(group_id)
        return {
            "group_id": group_id, "state": described.state, "group_epoch": described.group_epoch,
            "members": [{"member_id": m.member_id, "member_epoch": m.member_epoch, "client_id": m.client_id,
                         "subscribed": list(m.subscribed_topic_names),
                         "assignment": {name: sorted(parts) for _tid, name, parts in m.assignment}}
                        for m in described.members],
            "partitions": [{"topic": t, "partition": p, **sp.state()}
                           for (t, p), sp in self.partitions.all_for_group(group_id).items()],
        }


def _first_batch_at(plog: PartitionLog, timestamp: int) -> int | None:
    """The first offset of the first data batch whose records may be at ``timestamp`` or later (batch
    precision: its max timestamp), None when none is."""
    for batch in plog.batches:
        if not batch.is_control and batch.max_timestamp >= timestamp and batch.last_offset >= plog.log_start_offset:
            return max(batch.base_offset, plog.log_start_offset)
    return None


def _read(plog: PartitionLog, offset: int, end: int, max_bytes: int,
          min_one: bool) -> tuple[list[StoredBatch], int]:
    """Kafka's log read for one share-partition (LogSegment.read): a byte slice from the batch holding
    ``offset``, ``max_bytes`` long (at least its first batch with ``min_one``), never past ``end`` (the high
    watermark or the last stable offset): the whole batches in it, and the slice's length -- what the
    request's MaxBytes loses, a cut batch at its end included (acquisition never sees that one)."""
    if not plog.log_start_offset <= offset < min(end, plog.next_offset):
        return [], 0
    got = plog.read(offset, max(max_bytes, 0), first_always=min_one, end_offset=end)
    limit = max(max_bytes, got.batches[0].size) if min_one and got.batches else max(max_bytes, 0)
    return got.batches, min(limit, plog.bytes_after(offset, limit, end))


def _fetchable(plog: PartitionLog, batches: list[StoredBatch], end: int,
               committed: bool) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The (first, last) offsets of the batches read, and the ranges never to deliver: control batches,
    and with ``committed`` the batches of aborted transactions."""
    fetchable: list[tuple[int, int]] = []
    skip: list[tuple[int, int]] = []
    aborted = plog.producers.aborted_between(batches[0].base_offset, end) if committed and batches else []
    for batch in batches:
        if batch.is_control or (batch.is_transactional and _in_aborted(batch.producer_id, batch.base_offset, aborted)):
            skip.append((batch.base_offset, batch.last_offset))
        fetchable.append((batch.base_offset, batch.last_offset))
    return fetchable, skip


def _in_aborted(producer_id: int, offset: int, aborted: Iterable[Any]) -> bool:
    return any(a.producer_id == producer_id and a.first_offset <= offset < a.last_offset for a in aborted)
