"""Metadata: v0-13.

Behavior:
- Brokers are every live mock broker, each with the host and port of the listener the request arrived
  on (Kafka's rule); the controller is broker 0; the cluster id is `cluster.id`.
- Topics: a null list (v1+) or an empty list at v0 means all topics. Topics may be named by id (v10+).
- Unknown topics are created when `auto.create.topics.enable` is on and the request allows it
  (always at v0-3, `allow_auto_topic_creation` from v4); otherwise UNKNOWN_TOPIC_OR_PARTITION.
  An illegal name gets INVALID_TOPIC_EXCEPTION. Unknown ids get UNKNOWN_TOPIC_ID.
- Partitions carry leader, leader epoch, replicas, ISR (the live replicas) and offline replicas; a
  leaderless partition (leader -1, state/elections.py) LEADER_NOT_AVAILABLE and an empty ISR.
- A topic's answer entry (its partition list encoded once) is kept and reused until a leader epoch
  changes (every leader or replica change bumps one), a partition is added or the set of live brokers
  changes; an all-topics answer made of the same entries as the last one reuses that one's topic list,
  with its encoding and the journal's error codes: Metadata for 10k partitions costs about a
  millisecond, not tens, and each further topic about a microsecond. Entries are never changed once
  made (authorized operations, v8+, go into copies).
- The broker list is shared by the answers that list the same brokers, and an answer made only of
  shared parts (the broker list, kept topic entries or an all-topics list) is written from the kept
  encoding of an equal one (:func:`_encode`, the codec's encoder for this API; answers up to 64 KiB,
  the last 32): a client connection's life ~16k instructions (~5 %) less broker work.
- A request that repeats byte for byte is answered from the answer kept for the first
  (handlers/kept_answers.py: the C staging lane writes it without decoding the request) while no
  topic, partition, leader, replica or live broker changed (mockbroker.state.answer_epoch.EPOCH) and the
  broker config did not; only requests :func:`ordinary` accepts (all topics, or topics that exist:
  nothing to auto-create, no error) are kept.  A connection's life (connect, ApiVersions, Metadata,
  close) ~72k instructions of broker work instead of ~187k (bench/NOTES.md).
- v10-11: a topic named by id or with a null name fails the request with INVALID_REQUEST (as Kafka,
  which takes ids only from v12): every requested topic answered with that error, no brokers.
- With ACLs on: topics without DESCRIBE are left out of an all-topics answer and answered
  TOPIC_AUTHORIZATION_FAILED when named (by name or id); auto-creation needs CREATE on the cluster or
  the topic, else TOPIC_AUTHORIZATION_FAILED.
- v8+: include_topic_authorized_operations / include_cluster_authorized_operations (v8-10) fill in
  the operations allowed (every supported one with ACLs off; 0 for the cluster without DESCRIBE on
  it); otherwise -2147483648.
"""

from __future__ import annotations

import logging
import operator
import weakref
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers import authz, kept_answers
from mockbroker.handlers.registry import register
from mockbroker.protocol import api
from mockbroker.protocol.runtime import ZERO_UUID, EncodedList
from mockbroker.state.cluster import Topic

if TYPE_CHECKING:
    from collections.abc import Iterable

    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.metadata_request import MetadataRequest
    from mockbroker.state.cluster import ClusterState

RESP = api.response_module(3)
log = logging.getLogger("mockbroker.handlers")
NO_OPERATIONS = -(2**31)
_LEADER_EPOCH = operator.attrgetter("leader_epoch")
# each cluster's last all-topics list (weakly: a stopped cluster's state goes with it)
_LAST_ALL: weakref.WeakKeyDictionary[Any, EncodedList] = weakref.WeakKeyDictionary()
# the broker lists answered, per their (node id, host, port, rack) entries: shared by answers, never changed
_BROKERS: dict[tuple[tuple[int, str, int, str | None], ...], EncodedList] = {}
# (version, the answer's fields, ids of its lists) -> (its body's bytes, what the ids name, kept alive)
_ENCODED: dict[tuple[Any, ...], tuple[bytes, tuple[Any, ...]]] = {}
KEPT_ANSWERS = 32
KEPT_ANSWER_BYTES = 64 << 10  # larger answers (many topics) keep their topic list's encoding only


