"""Exactly-once with confluent-kafka (librdkafka): the idempotent producer across dropped connections,
interleaved committed and aborted transactions read both ways, and a consume-transform-produce loop
that survives a crash of its producer and fences the zombie."""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from mockbroker.cluster import MockCluster

pytestmark = pytest.mark.clients


def read_all(cluster: MockCluster, topic: str, partitions: int, isolation: str) -> dict[int, list[str]]:
    """Every record of ``topic`` from offset 0 to the end each partition reports, per partition."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"reader-{isolation}",
                  "isolation.level": isolation, "enable.partition.eof": True, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: dict[int, list[str]] = {p: [] for p in range(partitions)}
    ended: set[int] = set()
    deadline = time.monotonic() + 20
    try:
        while len(ended) < partitions and time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is None:
                continue
            if m.error() is not None:
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                ended.add(m.partition())
                continue
            ended.discard(m.partition())
            got[m.partition()].append(m.value().decode())
    finally:
        c.close()
    assert len(ended) == partitions, "did not reach the end of every partition"
    return got


def test_idempotent_producer_survives_dropped_connections(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mockbroker")
    count = 6000
    with MockCluster(brokers=1, topics={"t": 3}) as cluster:
        cluster.state.drop_produce_responses = 6  # six requests are appended, then their connection dies
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True,
                      "linger.ms": 2, "batch.num.messages": 100})
        for i in range(count):
            p.produce("t", str(i).encode(), partition=i % 3)
            if i % 200 == 0:
                p.poll(0)
        assert p.flush(30) == 0
        assert cluster.state.drop_produce_responses == 0
        got = read_all(cluster, "t", 3, "read_uncommitted")
        stored = sum(log.next_offset for log in cluster.state.topics["t"].partitions)
    for partition, values in got.items():
        assert [int(v) for v in values] == list(range(partition, count, 3))  # every record once, in order
    assert stored == count
    retries = [r for r in caplog.records if "is a retry" in r.getMessage()]
    assert retries, "the producer never resent an appended batch: the test did not exercise deduplication"


def test_interleaved_transactions_read_committed_and_uncommitted() -> None:
    with MockCluster(brokers=3, topics={"t": 3}) as cluster:
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "interleaved",
                      "linger.ms": 5})
        p.init_transactions(10)
        committed: dict[int, list[str]] = {0: [], 1: [], 2: []}
        everything: dict[int, list[str]] = {0: [], 1: [], 2: []}
        for n in range(8):
            p.begin_transaction()
            for i in range(40):
                value = f"txn{n}-{i}"
                p.produce("t", value.encode(), partition=i % 3)
                everything[i % 3].append(value)
                if n % 3 != 1:
                    committed[i % 3].append(value)
            if n % 3 == 1:
                assert p.flush(10) == 0  # the aborted records really reach the log first
                p.abort_transaction(10)
            else:
                p.commit_transaction(10)
        assert read_all(cluster, "t", 3, "read_committed") == committed
        assert read_all(cluster, "t", 3, "read_uncommitted") == everything  # data only, never a marker
        logs = cluster.state.topics["t"].partitions
        assert all(log.last_stable_offset == log.high_watermark for log in logs)
        assert all(len(log.producers.aborted) == 3 for log in logs)  # transactions 1, 4, 7


def test_open_transaction_holds_back_read_committed_consumers() -> None:
    with MockCluster(brokers=1, topics={"t": 1}) as cluster:
        plain = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        plain.produce("t", b"before", partition=0)
        assert plain.flush(10) == 0
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "slow"})
        p.init_transactions(10)
        p.begin_transaction()
        p.produce("t", b"pending", partition=0)
        assert p.flush(10) == 0
        plain.produce("t", b"after", partition=0)
        assert plain.flush(10) == 0
        log = cluster.state.topics["t"].partitions[0]
        assert (log.last_stable_offset, log.high_watermark) == (1, 3)
        c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g",
                      "isolation.level": "read_committed"})
        lo, hi = c.get_watermark_offsets(TopicPartition("t", 0), timeout=10)
        assert (lo, hi) == (0, 1)  # ListOffsets latest answers the last stable offset
        c.close()
        assert read_all(cluster, "t", 1, "read_committed") == {0: ["before"]}
        p.commit_transaction(10)
        assert read_all(cluster, "t", 1, "read_committed") == {0: ["before", "pending", "after"]}


def _transformer(cluster: MockCluster, txn_id: str) -> tuple[Consumer, Producer]:
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "ctp",
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    c.subscribe(["in"])
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id, "linger.ms": 5})
    p.init_transactions(10)
    return c, p


def _process_batch(c: Consumer, p: Producer, commit: bool) -> int:
    msgs = [m for m in c.consume(50, 1.0) if m.error() is None]
    if not msgs:
        return 0
    p.begin_transaction()
    for m in msgs:
        p.produce("out", m.value().upper(), partition=m.partition())
    if commit:
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 10)
        p.commit_transaction(10)
    else:
        assert p.flush(10) == 0  # produced, offsets never sent: the process "crashes" here
    return len(msgs)


def test_consume_transform_produce_is_exactly_once_across_a_crash() -> None:
    total = 300
    with MockCluster(brokers=3, topics={"in": 3, "out": 3}) as cluster:
        src = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        for i in range(total):
            src.produce("in", f"r{i}".encode(), partition=i % 3)
        assert src.flush(10) == 0

        c1, p1 = _transformer(cluster, "ctp-1")
        done = 0
        deadline = time.monotonic() + 20
        while done < 120 and time.monotonic() < deadline:
            done += _process_batch(c1, p1, commit=True)
        _process_batch(c1, p1, commit=False)  # crash mid-transaction: its output must never be read
        c1.close()

        c2, p2 = _transformer(cluster, "ctp-1")  # the restart fences p1 and aborts its transaction
        with pytest.raises(KafkaException) as fenced:  # the zombie, still in its transaction, tries to finish
            p1.produce("out", b"zombie", partition=0)
            p1.commit_transaction(10)
        assert fenced.value.args[0].fatal() or fenced.value.args[0].code() in (
            KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH)

        out_expected = sorted(f"R{i}" for i in range(total))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            _process_batch(c2, p2, commit=True)
            got = read_all(cluster, "out", 3, "read_committed")
            if sum(len(v) for v in got.values()) >= total:
                break
        c2.close()
        got = read_all(cluster, "out", 3, "read_committed")
    assert sorted(v for values in got.values() for v in values) == out_expected


def _three_transactions_around_a_purged_retry(cluster: MockCluster) -> tuple[list[str], KafkaException | None]:
    """Commit, abort while a stored batch waits for its retry (answer dropped), commit: the records read
    back read_committed, and the error the last commit raised (None when it succeeded)."""
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "reuse", "linger.ms": 0,
                  "retry.backoff.ms": 2000, "retry.backoff.max.ms": 2000})  # the dropped batch waits to be retried
    p.init_transactions(30)
    failure = None
    for name, fault in (("first", False), ("aborted", True), ("last", False)):
        p.begin_transaction()
        rule = cluster.add_fault(api="Produce", action="drop_after", times=1) if fault else None
        for i in range(3):
            p.produce("reuse", f"{name}-{i}".encode())
        if rule is None:
            try:
                p.flush(10)  # raises too once the producer has met a fatal error
                p.commit_transaction(30)
            except KafkaException as exc:
                failure = exc
        else:
            assert p.flush(0.5) == 3 and rule.hits == 1  # stored, answer lost, waiting for its retry
            p.abort_transaction(30)
    return read_all(cluster, "reuse", 1, "read_committed")[0], failure


def test_new_records_under_reused_sequences_are_named_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    """librdkafka's abort_transaction() purges messages waiting to be retried and rewinds their
    partition's sequence over them, even when the broker had already stored them (the answer was
    lost).  The next transaction's records then repeat those sequence numbers: Kafka answers them as
    a duplicate (the stored batch's offset, no error) and so does mockbroker, so they are not stored
    although the commit succeeds.  The broker must say so: a repeated sequence range whose bytes
    differ is logged as reused sequence numbers, not as a retry.  (Should the client stop reusing
    sequence numbers, the records are read back instead, and this test still holds.)"""
    caplog.set_level(logging.INFO, logger="mockbroker.produce")
    with MockCluster(brokers=1, topics={"reuse": 1}) as cluster:
        committed, failure = _three_transactions_around_a_purged_retry(cluster)
    assert failure is None and committed[:3] == ["first-0", "first-1", "first-2"]
    reuse_lines = [r.getMessage() for r in caplog.records if "reused sequence numbers" in r.getMessage()]
    if committed[3:] != ["last-0", "last-1", "last-2"]:
        assert committed[3:] == [], committed
        assert len(reuse_lines) == 1, reuse_lines
        assert "reuse-0: batch 3..5 of producer" in reuse_lines[0] and "so they are NOT stored" in reuse_lines[0]
    else:
        assert reuse_lines == []
    assert not [r for r in caplog.records if "is a retry" in r.getMessage()]  # the rewound batch is no retry


def test_reused_sequences_can_be_rejected_so_the_commit_fails(caplog: pytest.LogCaptureFixture) -> None:
    """mock.produce.reused.sequences=reject: the same batch gets OUT_OF_ORDER_SEQUENCE_NUMBER, so the
    producer's commit fails instead of succeeding without its records."""
    caplog.set_level(logging.INFO, logger="mockbroker.produce")
    with MockCluster(brokers=1, topics={"reuse": 1}, config={"mock.produce.reused.sequences": "reject"}) as cluster:
        committed, failure = _three_transactions_around_a_purged_retry(cluster)
    assert committed == ["first-0", "first-1", "first-2"]
    refused = [r.getMessage() for r in caplog.records if "reuses the sequence numbers" in r.getMessage()]
    if refused:
        assert failure is not None, "the commit succeeded although its batch was refused"
        assert "OUT_OF_ORDER_SEQUENCE_NUMBER" in refused[0] and "offset 4 in reuse-0" in refused[0], refused
    else:  # the client no longer reuses sequence numbers: nothing to refuse, and nothing lost
        assert failure is None and committed[3:] == ["last-0", "last-1", "last-2"]
