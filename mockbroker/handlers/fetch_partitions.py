"""Which partitions a Fetch reads: the request's (or its session's) partitions found, authorized once per
topic, each with its log or its error; a consumer's fetch (v11+) may be served by a follower
(state/replica_selector.py).  The Fetch handler (k01_fetch) reads and answers them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.protocol import fast_fetch
from mockbroker.state import replica_selector as replicas
from mockbroker.state.fetch_sessions import FINAL_EPOCH, INITIAL_EPOCH, FetchSession, SessionPartition
from mockbroker.state.log import PartitionLog

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.fetch_request import FetchRequest


@dataclass(slots=True)
class Wanted:
    name: str
    topic_id: bytes
    partition: int
    fetch_offset: int
    max_bytes: int
    leader_epoch: int
    log: PartitionLog | None = None
    error: int = 0


# a request's partitions made into Wanted in C when every one is known and led here (None: not built)
WANTED_READER = fast_fetch.wanted_reader(Wanted)


def _sessions(ctx: RequestContext) -> Any:
    return ctx.broker.fetch_sessions


def _topic(ctx: RequestContext, name: str, topic_id: bytes, use_ids: bool) -> tuple[str, bytes, Any, int]:
    """A fetched topic, READ checked once for all its partitions (as Kafka authorizes the distinct
    topics of a fetch): (name, topic id, the Topic or None, the error for its partitions)."""
    if not use_ids and not authz.authorize(ctx, authz.READ, authz.TOPIC, name):
        return name, topic_id, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    try:
        topic = ctx.cluster.topic_by_id(topic_id) if use_ids else ctx.cluster.topic(name)
    except KafkaError as exc:
        return name, topic_id, None, exc.code
    if use_ids and not authz.authorize(ctx, authz.READ, authz.TOPIC, topic.name):
        return topic.name, topic.topic_id, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return topic.name, topic.topic_id, topic, 0


def _partition(ctx: RequestContext, found: tuple[str, bytes, Any, int], index: int,
               follower_ok: bool = False) -> tuple[PartitionLog | None, int]:
    """The log of partition ``index`` of a topic :func:`_topic` found, led here (or, ``follower_ok``, held
    here as a follower): (log, 0) or (None, error).  (:func:`resolve` finds the usual partition, led
    here, without it.)"""
    name, _topic_id, topic, error = found
    if topic is None:
        return None, error
    try:
        if follower_ok:
            log = ctx.cluster.partition(name, index, topic)
            if replicas.serves_consumers(log, ctx.broker_id):
                return log, 0
        return ctx.cluster.leader_partition(name, index, ctx.broker_id, topic), 0
    except KafkaError as exc:
        return None, exc.code


def resolve(ctx: RequestContext, req: FetchRequest) -> tuple[list[Wanted], FetchSession | None, bool]:
    """The partitions this fetch covers, the session (if any) and whether it is incremental."""
    use_ids = ctx.api_version >= 13
    cluster = ctx.cluster
    named = None
    if WANTED_READER is not None and not cluster.acls.enabled:  # every partition known and led here: made in C
        named = WANTED_READER(req.topics, cluster.topics_by_id if use_ids else cluster.topics, ctx.broker_id, use_ids)
    if named is None:
        named = requested(ctx, req, use_ids)
    if ctx.api_version < 7 or (req.session_id == 0 and req.session_epoch == FINAL_EPOCH):
        return named, None, False
    cache = _sessions(ctx)
    if req.session_epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if req.session_id:
            cache.close(req.session_id)
        session = cache.open() if req.session_epoch == INITIAL_EPOCH else None
        if session is not None:
            for w in named:
                session.partitions[(w.name, w.partition)] = SessionPartition(
                    w.topic_id, w.fetch_offset, w.max_bytes, w.leader_epoch)
        return named, session, False
    session = cache.resume(req.session_id, req.session_epoch)
    for w in named:
        old = session.partitions.get((w.name, w.partition))
        if old is not None and old.fetch_offset != w.fetch_offset:
            # it got records last time: to the end of the session's list, as Kafka moves a partition that
            # answered records, so that a fetch.max.bytes budget goes round the partitions, not to the first
            del session.partitions[(w.name, w.partition)]
        session.partitions[(w.name, w.partition)] = SessionPartition(
            w.topic_id, w.fetch_offset, w.max_bytes, w.leader_epoch,
            (old or SessionPartition(b"", 0, 0)).last_sent)
    for f in req.forgotten_topics_data or []:
        name = f.topic
        if use_ids:
            topic = ctx.cluster.topics_by_id.get(f.topic_id)
            name = topic.name if topic else name
        for index in f.partitions:
            session.partitions.pop((name, index), None)
    wanted = []
    topics: dict[str, tuple[str, bytes, Any, int]] = {}
    follower_ok = from_any_replica(ctx, req)
    for (name, index), sp in session.partitions.items():
        found = topics.get(name)
        if found is None:
            found = topics[name] = _topic(ctx, name, sp.topic_id, False)
        log, err = _partition(ctx, found, index, follower_ok)
        wanted.append(Wanted(found[0], found[1] or sp.topic_id, index, sp.fetch_offset, sp.max_bytes,
                             sp.current_leader_epoch, log, err))
    return wanted, session, True


def requested(ctx: RequestContext, req: FetchRequest, use_ids: bool) -> list[Wanted]:
    """The partitions a fetch names, each found (its log) or with its error."""
    requested = []
    broker_id = ctx.broker_id
    follower_ok = from_any_replica(ctx, req)
    topics: dict[Any, tuple[str, bytes, Any, int]] = {}  # a topic named twice is found (and authorized) once
    for t in req.topics:
        key = t.topic_id if use_ids else t.topic
        found = topics.get(key)
        if found is None:
            found = topics[key] = _topic(ctx, t.topic, t.topic_id, use_ids)
        name, tid, topic = found[0], found[1], found[2]
        logs = topic.partitions if topic is not None else ()
        for p in t.partitions:
            index = p.partition
            if 0 <= index < len(logs) and logs[index].leader == broker_id:  # the usual partition: led here
                log, err = logs[index], 0
            else:
                log, err = _partition(ctx, found, index, follower_ok)
            requested.append(Wanted(name, tid, index, p.fetch_offset, p.partition_max_bytes,
                                    p.current_leader_epoch, log, err))
    return requested


def from_any_replica(ctx: RequestContext, req: FetchRequest) -> bool:
    """Whether a follower holding the partition may answer (a consumer's fetch, v11+: replica_selector)."""
    version = ctx.api_version
    return version >= 11 and (req.replica_id if version < 15 else req.replica_state.replica_id) < 0


def steered_rack(ctx: RequestContext, req: FetchRequest) -> str:
    """The consumer's rack when the rack-aware selector may send this fetch to a follower, else ""."""
    return req.rack_id if req.rack_id and from_any_replica(ctx, req) and replicas.rack_aware(ctx.cluster) else ""