def _topic(topic: Topic, live: Any, live_key: tuple[int, ...]) -> Any:
    """The topic's answer entry: kept in its answer cache while its partitions' leaders, epochs and
    count and the live brokers stay the same (shared by answers: never changed once made)."""
    parts = topic.partitions
    key = (live_key, len(parts), sum(map(_LEADER_EPOCH, parts)))  # map + attrgetter: the loop runs in C
    cached = topic.answer_cache.get("metadata")
    if cached is not None and cached[0] == key:
        return cached[1]
    entry = RESP.MetadataResponseTopic(
        error_code=0,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.is_internal,
        partitions=EncodedList(
            RESP.MetadataResponsePartition(
                # leaderless (state/elections.py): LEADER_NOT_AVAILABLE and an empty ISR, as Kafka
                error_code=0 if p.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                partition_index=p.index,
                leader_id=p.leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=[r for r in p.replicas if r in live] if p.leader >= 0 else [],
                offline_replicas=[r for r in p.replicas if r not in live],
            )
            for p in parts
        ),
        topic_authorized_operations=NO_OPERATIONS,
    )
    topic.answer_cache["metadata"] = (key, entry)
    return entry


def _all_topics(cluster: ClusterState, entries: list[Any]) -> EncodedList:
    """The topic list of an all-topics answer: the last one's, with its encoding and error codes, when
    it holds the very same entries."""
    last = _LAST_ALL.get(cluster)
    if last is not None and len(last) == len(entries) and all(map(operator.is_, last, entries)):
        return last
    listed = _LAST_ALL[cluster] = EncodedList(entries)
    return listed


def _with_operations(ctx: RequestContext, entry: Any) -> Any:
    """A copy of a topic's entry with the operations the client may perform on it (v8+)."""
    return RESP.MetadataResponseTopic(
        error_code=entry.error_code, name=entry.name, topic_id=entry.topic_id, is_internal=entry.is_internal,
        partitions=entry.partitions, topic_authorized_operations=authz.operations(ctx, authz.TOPIC, entry.name))


def _error_topic(name: str | None, topic_id: bytes, code: int) -> Any:
    return RESP.MetadataResponseTopic(error_code=code, name=name, topic_id=topic_id, partitions=[])


def _denied(ctx: RequestContext, name: str, allow_create: bool) -> bool:
    """With ACLs on: no DESCRIBE on the topic, or it would be auto-created without CREATE (cluster or topic)."""
    if not authz.authorize(ctx, authz.DESCRIBE, authz.TOPIC, name):
        return True
    if name in ctx.cluster.topics or not (allow_create and ctx.cluster.config["auto.create.topics.enable"]):
        return False
    return not (authz.authorize_cluster(ctx, authz.CREATE, log_denied=False)
                or authz.authorize(ctx, authz.CREATE, authz.TOPIC, name))


def _ids_before_v12(ctx: RequestContext, req: MetadataRequest) -> Any:
    """v10-11 requests carry topic ids and nullable names, but Kafka takes neither before v12: it fails
    the request with INVALID_REQUEST, answered as MetadataRequest.getErrorResponse does (every topic
    with that error, a null name as "", no brokers); None when the request is fine."""
    if ctx.api_version >= 12 or not req.topics:
        return None
    bad = next((t for t in req.topics if t.name is None or t.topic_id != ZERO_UUID), None)
    if bad is None:
        return None
    why = "Topic name can not be null" if bad.name is None else "Topic IDs are not supported in requests"
    log.warning("Metadata v%s from %s: %s for version %s: INVALID_REQUEST", ctx.api_version, ctx.connection.peer,
                why, ctx.api_version)
    return RESP.MetadataResponse(brokers=[], topics=[_error_topic(t.name or "", t.topic_id, ErrorCode.INVALID_REQUEST)
                                                     for t in req.topics])


@kept_answers.keep(3)
def ordinary(cluster: ClusterState, version: int, req: MetadataRequest) -> bool:
    """Answered without side effects or errors, so its answer may be kept (kept_answers): all topics,
    or topics that all exist, named as this version takes them (by name; by id from v12)."""
    if req.topics is None or (version == 0 and not req.topics):
        return True
    for wanted in req.topics:
        if wanted.name is not None:
            if wanted.name not in cluster.topics or (version in (10, 11) and wanted.topic_id != ZERO_UUID):
                return False
        elif version < 12 or wanted.topic_id not in cluster.topics_by_id:
            return False
    return True


