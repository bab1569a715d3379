"""Transactions with kafka-python and aiokafka: interleaved commits and aborts across three partitions read
by read_committed consumers of both clients (and confluent-kafka read_uncommitted), offsets sent to a
transaction visible only when it commits, and a second producer with the same transactional id fencing
the first."""

from __future__ import annotations

import asyncio
import time

import pytest

from mockbroker.cluster import MockCluster
from tests.clients.test_transactions_confluent import read_all

pytestmark = pytest.mark.clients
PARTITIONS = 3


def kp_read(cluster: MockCluster, topic: str, isolation: str, count: int) -> dict[int, list[str]]:
    """kafka-python reads ``count`` records (or until 3 s of silence) from offset 0 of every partition."""
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, isolation_level=isolation,
                      enable_auto_commit=False, consumer_timeout_ms=3000)
    c.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    c.seek_to_beginning()
    got: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    seen = 0
    for record in c:
        got[record.partition].append(record.value.decode())
        seen += 1
        if seen >= count:
            break
    c.close()
    return got


async def aio_read(cluster: MockCluster, topic: str, isolation: str, count: int) -> dict[int, list[str]]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    c = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, isolation_level=isolation,
                         enable_auto_commit=False, auto_offset_reset="earliest")
    await c.start()
    c.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    got: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    seen = 0
    deadline = time.monotonic() + 10
    try:
        while seen < count and time.monotonic() < deadline:
            for tp, records in (await c.getmany(timeout_ms=200)).items():
                got[tp.partition].extend(r.value.decode() for r in records)
                seen += len(records)
        await asyncio.sleep(0.3)  # anything beyond ``count`` would show up now
        for tp, records in (await c.getmany(timeout_ms=200)).items():
            got[tp.partition].extend(r.value.decode() for r in records)
    finally:
        await c.stop()
    return got


def expected_split(rounds: int, per_round: int, aborted: set[int]) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    committed: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    everything: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    for n in range(rounds):
        for i in range(per_round):
            value = f"t{n}-{i}"
            everything[i % PARTITIONS].append(value)
            if n not in aborted:
                committed[i % PARTITIONS].append(value)
    return committed, everything


def test_kafka_python_transactions_read_by_every_client() -> None:
    from kafka import KafkaProducer

    rounds, per_round, aborted = 6, 30, {1, 4}
    with MockCluster(brokers=3, topics={"t": PARTITIONS}) as cluster:
        p = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="kp-txn")
        p.init_transactions()
        for n in range(rounds):
            p.begin_transaction()
            for i in range(per_round):
                p.send("t", f"t{n}-{i}".encode(), partition=i % PARTITIONS)
            p.flush()
            if n in aborted:
                p.abort_transaction()
            else:
                p.commit_transaction()
        p.close()
        committed, everything = expected_split(rounds, per_round, aborted)
        total = sum(len(v) for v in committed.values())
        assert kp_read(cluster, "t", "read_committed", total) == committed
        assert asyncio.run(aio_read(cluster, "t", "read_committed", total)) == committed
        assert read_all(cluster, "t", PARTITIONS, "read_committed") == committed
        assert read_all(cluster, "t", PARTITIONS, "read_uncommitted") == everything
        assert kp_read(cluster, "t", "read_uncommitted", rounds * per_round) == everything


async def test_aiokafka_transactions_commit_and_abort() -> None:
    from aiokafka import AIOKafkaProducer

    async with MockCluster(brokers=3, topics={"t": PARTITIONS}) as cluster:
        p = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="aio-txn")
        await p.start()
        try:
            for n in range(4):
                await p.begin_transaction()
                for i in range(30):
                    await p.send("t", f"t{n}-{i}".encode(), partition=i % PARTITIONS)
                await p.flush()
                if n == 2:
                    await p.abort_transaction()
                else:
                    await p.commit_transaction()
            async with p.transaction():  # the context manager commits too
                await p.send_and_wait("t", b"t4-0", partition=0)
        finally:
            await p.stop()
        committed, _ = expected_split(4, 30, {2})
        committed[0].append("t4-0")
        total = sum(len(v) for v in committed.values())
        assert await aio_read(cluster, "t", "read_committed", total) == committed
        assert await asyncio.to_thread(kp_read, cluster, "t", "read_committed", total) == committed


def test_kafka_python_offsets_in_a_transaction_and_fencing() -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.errors import KafkaError as KPError
    from kafka.structs import OffsetAndMetadata

    with MockCluster(brokers=3, topics={"in": 1, "out": 1}) as cluster:
        src = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
        for i in range(10):
            src.send("in", f"r{i}".encode(), partition=0)
        src.flush()
        src.close()
        groups = cluster.state.groups
        p = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="kp-ctp")
        p.init_transactions()
        tp = TopicPartition("in", 0)
        for commit, offset in ((True, 5), (False, 8)):
            p.begin_transaction()
            p.send("out", f"upto{offset}".encode(), partition=0)
            p.send_offsets_to_transaction({tp: OffsetAndMetadata(offset, "", -1)}, "ctp-group")
            assert groups.committed("ctp-group", "in", 0)[0] == (5 if not commit else -1)  # nothing visible yet
            if commit:
                p.commit_transaction()
            else:
                p.abort_transaction()
        assert groups.committed("ctp-group", "in", 0)[0] == 5  # the aborted offsets never landed
        c = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="ctp-group", enable_auto_commit=False)
        assert c.committed(tp) == 5
        c.close()
        zombie_check = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="kp-ctp")
        zombie_check.init_transactions()  # a new instance: the first one is fenced
        p.begin_transaction()
        with pytest.raises(KPError) as fenced:
            p.send("out", b"zombie", partition=0).get(timeout=10)
            p.commit_transaction()
        assert "Fenced" in type(fenced.value).__name__ or "fenced" in str(fenced.value).lower(), fenced.value
        zombie_check.close()
        p.close(timeout=5)  # the fenced one too: its network thread would outlive the test
        assert read_all(cluster, "out", 1, "read_committed") == {0: ["upto5"]}


def test_confluent_transactions_read_by_kafka_python_and_aiokafka() -> None:
    from confluent_kafka import Producer

    rounds, per_round, aborted = 6, 30, {0, 3}
    with MockCluster(brokers=3, topics={"t": PARTITIONS}) as cluster:
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "ck-txn", "linger.ms": 5})
        p.init_transactions(10)
        for n in range(rounds):
            p.begin_transaction()
            for i in range(per_round):
                p.produce("t", f"t{n}-{i}".encode(), partition=i % PARTITIONS)
            if n in aborted:
                assert p.flush(10) == 0  # the aborted records reach the log before the abort
                p.abort_transaction(10)
            else:
                p.commit_transaction(10)
        committed, everything = expected_split(rounds, per_round, aborted)
        total = sum(len(v) for v in committed.values())
        assert kp_read(cluster, "t", "read_committed", total) == committed
        assert asyncio.run(aio_read(cluster, "t", "read_committed", total)) == committed
        assert asyncio.run(aio_read(cluster, "t", "read_uncommitted", rounds * per_round)) == everything
