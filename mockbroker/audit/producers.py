"""Producers for the no-loss audit; each records what it was told about every record it sent.

A record's value is ``<producer>|<sequence>|<transaction>`` padded to the value size: the audit reads
it back to know who sent it, in what order, and in which transaction (-1: none).  The key spreads a
producer's records over the partitions.

- :func:`confluent_idempotent`, :func:`kafka_python_idempotent`, :func:`aiokafka_idempotent`:
  ``enable.idempotence`` producers;
  a delivery report without an error marks the record acknowledged.
- :func:`confluent_transactional`: transactions of ``per_txn`` records; every ``abort_every``-th is
  aborted on purpose, a transaction a fault makes abortable is aborted, a fatal error (the producer
  was fenced, or could not learn the outcome) leaves it in doubt and a new producer takes over the
  transactional id.  With a ``group``, each transaction also sends an offset (its number + 1) for
  the producer's partition of the input topic, as a consume-transform-produce loop does.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("mockbroker.audit")
CALL_TIMEOUT_S = 15  # per transactional call; a retriable timeout is retried (up to 30 times)
CLIENT_LOG = logging.getLogger("mockbroker.audit.client")  # librdkafka's lines (connections dropped on purpose)


def value(producer: str, seq: int, txn: int, size: int) -> bytes:
    return f"{producer}|{seq}|{txn}|".encode().ljust(size, b".")


def parse(raw: bytes) -> tuple[str, int, int]:
    producer, seq, txn, _ = raw.split(b"|", 3)
    return producer.decode(), int(seq), int(txn)


@dataclass
class IdempotentLog:
    name: str
    produced: int = 0
    acked: set[int] = field(default_factory=set)
    failed: dict[int, str] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class TxnLog:
    name: str
    input_partition: int = 0
    records: dict[int, list[int]] = field(default_factory=dict)  # transaction -> sequences
    committed: list[int] = field(default_factory=list)
    aborted: list[int] = field(default_factory=list)
    aborted_by_faults: list[int] = field(default_factory=list)
    in_doubt: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def pace(started: float, done: int, count: int, duration_s: float) -> float:
    """Seconds to wait so that ``count`` records spread over ``duration_s`` (faults fire all along)."""
    return started + duration_s * done / count - time.monotonic() if duration_s > 0 else 0.0


def confluent_idempotent(bootstrap: str, topic: str, name: str, count: int, size: int, out: IdempotentLog,
                         duration_s: float = 0.0) -> None:
    from confluent_kafka import Producer

    def report(err: Any, msg: Any) -> None:
        seq = int(msg.value().split(b"|", 2)[1])
        if err is None:
            out.acked.add(seq)
        else:
            out.failed[seq] = str(err)

    started = time.monotonic()
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 10,
                  "socket.timeout.ms": 3000, "message.timeout.ms": 300_000, "retry.backoff.ms": 50,
                  "retry.backoff.max.ms": 500, "topic.metadata.refresh.interval.ms": 2000,
                  "client.id": name, "queue.buffering.max.messages": 200_000, "logger": CLIENT_LOG})
    for seq in range(count):
        while True:
            try:
                p.produce(topic, value(name, seq, -1, size), key=f"{name}-{seq % 97}".encode(), on_delivery=report)
                out.produced += 1
                break
            except BufferError:
                p.poll(0.05)
        if seq % 500 == 0:
            time.sleep(max(pace(started, seq, count, duration_s), 0))
            p.poll(0)
    left = p.flush(300)
    out.seconds = time.monotonic() - started
    if left:
        log.warning("audit: %s: %d records still unanswered after 300 s", name, left)


def kafka_python_idempotent(bootstrap: str, topic: str, name: str, count: int, size: int, out: IdempotentLog,
                            duration_s: float = 0.0) -> None:
    from kafka import KafkaProducer

    started = time.monotonic()
    p = KafkaProducer(bootstrap_servers=bootstrap.split(","), enable_idempotence=True, acks="all", linger_ms=10,
                      request_timeout_ms=5000, delivery_timeout_ms=300_000, retry_backoff_ms=50,
                      metadata_max_age_ms=2000, client_id=name)

    def ok(seq: int) -> Any:
        return lambda _meta: out.acked.add(seq)

    def bad(seq: int) -> Any:
        return lambda exc: out.failed.__setitem__(seq, repr(exc))

    for seq in range(count):
        future = p.send(topic, value(name, seq, -1, size), key=f"{name}-{seq % 97}".encode())
        out.produced += 1
        future.add_callback(ok(seq))
        future.add_errback(bad(seq))
        if seq % 100 == 0:
            time.sleep(max(pace(started, seq, count, duration_s), 0))
    p.flush(300)
    out.seconds = time.monotonic() - started
    p.close(30)


def aiokafka_idempotent(bootstrap: str, topic: str, name: str, count: int, size: int, out: IdempotentLog,
                        duration_s: float = 0.0) -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer

    def done(seq: int) -> Any:
        def report(future: Any) -> None:
            if future.cancelled() or future.exception() is not None:
                out.failed[seq] = "cancelled" if future.cancelled() else repr(future.exception())
            else:
                out.acked.add(seq)
        return report

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all", linger_ms=10,
                             request_timeout_ms=5000, retry_backoff_ms=50, metadata_max_age_ms=2000, client_id=name)
        await p.start()
        try:
            for seq in range(count):
                future = await p.send(topic, value(name, seq, -1, size), key=f"{name}-{seq % 97}".encode())
                out.produced += 1
                future.add_done_callback(done(seq))
                if seq % 100 == 0:
                    await asyncio.sleep(max(pace(started, seq, count, duration_s), 0))
            await p.flush()
        finally:
            await p.stop()

    started = time.monotonic()
    asyncio.run(run())
    out.seconds = time.monotonic() - started


def _fresh_transactional_producer(config: dict[str, Any], out: TxnLog) -> Any:
    """A confluent-kafka Producer with ``config`` whose init_transactions succeeded (retried until it does)."""
    from confluent_kafka import KafkaException, Producer

    while True:
        producer = Producer(config)
        try:
            producer.init_transactions(CALL_TIMEOUT_S)
            return producer
        except KafkaException as exc:
            out.errors.append(f"init_transactions: {exc.args[0]}")
            if not exc.args[0].retriable():
                time.sleep(0.2)


def _retry_transactional_call(call: Any, out: TxnLog) -> None:
    """``call(CALL_TIMEOUT_S)`` retried up to 30 times while its errors are retriable."""
    from confluent_kafka import KafkaException

    for _ in range(30):
        try:
            call(CALL_TIMEOUT_S)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable():
                raise
            out.errors.append(f"retried: {exc.args[0]}")
    raise RuntimeError("gave up retrying")


def confluent_transactional(bootstrap: str, topic: str, name: str, transactions: int, per_txn: int, size: int,
                            out: TxnLog, abort_every: int = 7, group: str | None = None,
                            input_topic: str | None = None, duration_s: float = 0.0) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap, "transactional.id": name, "linger.ms": 5, "socket.timeout.ms": 3000,
        "message.timeout.ms": 60_000, "transaction.timeout.ms": 60_000, "retry.backoff.ms": 50,
        "retry.backoff.max.ms": 500, "topic.metadata.refresh.interval.ms": 2000, "client.id": name,
        "logger": CLIENT_LOG}
    metadata = None
    if group is not None:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "logger": CLIENT_LOG})
        metadata = consumer.consumer_group_metadata()
        consumer.close()

    def fresh() -> Any:
        return _fresh_transactional_producer(config, out)

    def retrying(call: Any) -> None:
        _retry_transactional_call(call, out)

    # librdkafka's abort_transaction() purges messages waiting to be retried and rewinds their partition's
    # sequence over them, even when the broker already stored them (a dropped answer): the next
    # transaction's records then repeat stored sequence numbers and are answered as duplicates, not stored
    # (as Kafka does; the broker logs "reused sequence numbers").  A client bug, not the broker's: so an
    # abort here happens with nothing waiting for a retry (flush first), or the producer is replaced
    # (a new epoch, whose sequences start afresh) -- tests/clients/test_transactions_confluent.py shows it.
    started = time.monotonic()
    p = fresh()
    seq = 0
    for txn in range(transactions):
        time.sleep(max(pace(started, txn, transactions, duration_s), 0))
        seqs = out.records[txn] = []
        try:
            p.begin_transaction()
            for _ in range(per_txn):
                p.produce(topic, value(name, seq, txn, size), key=f"{name}-{seq % 97}".encode())
                seqs.append(seq)
                seq += 1
            if metadata is not None and input_topic is not None:
                offsets = [TopicPartition(input_topic, out.input_partition, txn + 1)]
                retrying(functools.partial(p.send_offsets_to_transaction, offsets, metadata))
            if abort_every and txn % abort_every == abort_every - 1:
                unsent = p.flush(CALL_TIMEOUT_S)  # nothing may wait for a retry (the note above)
                retrying(p.abort_transaction)
                out.aborted.append(txn)
                if unsent:
                    p = fresh()
            else:
                retrying(p.commit_transaction)
                out.committed.append(txn)
        except KafkaException as exc:
            error = exc.args[0]
            out.errors.append(f"transaction {txn}: {error}")
            if error.txn_requires_abort():
                try:
                    retrying(p.abort_transaction)
                    out.aborted_by_faults.append(txn)
                    p = fresh()  # a new epoch (the note above)
                    continue
                except KafkaException as again:
                    out.errors.append(f"abort of transaction {txn}: {again.args[0]}")
            out.in_doubt.append(txn)
            p = fresh()  # fences the old producer and settles the transaction it left
        except RuntimeError as exc:
            out.errors.append(f"transaction {txn}: {exc}")
            out.in_doubt.append(txn)
            p = fresh()
    p.flush(60)
    out.seconds = time.monotonic() - started
