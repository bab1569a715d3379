"""ShareFetch: v1 (KIP-932 share groups; v0 was Kafka 4.0's early access and is not served).

Behavior (share-partitions: mockbroker.state.share_partitions; sessions: share_sessions):
- The share session: epoch 0 opens it with the request's partitions (acknowledgements with epoch 0 ->
  INVALID_REQUEST), later epochs must follow on (INVALID_SHARE_SESSION_EPOCH; none open ->
  SHARE_SESSION_NOT_FOUND), add the request's partitions and drop ForgottenTopicsData; -1 closes it
  after its acknowledgements are applied, and the member's acquired records on its partitions go back; so
  does the connection that opened the session closing.
  More than `group.share.max.share.sessions` on one broker -> SHARE_SESSION_LIMIT_REACHED.
- Acknowledgement batches (0 GAP, 1 ACCEPT, 2 RELEASE, 3 REJECT) apply per partition first; a bad one
  answers the partition's AcknowledgeErrorCode (INVALID_RECORD_STATE, INVALID_REQUEST) and the rest go on.
- Then records are acquired for the member across the session's partitions led here, up to MaxRecords
  (whole log batches, so a few more may come, as Kafka), AVAILABLE (released or expired) records first;
  each partition answers its batches and the acquired ranges with their delivery counts, cut where a log
  batch begins once a run holds BatchSize records (BATCH_OPTIMIZED: a log batch is never split). The lock lasts
  the group's `share.record.lock.duration.ms` (AcquisitionLockTimeoutMs).
- Bytes, as Kafka's DelayedShareFetch reads the log: the partitions that can acquire (records to redeliver,
  or room under the record lock limit), in the session's order turned by its epoch (ROUND_ROBIN), share
  MaxBytes capped by the broker's `fetch.max.bytes` evenly (PartitionMaxBytesStrategy UNIFORM); each reads
  whole batches from its next fetch offset within its share and what the request has left, the first
  partition with data at least its first batch (minOneMessage); records are acquired only from what was
  read. MaxBytes 0 -> those partitions UNKNOWN_SERVER_ERROR "Request max bytes must be greater than 0".
- Nothing read from the log (nothing to acquire past the share-partitions' next fetch offsets): the request
  waits up to MaxWaitMs (capped at 30 s) for an append to its partitions or records coming back (a
  release, an expired lock), then answers what it finds; a read that acquired nothing (a transaction
  marker, aborted records) answers at once, as Kafka's completes once MinBytes of the log are there.
- Partitions: UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (with the current
  leader), TOPIC_AUTHORIZATION_FAILED; the group: GROUP_AUTHORIZATION_FAILED, UNSUPPORTED_VERSION when
  share.version is 0.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import share_common
from mockbroker.handlers.k01_fetch import MAX_WAIT_CAP_MS
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.share_fetch_request import ShareFetchRequest
    from mockbroker.state.log import PartitionLog

RESP = api.response_module(78)
NO_MAX_BYTES = "Request max bytes must be greater than 0"  # (Kafka's message, from PartitionMaxBytesStrategy)


def _partition_answer(index: int, plog: PartitionLog | None, error: int = 0, message: str | None = None) -> Any:
    leader = RESP.LeaderIdAndEpoch(leader_id=plog.leader if plog is not None else -1,
                                   leader_epoch=plog.leader_epoch if plog is not None else -1)
    return RESP.PartitionData(partition_index=index, error_code=error, error_message=message, acknowledge_error_code=0,
                              current_leader=leader, records=b"", acquired_records=[])


class _Answer:
    """The partitions a ShareFetch answers, by topic id, in the order first met."""

    def __init__(self) -> None:
        self.topics: dict[Any, dict[int, Any]] = {}

    def part(self, topic_id: Any, index: int, plog: PartitionLog | None) -> Any:
        parts = self.topics.setdefault(topic_id, {})
        if index not in parts:
            parts[index] = _partition_answer(index, plog)
        return parts[index]

    def response(self, ctx: RequestContext, group_id: str) -> Any:
        return RESP.ShareFetchResponse(
            error_code=0, acquisition_lock_timeout_ms=ctx.cluster.share.lock_ms(group_id),
            responses=[RESP.ShareFetchableTopicResponse(topic_id=tid, partitions=list(parts.values()))
                       for tid, parts in self.topics.items()],
            node_endpoints=[])


def _refused(code: int, message: str | None = None) -> Any:
    return RESP.ShareFetchResponse(error_code=code, error_message=message, acquisition_lock_timeout_ms=0,
                                   responses=[], node_endpoints=[])


def _acknowledge(ctx: RequestContext, req: ShareFetchRequest, answer: _Answer) -> None:
    for topic in req.topics:
        for p in topic.partitions:
            if not p.acknowledgement_batches:
                continue
            plog, error = share_common.led_partition(ctx, topic.topic_id, p.partition_index)
            part = answer.part(topic.topic_id, p.partition_index, plog)
            if error or plog is None:
                part.acknowledge_error_code = error
                continue
            part.acknowledge_error_code, part.acknowledge_error_message = share_common.acknowledge(
                ctx, req.group_id, req.member_id, plog, p.acknowledgement_batches)


def _acquire(ctx: RequestContext, req: ShareFetchRequest, partitions: list[tuple[Any, int]], answer: _Answer) -> int:
    """Acquire records on the session's partitions into ``answer``, within MaxRecords and MaxBytes as Kafka's
    share fetch; how many log bytes were read (the request answers at once when any were, acquired or not,
    as Kafka's DelayedShareFetch completes once MinBytes of the log are there)."""
    share = ctx.cluster.share
    readable = []
    for topic_id, index in share_common.rotated(partitions, req.share_session_epoch):
        plog, error = share_common.led_partition(ctx, topic_id, index)
        if error or plog is None:
            answer.part(topic_id, index, plog).error_code = error
        elif share.acquirable(req.group_id, plog):
            readable.append((topic_id, index, plog))
    if not readable:
        return 0
    max_bytes = min(req.max_bytes, ctx.cluster.config["fetch.max.bytes"])
    if max_bytes <= 0:  # Kafka's PartitionMaxBytesStrategy refuses it, and each partition read answers so
        for topic_id, index, plog in readable:
            part = answer.part(topic_id, index, plog)
            part.error_code, part.error_message = ErrorCode.UNKNOWN_SERVER_ERROR, NO_MAX_BYTES
        return 0
    budget = req.max_records if req.max_records > 0 else 500
    total, left, read_bytes = 0, max_bytes, 0
    for (topic_id, index, plog), partition_max in zip(readable, share_common.split_bytes(max_bytes, len(readable)),
                                                      strict=True):
        ranges, read = share.acquire(req.group_id, req.member_id, plog, budget - total, min(partition_max, left),
                                     read_bytes == 0)  # (until one partition had data: its first batch whole)
        left, read_bytes = max(left - read, 0), read_bytes + read
        if not ranges:  # (read, and nothing to take there: control batches, aborted or others' records)
            continue
        part = answer.part(topic_id, index, plog)
        first, last = ranges[0][0], max(r[1] for r in ranges)
        held = plog.read(first, 2**31 - 1, first_always=True, end_offset=last + 1)
        part.records = held.buffers
        part.acquired_records = [
            RESP.AcquiredRecords(first_offset=first, last_offset=last, delivery_count=count)
            for first, last, count in _in_batches(ranges, req.batch_size, [b.base_offset for b in held.batches])]
        total += sum(last - first + 1 for first, last, _count in ranges)
    return read_bytes


def _in_batches(ranges: list[tuple[int, int, int]], batch_size: int, bases: list[int]) -> list[tuple[int, int, int]]:
    """The acquired ranges cut where a log batch begins (``bases``) once the run holds at least BatchSize
    records: the batches the client acknowledges in, as Kafka's BATCH_OPTIMIZED acquisition cuts them (a
    log batch is never split, so a run may hold more)."""
    if batch_size <= 0:
        return ranges
    out = []
    for first, last, count in ranges:
        start = first
        for base in bases:
            if start < base <= last and base - start >= batch_size:
                out.append((start, base - 1, count))
                start = base
        out.append((start, last, count))
    return out


@register(78, 1, 1)
def handle(ctx: RequestContext, req: ShareFetchRequest) -> Any:
    code, message = share_common.refused_group(ctx, req.group_id, req.member_id)
    if code:
        return _refused(code, message)
    assert req.group_id is not None and req.member_id is not None  # (refused_group checked them)
    share = ctx.cluster.share
    wanted = [(t.topic_id, p.partition_index) for t in req.topics for p in t.partitions]
    forgotten = [(t.topic_id, index) for t in req.forgotten_topics_data for index in t.partitions]
    acks = any(p.acknowledgement_batches for t in req.topics for p in t.partitions)
    try:
        update = share.sessions_on(ctx.broker_id).accept(req.group_id, req.member_id, req.share_session_epoch,
                                                         wanted, forgotten, acks)
    except KafkaError as exc:
        return _refused(exc.code, exc.message)
    if update.replaced:  # a new session replaced the member's old one: what it held goes back
        share.session_closed(req.group_id, req.member_id, update.replaced)
    if req.share_session_epoch == 0:
        share.opened_on(ctx.broker_id, req.group_id, req.member_id, ctx.connection)
    answer = _Answer()
    _acknowledge(ctx, req, answer)
    if update.closed:
        share.session_closed(req.group_id, req.member_id, update.session.partition_list())
        return answer.response(ctx, req.group_id)
    partitions = update.session.partition_list()
    if _acquire(ctx, req, partitions, answer) or answer.topics or req.max_wait_ms <= 0 or not partitions:
        return answer.response(ctx, req.group_id)
    return _wait(ctx, req, partitions, answer)


async def _wait(ctx: RequestContext, req: ShareFetchRequest, partitions: list[tuple[Any, int]], answer: _Answer) -> Any:
    """Nothing to acquire yet: wait for an append to the partitions or records coming back, or MaxWaitMs."""
    share = ctx.cluster.share
    woken = asyncio.Event()

    def wake(*_: Any) -> None:
        woken.set()

    logs = []
    for topic_id, index in partitions:
        plog, error = share_common.led_partition(ctx, topic_id, index)
        if plog is not None and not error:
            logs.append(plog)
            plog.listeners.append(wake)
    share.waiters.append(wake)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + min(req.max_wait_ms, MAX_WAIT_CAP_MS) / 1000
    try:
        while not ctx.connection.closed:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:  # an append (the logs' listeners) or records coming back (ShareCoordinator.wake, also on
                await asyncio.wait_for(woken.wait(), remaining)  # a lock expired by the cluster's tick)
            except TimeoutError:
                break
            woken.clear()
            if _acquire(ctx, req, partitions, answer) or answer.topics:
                break
    finally:
        share.waiters.remove(wake)
        for plog in logs:
            if wake in plog.listeners:
                plog.listeners.remove(wake)
    return answer.response(ctx, req.group_id)
