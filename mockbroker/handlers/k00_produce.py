"""Produce: v0-13.

Behavior:
- acks 0 (no response at all), 1 and -1 (all replicas are in sync, so both answer at once);
  any other acks value -> INVALID_REQUIRED_ACKS for every partition.
- Topics by name (v0-12) or id (v13, UNKNOWN_TOPIC_ID); no auto-creation (as Kafka). Internal topics
  (`__consumer_offsets`, `__transaction_state`) -> INVALID_TOPIC_EXCEPTION "Cannot append to internal
  topic ..." (after the ACL check, as Kafka).
- Only the partition leader accepts data: NOT_LEADER_OR_FOLLOWER elsewhere, with the current
  leader and its endpoint (v10+) so the client can move without a metadata round trip.
- Every batch is validated (see mockbroker.batches): CRC -> CORRUPT_MESSAGE, size ->
  MESSAGE_TOO_LARGE, magic per version / one batch per partition (v3+) -> INVALID_RECORD,
  records that do not parse (bad varints, lengths, counts that lie) -> INVALID_RECORD, compressed
  data the codec cannot read and codec ids 5-7 -> UNKNOWN_SERVER_ERROR (as Kafka), over the
  decompression cap -> INVALID_RECORD,
  zstd before v7 -> UNSUPPORTED_COMPRESSION_TYPE, timestamps -> INVALID_TIMESTAMP with the records
  named in record_errors (v8+).
- Offsets are assigned here; LogAppendTime topics answer log_append_time_ms.
- Idempotent batches (producer id >= 0) are checked against the partition's producer state (see
  mockbroker.state.producer_state): a retry of one of the producer's last 5 batches is answered
  with its original offsets and not stored again; sequence gaps -> OUT_OF_ORDER_SEQUENCE_NUMBER,
  old epochs -> INVALID_PRODUCER_EPOCH, a producer unknown here not starting at 0 ->
  UNKNOWN_PRODUCER_ID.
- Transactional batches must go to a partition of the producer's open transaction (Kafka's
  KIP-890 verification), else INVALID_TXN_STATE; Produce v12+ adds the partition implicitly. As in
  Kafka, this comes before the duplicate and sequence checks: a late retry of a batch whose
  transaction has ended gets INVALID_TXN_STATE, not its old offsets or OUT_OF_ORDER_SEQUENCE_NUMBER.
- With ACLs on: a transactional produce needs WRITE on the transactional id, else every partition
  answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED; partitions of topics without WRITE ->
  TOPIC_AUTHORIZATION_FAILED (before the existence check for names, after it for ids, as Kafka).
- Memory caps (mockbroker.state.memory_cap): a partition far above its retention.bytes is trimmed
  at append; an append that would pass ``mock.log.max.total.bytes`` and that retention cannot make
  room for -> KAFKA_STORAGE_ERROR (checked after the duplicate check, so retries are still answered).
  A batch that is a small part of its request frame is stored as a copy (``detached``), so it does
  not keep the other partitions' bytes alive after their retention.
- Test hook: while ``cluster.drop_produce_responses`` is above 0, a request that appended data
  closes the connection instead of answering (and counts it down).

The usual request (plain or in-sequence idempotent batches that pass every check, no transactional
id, no faults, quotas, ACLs or SASL: mockbroker.handlers.produce_lane) is appended and answered by
the C produce lane before it reaches this handler, which decides every other one.

Version notes: v0-2 carry magic 0/1 message sets (converted to magic 2 for storage); v3 adds the
transactional id; v8 record errors; v9 flexible; v10 current-leader tags; v13 topic ids.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from mockbroker.batches import BatchRejected, Policy, stored_batch, validate_produce
from mockbroker.errors import CloseConnection, ErrorCode, KafkaError
from mockbroker.handlers import authz
from mockbroker.handlers.registry import NO_RESPONSE, register
from mockbroker.protocol import api
from mockbroker.protocol.errors import error_name
from mockbroker.state.log import PartitionLog
from mockbroker.state.memory_cap import detached
from mockbroker.state.producer_state import BatchMeta, last_sequence

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.produce_request import ProduceRequest
    from mockbroker.state.cluster import ClusterState

RESP = api.response_module(0)
logger = logging.getLogger("mockbroker.produce")


def settings(cluster: ClusterState, topic: Any) -> tuple[Policy, int]:
    """The topic's record policy (its now_ms set to this request's time), and the retention.bytes
    applied at append (-1: none; memory_cap).  One Policy per topic is kept and reused: a request uses
    it only while its handler runs, which never waits."""
    cfg = topic.config
    cached = topic.answer_cache.get("produce policy")
    if cached is None or cached[0] != cfg.generation:  # read the configs again only after they change
        deletes = "delete" in cfg["cleanup.policy"]
        policy = Policy(max_message_bytes=cfg["max.message.bytes"], compression=cfg["compression.type"],
                        log_append_time=cfg["message.timestamp.type"] == "LogAppendTime",
                        before_max_ms=cfg["message.timestamp.before.max.ms"],
                        after_max_ms=cfg["message.timestamp.after.max.ms"], now_ms=0,
                        compacted="compact" in cfg["cleanup.policy"],
                        check_records=cluster.config["mock.produce.validation"] != "envelope")
        # the generation counts broker config changes too
        cached = topic.answer_cache["produce policy"] = (
            cfg.generation, (policy, int(cfg["retention.bytes"]) if deletes else -1))
    current: tuple[Policy, int] = cached[1]
    current[0].now_ms = cluster.clock.now_ms()
    return current


def _append(ctx: RequestContext, topic: Any, log: PartitionLog, data: Any,
            settings: tuple[Policy, int]) -> tuple[int, int]:
    policy, retention_bytes = settings
    batches = validate_produce(data, ctx.api_version, policy)
    append_time = policy.now_ms if policy.log_append_time else -1
    cap = ctx.cluster.memory_cap
    first = log.next_offset
    if len(batches) == 1:  # Produce v3+: always one batch
        batch, header = batches[0]
        if header.producer_id >= 0:
            return _append_idempotent(ctx, topic, log, batch, header, retention_bytes), append_time
        cap.admit(topic, log, len(batch), 1)
        log.append(stored_batch(detached(batch), first, log.leader_epoch, header))
    else:
        cap.admit(topic, log, sum([len(b) for b, _h in batches]), len(batches))
        for batch, header in batches:
            log.append(stored_batch(detached(batch), log.next_offset, log.leader_epoch, header))
    cap.appended(topic, log, retention_bytes)
    return first, append_time


def _append_idempotent(ctx: RequestContext, topic: Any, log: PartitionLog, batch: memoryview, header: Any,
                       retention_bytes: int) -> int:
    pid, epoch, first_seq = header.producer_id, header.producer_epoch, header.base_sequence
    last_seq = last_sequence(first_seq, header.last_offset_delta + 1)
    producers = log.producers
    transactional = header.is_transactional
    if transactional:  # Kafka verifies the transaction (KIP-890) before the log checks duplicates and sequences
        ctx.cluster.transactions.check_produce(pid, epoch, topic.name, log.index, ctx.api_version >= 12)
    duplicate = producers.duplicate_of(pid, epoch, first_seq, last_seq)
    if duplicate is not None:
        if 0 <= duplicate.crc != header.crc:
            _reused_sequences(ctx, topic, log, header, last_seq, duplicate)  # raises when set to reject them
        else:
            logger.info("broker %s: %s-%s: batch %s..%s of producer %s epoch %s is a retry; answered with offset %s",
                        ctx.broker_id, topic.name, log.index, first_seq, last_seq, pid, epoch, duplicate.first_offset)
        return duplicate.first_offset
    producers.check_append(pid, epoch, first_seq, transactional, f"{topic.name}-{log.index}")
    ctx.cluster.memory_cap.admit(topic, log, len(batch))
    stored = stored_batch(detached(batch), log.next_offset, log.leader_epoch, header)
    producers.record_append(pid, epoch, first_seq, last_seq, stored.base_offset, stored.last_offset,
                            header.max_timestamp, ctx.cluster.clock.now_ms(), transactional, header.crc)
    log.append(stored)
    ctx.cluster.memory_cap.appended(topic, log, retention_bytes)
    return stored.base_offset


def _reused_sequences(ctx: RequestContext, topic: Any, log: PartitionLog, header: Any, last_seq: int,
                      stored: BatchMeta) -> None:
    """A batch repeats the producer, epoch and sequence numbers of a stored batch but not its bytes: not
    a retry but new records under old sequence numbers.  Kafka answers it as a duplicate (the stored
    batch's offset, no error) and so does this broker by default, so its records are NOT stored: say so
    loudly.  With ``mock.produce.reused.sequences=reject`` it is refused with OUT_OF_ORDER_SEQUENCE_NUMBER
    instead.  librdkafka does this after abort_transaction() purges messages waiting to be retried that
    the broker had already stored (it rewinds the partition's sequence over them)."""
    if ctx.cluster.config["mock.produce.reused.sequences"] == "reject":
        raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                         f"batch {header.base_sequence}..{last_seq} of producer {header.producer_id} epoch "
                         f"{header.producer_epoch} reuses the sequence numbers of the different batch at offset "
                         f"{stored.first_offset} in {topic.name}-{log.index} (mock.produce.reused.sequences=reject)")
    logger.warning("broker %s: %s-%s: batch %s..%s of producer %s epoch %s repeats the sequence numbers of the "
                   "batch at offset %s but not its bytes (CRC %08x, stored %08x): new records under reused "
                   "sequence numbers, answered as a duplicate as Kafka does, so they are NOT stored",
                   ctx.broker_id, topic.name, log.index, header.base_sequence, last_seq, header.producer_id,
                   header.producer_epoch, stored.first_offset, header.crc, stored.crc)


def _partition(ctx: RequestContext, topic: Any, part: Any, acks: int, settings: tuple[Policy, int]) -> Any:
    out = RESP.PartitionProduceResponse(index=part.index, base_offset=-1, log_append_time_ms=-1)
    try:
        if acks not in (0, 1, -1):
            raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS, f"acks={acks} is not 0, 1 or -1")
        log = ctx.cluster.leader_partition(topic.name, part.index, ctx.broker_id, topic)
        out.base_offset, out.log_append_time_ms = _append(ctx, topic, log, part.records, settings)
        out.log_start_offset = log.log_start_offset
    except BatchRejected as exc:
        logger.warning("broker %s: produce to %s-%s from %s rejected with %s: %s", ctx.broker_id, topic.name,
                    part.index, ctx.client_id, error_name(exc.code), exc.message)
        out.error_code, out.error_message = exc.code, exc.message
        out.record_errors = [RESP.BatchIndexAndErrorMessage(e.batch_index, e.message) for e in exc.record_errors]
    except KafkaError as exc:
        out.error_code, out.error_message = exc.code, exc.message
        if exc.code not in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
            logger.warning("broker %s: produce to %s-%s from %s refused with %s: %s", ctx.broker_id, topic.name,
                           part.index, ctx.client_id, error_name(exc.code), exc.message)
        if exc.code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            log = ctx.cluster.partition(topic.name, part.index)
            out.current_leader = RESP.LeaderIdAndEpoch(leader_id=log.leader, leader_epoch=log.leader_epoch)
    return out