@register(3, 0, 13)
def handle(ctx: RequestContext, req: MetadataRequest) -> Any:
    invalid = _ids_before_v12(ctx, req)
    if invalid is not None:
        return invalid
    cluster = ctx.cluster
    version = ctx.api_version
    allow_create = version < 4 or req.allow_auto_topic_creation
    live = cluster.brokers
    live_key = tuple(live)  # the live brokers are part of every cached partition list's key
    check = authz.enabled(ctx)
    if req.topics is None or (version == 0 and not req.topics):
        everything: Iterable[Topic] = cluster.topics.values()
        if check:
            everything = authz.authorized(ctx, authz.DESCRIBE, authz.TOPIC, everything, lambda t: t.name, False)
        topics = [_topic(t, live, live_key) for t in everything]
        if not (version >= 8 and req.include_topic_authorized_operations):
            topics = _all_topics(cluster, topics)
    else:
        topics = []
        for wanted in req.topics:
            try:
                if wanted.name is None and wanted.topic_id != ZERO_UUID:
                    topic = cluster.topic_by_id(wanted.topic_id)
                    if check and not authz.authorize(ctx, authz.DESCRIBE, authz.TOPIC, topic.name):
                        topics.append(_error_topic(None, topic.topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                        continue
                    topics.append(_topic(topic, live, live_key))
                elif wanted.name is None:
                    topics.append(_error_topic(None, ZERO_UUID, ErrorCode.INVALID_REQUEST))
                elif check and _denied(ctx, wanted.name, allow_create):
                    topics.append(_error_topic(wanted.name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                else:
                    topics.append(_topic(cluster.topic_or_autocreate(wanted.name, allow_create), live, live_key))
            except KafkaError as exc:
                topics.append(_error_topic(wanted.name, wanted.topic_id, exc.code))
    cluster_operations = NO_OPERATIONS
    if 8 <= version <= 10 and req.include_cluster_authorized_operations:
        cluster_operations = authz.operations(ctx, authz.CLUSTER, authz.CLUSTER_NAME) \
            if authz.authorize_cluster(ctx, authz.DESCRIBE) else 0
    if version >= 8 and req.include_topic_authorized_operations:
        topics = [_with_operations(ctx, t) if t.error_code == 0 else t for t in topics]
    return RESP.MetadataResponse(
        brokers=_brokers(cluster, ctx.connection.listener),
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id,
        topics=topics,
        cluster_authorized_operations=cluster_operations,
    )


def _brokers(cluster: ClusterState, listener: str) -> EncodedList:
    """The live brokers with the host and port of ``listener``, one shared list per distinct answer."""
    key = tuple([(b.node_id, *b.endpoint(listener), b.rack) for b in cluster.brokers.values()])
    found = _BROKERS.get(key)
    if found is None:
        if len(_BROKERS) >= 64:
            _BROKERS.clear()
        found = _BROKERS[key] = EncodedList(
            RESP.MetadataResponseBroker(node_id=node_id, host=host, port=port, rack=rack)
            for node_id, host, port, rack in key)
    return found


def _encode(body: Any, version: int, out: bytearray, holes: list[Any] | None = None) -> bool | None:
    """Write an answer's body from the kept encoding of an equal one (None: let the codec write it).
    Only answers made of shared parts are kept: the broker list, and topic entries from the topics'
    answer caches (no error entries or per-client copies, which are made anew each time) or an
    all-topics list; they are told by identity, and the kept entry holds them, so an id in a key is
    never another object's."""
    topics = body.topics
    if body.unknown_tags or type(body.brokers) is not EncodedList:
        return None
    if type(topics) is EncodedList:
        parts: Any = topics
    elif all(t.error_code == 0 and t.topic_authorized_operations == NO_OPERATIONS for t in topics):
        parts = tuple(topics)
    else:
        return None
    ids = id(parts) if parts is topics else tuple(map(id, parts))
    key = (version, body.throttle_time_ms, body.error_code, body.cluster_id, body.controller_id,
           body.cluster_authorized_operations, id(body.brokers), ids)
    kept = _ENCODED.get(key)
    if kept is not None:
        out += kept[0]
        return True
    start = len(out)
    api.encode_message(RESP, version, body, out, [])
    if len(out) - start <= KEPT_ANSWER_BYTES:
        if len(_ENCODED) >= KEPT_ANSWERS:
            _ENCODED.clear()
        _ENCODED[key] = (bytes(out[start:]), (body.brokers, parts))
    return True


api.set_response_encoder(3, _encode)
