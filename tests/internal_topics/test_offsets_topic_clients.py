"""``__consumer_offsets`` holds Kafka's group coordinator records: after commits by confluent-kafka,
kafka-python and aiokafka groups (classic, and KIP-848 with confluent-kafka), a consumer reading the
topic from the beginning finds OffsetCommit records (decoded by hand: offsets_bytes) naming the groups,
topics, partitions and offsets, in the partition Kafka chooses for each group, with the groups' own
records beside them; deletions are tombstones; a TxnOffsetCommit shows only once its transaction commits."""

from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from mockbroker.cluster import MockCluster
from tests.internal_topics.offsets_bytes import group_key, offsets_of, read_offsets_topic
from tests.internal_topics.records import java_partition

pytestmark = pytest.mark.clients
CONFIG = {"group.initial.rebalance.delay.ms": 0}


def _fill(bootstrap: str, topic: str = "t", count: int = 8, partitions: int = 2) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        p.produce(topic, f"v{i}".encode(), partition=i % partitions)
    assert p.flush(10) == 0


def _confluent_group(bootstrap: str, group: str, protocol: str, want: int = 8) -> None:
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    c = Consumer(conf)
    try:
        c.subscribe(["t"])
        seen, deadline = 0, time.monotonic() + 20
        while seen < want and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                seen += 1
        assert seen == want
        c.commit(offsets=[TopicPartition("t", 0, 4, "meta-" + protocol), TopicPartition("t", 1, 3)],
                 asynchronous=False)
    finally:
        c.close()


def _kafka_python_group(bootstrap: str, group: str) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP
    from kafka.structs import OffsetAndMetadata

    c = KafkaConsumer("t", bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, heartbeat_interval_ms=200)
    try:
        seen, deadline = 0, time.monotonic() + 20
        while seen < 8 and time.monotonic() < deadline:
            seen += sum(len(v) for v in c.poll(timeout_ms=200).values())
        assert seen == 8
        c.commit({KTP("t", 0): OffsetAndMetadata(2, "kp", -1), KTP("t", 1): OffsetAndMetadata(1, "", -1)})
    finally:
        c.close()


async def _aiokafka_group(bootstrap: str, group: str) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as ATP

    c = AIOKafkaConsumer("t", bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                         enable_auto_commit=False)
    await c.start()
    try:
        seen, deadline = 0, time.monotonic() + 20
        while seen < 8 and time.monotonic() < deadline:
            seen += sum(len(v) for v in (await c.getmany(timeout_ms=200)).values())
        assert seen == 8
        await c.commit({ATP("t", 0): 1, ATP("t", 1): 2})
    finally:
        await c.stop()


def test_commits_of_four_clients_are_kafka_format_records_in_kafkas_partition() -> None:
    with MockCluster(topics={"t": 2}, config=CONFIG) as cluster:
        bootstrap = cluster.bootstrap_servers
        _fill(bootstrap)
        _confluent_group(bootstrap, "ck-classic", "classic")
        _confluent_group(bootstrap, "ck-848", "consumer")
        _kafka_python_group(bootstrap, "kp-classic")
        asyncio.run(_aiokafka_group(bootstrap, "aio-classic"))
        records = read_offsets_topic(bootstrap)
    offsets = offsets_of(records)
    expected = {
        ("ck-classic", 0): (4, "meta-classic"), ("ck-classic", 1): (3, ""),
        ("ck-848", 0): (4, "meta-consumer"), ("ck-848", 1): (3, ""),
        ("kp-classic", 0): (2, "kp"), ("kp-classic", 1): (1, ""),
        ("aio-classic", 0): (1, ""), ("aio-classic", 1): (2, ""),
    }
    for (group, partition), (offset, metadata) in expected.items():
        history = offsets[(group, "t", partition)]
        where, value = history[-1]
        assert where == java_partition(group), group
        assert value is not None and value["version"] == 3 and value["expire_ms"] == -1
        # (confluent-kafka sends its metadata string with the C terminator: the record keeps what was sent)
        assert (value["offset"], str(value["metadata"]).rstrip("\x00")) == (offset, metadata), (group, partition, value)
        assert isinstance(value["commit_ms"], int) and value["commit_ms"] > 0
    # each group's own records sit beside its offsets: GroupMetadata (type 2) for the classic groups, the
    # KIP-848 records (group epoch 3, member 5, target 6/7, current assignment 8) for the consumer group
    types: dict[str, set[int]] = {}
    for r in records:
        group = group_key(r.key)
        if group is not None:
            assert r.partition == java_partition(group)
            types.setdefault(group, set()).add(r.record_type)
    for group in ("ck-classic", "kp-classic", "aio-classic"):
        assert types[group] == {2}, group
    assert {3, 5, 6, 7, 8} <= types["ck-848"]