def _unknown_topic_response(td: Any, code: int, message: str | None = None) -> Any:
    return RESP.TopicProduceResponse(
        name=td.name,
        topic_id=td.topic_id,
        partition_responses=[
            RESP.PartitionProduceResponse(index=p.index, error_code=code, base_offset=-1, log_append_time_ms=-1,
                                          error_message=message)
            for p in td.partition_data
        ],
    )


def _authorized_txn(ctx: RequestContext, req: ProduceRequest) -> bool:
    txn_id = req.transactional_id if ctx.api_version >= 3 else None
    return txn_id is None or authz.authorize(ctx, authz.WRITE, authz.TRANSACTIONAL_ID, txn_id)


@register(0, 0, 13)
def handle(ctx: RequestContext, req: ProduceRequest) -> Any:
    responses = []
    leaders_named: set[int] = set()
    appended = False
    acls_on = authz.enabled(ctx)
    if acls_on and not _authorized_txn(ctx, req):
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        responses = [_unknown_topic_response(td, code) for td in req.topic_data]
        return NO_RESPONSE if req.acks == 0 else RESP.ProduceResponse(responses=responses)
    by_id = ctx.api_version >= 13
    for td in req.topic_data:
        if acls_on and not by_id and not authz.authorize(ctx, authz.WRITE, authz.TOPIC, td.name):
            responses.append(_unknown_topic_response(td, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        try:
            topic = ctx.cluster.topic_by_id(td.topic_id) if by_id else ctx.cluster.topic(td.name)
        except KafkaError as exc:
            responses.append(_unknown_topic_response(td, exc.code))
            continue
        if acls_on and by_id and not authz.authorize(ctx, authz.WRITE, authz.TOPIC, topic.name):
            responses.append(_unknown_topic_response(td, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        if topic.is_internal:  # Kafka: only its coordinators write there
            responses.append(_unknown_topic_response(td, ErrorCode.INVALID_TOPIC_EXCEPTION,
                                                     f"Cannot append to internal topic {topic.name}"))
            continue
        topic_settings = settings(ctx.cluster, topic)  # once per topic: every partition's batches meet the same policy
        parts = [_partition(ctx, topic, p, req.acks, topic_settings) for p in td.partition_data]
        for p in parts:
            if p.error_code == 0:
                appended = True
            elif p.error_code == 6:  # NOT_LEADER_OR_FOLLOWER: its leader's endpoint goes in the answer (v10+)
                leaders_named.add(p.current_leader.leader_id)
        responses.append(RESP.TopicProduceResponse(name=td.name, topic_id=td.topic_id, partition_responses=parts))
    if appended and ctx.cluster.drop_produce_responses > 0:
        ctx.cluster.drop_produce_responses -= 1
        raise CloseConnection("test hook drop_produce_responses: data appended, closing before the answer")
    if req.acks == 0:
        return NO_RESPONSE
    endpoints = []
    if ctx.api_version >= 10:
        for node_id in sorted(leaders_named):
            b = ctx.cluster.brokers[node_id]
            host, port = b.endpoint(ctx.connection.listener)  # the listener the request came in on
            endpoints.append(RESP.NodeEndpoint(node_id=b.node_id, host=host, port=port, rack=b.rack))
    return RESP.ProduceResponse(responses=responses, node_endpoints=endpoints)