def test_offset_delete_and_delete_groups_write_tombstones() -> None:
    from kafka import TopicPartition as KTP
    from kafka.admin import KafkaAdminClient

    with MockCluster(topics={"t": 2}, config=CONFIG) as cluster:
        bootstrap = cluster.bootstrap_servers
        _fill(bootstrap)
        _confluent_group(bootstrap, "gone", "classic")
        _confluent_group(bootstrap, "trimmed", "classic")
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.delete_group_offsets("trimmed", [KTP("t", 1)])
        finally:
            admin.close()
        deleting = AdminClient({"bootstrap.servers": bootstrap})
        deleting.delete_consumer_groups(["gone"])["gone"].result(10)
        records = read_offsets_topic(bootstrap)
    offsets = offsets_of(records)
    assert offsets[("trimmed", "t", 1)][-1] == (java_partition("trimmed"), None)  # OffsetDelete's tombstone
    assert offsets[("trimmed", "t", 0)][-1][1] is not None  # the other partition's offset stays
    for partition in (0, 1):
        assert offsets[("gone", "t", partition)][-1] == (java_partition("gone"), None)
    gone_group = [r for r in records if group_key(r.key) == "gone"]
    assert gone_group[-1].value is None and gone_group[-1].record_type == 2  # GroupMetadata tombstone
    assert gone_group[0].value is not None


def test_txn_offset_commit_is_written_when_the_transaction_commits_not_when_it_aborts() -> None:
    with MockCluster(topics={"t": 2, "out": 1}, config=CONFIG) as cluster:
        bootstrap = cluster.bootstrap_servers
        _fill(bootstrap)
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "txg", "enable.auto.commit": False})
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx-offsets"})
        try:
            producer.init_transactions(10)
            meta = consumer.consumer_group_metadata()
            producer.begin_transaction()
            producer.produce("out", b"a")
            producer.send_offsets_to_transaction([TopicPartition("t", 0, 5)], meta, 10)
            assert offsets_of(read_offsets_topic(bootstrap)).get(("txg", "t", 0)) is None  # open: nothing yet
            producer.commit_transaction(10)
            producer.begin_transaction()
            producer.produce("out", b"b")
            producer.send_offsets_to_transaction([TopicPartition("t", 0, 7), TopicPartition("t", 1, 6)], meta, 10)
            producer.abort_transaction(10)
        finally:
            consumer.close()
        offsets = offsets_of(read_offsets_topic(bootstrap))
    history = offsets[("txg", "t", 0)]
    assert [(where, value["offset"]) for where, value in history if value] == [(java_partition("txg"), 5)]
    assert ("txg", "t", 1) not in offsets  # the aborted transaction's offsets were never written


def test_a_kip848_member_leaving_and_its_group_deleted_are_tombstones_in_kafkas_order() -> None:
    with MockCluster(topics={"t": 2}, config=CONFIG) as cluster:
        bootstrap = cluster.bootstrap_servers
        _fill(bootstrap)
        _confluent_group(bootstrap, "k-gone", "consumer")  # joins, commits, leaves (close)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.delete_consumer_groups(["k-gone"])["k-gone"].result(10)
        records = read_offsets_topic(bootstrap)
    mine = [(r.record_type, r.value is None) for r in records if group_key(r.key) == "k-gone"]
    assert all(r.partition == java_partition("k-gone") for r in records if group_key(r.key) == "k-gone")
    # on leaving: the member's current assignment, target assignment and metadata tombstoned, then the group
    # epoch and the target assignment epoch move on; on deletion: the group's own records tombstoned
    left = mine.index((8, True))
    assert mine[left:left + 3] == [(8, True), (7, True), (5, True)]
    assert (3, False) in mine[left + 3:] and (6, False) in mine[left + 3:]
    assert mine[-2:] == [(6, True), (3, True)]
    assert offsets_of(records)[("k-gone", "t", 0)][-1][1] is None
