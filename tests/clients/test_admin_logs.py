"""Log, replica, leader and feature admin through real admin clients, each with an observable effect:

- confluent-kafka AdminClient: delete_records (a consumer from the beginning starts at the new low
  watermark), elect_leaders (a producer keeps producing to the preferred leader).
- kafka-python KafkaAdminClient: delete_records, describe_log_dirs, alter_replica_log_dirs,
  elect_leaders, alter_partition_reassignments, list_partition_reassignments,
  describe_topic_partitions, describe_features, update_features.
- aiokafka AIOKafkaAdminClient: delete_records (an AIOKafkaConsumer from the beginning starts there).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTP
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.records_to_delete import RecordsToDelete
from confluent_kafka import Consumer, ElectionType, KafkaException, Producer
from confluent_kafka import TopicPartition as CkTP
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import InvalidUpdateVersionError, NoError, ReplicaNotAvailableError

from mockbroker.cluster import MockCluster

pytestmark = pytest.mark.clients


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, config={"log.dirs": "/data/{id}/a,/data/{id}/b"}) as c:
        c.create_topic("logs", 2, 1)
        c.create_topic("rf3", 3, 3)
        yield c


def leader(cluster: MockCluster, topic: str, index: int) -> int:
    return cluster.call(lambda: cluster.state.topics[topic].partitions[index].leader)


def replicas(cluster: MockCluster, topic: str, index: int) -> list[int]:
    return cluster.call(lambda: list(cluster.state.topics[topic].partitions[index].replicas))


def ck_produce(cluster: MockCluster, topic: str, partition: int, count: int, tag: str = "v") -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 1})
    errors: list[object] = []
    for i in range(count):
        p.produce(topic, f"{tag}{i}".encode(), partition=partition,
                  on_delivery=lambda err, _msg: errors.append(err) if err else None)
    assert p.flush(15) == 0 and errors == []


def produced_at(cluster: MockCluster, since: int) -> set[int]:
    """The brokers that accepted Produce requests (no errors) since journal entry ``since``."""
    return {e.broker for e in cluster.journal.entries(api="Produce", since_seq=since) if not e.errors}


def last_seq(cluster: MockCluster) -> int:
    entries = cluster.journal.entries()
    return entries[-1].seq if entries else 0


# -- confluent-kafka ---------------------------------------------------------------------------
def test_confluent_delete_records_then_a_consumer_starts_at_the_low_watermark(cluster: MockCluster) -> None:
    ck_produce(cluster, "logs", 0, 30)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.delete_records([CkTP("logs", 0, 12), CkTP("logs", 1, 5), CkTP("missing", 0, 1)])
    outcome = {}
    for tp, f in futures.items():
        try:
            outcome[(tp.topic, tp.partition)] = f.result(10).low_watermark
        except KafkaException as exc:
            outcome[(tp.topic, tp.partition)] = exc.args[0].name()
    assert outcome == {("logs", 0): 12, ("logs", 1): "OFFSET_OUT_OF_RANGE", ("missing", 0): "UNKNOWN_TOPIC_OR_PART"}
    low, high = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "wm"}).get_watermark_offsets(
        CkTP("logs", 0), timeout=10)
    assert (low, high) == (12, 30)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "from-start",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([CkTP("logs", 0, -2)])  # OFFSET_BEGINNING
        msg = None
        deadline = time.monotonic() + 15
        while msg is None and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                msg = m
        assert msg is not None and (msg.offset(), msg.value()) == (12, b"v12")
    finally:
        consumer.close()


def test_confluent_elect_leaders_moves_the_leader_back_and_producing_follows(cluster: MockCluster) -> None:
    preferred = replicas(cluster, "rf3", 0)[0]
    other = replicas(cluster, "rf3", 0)[1]
    cluster.move_leader("rf3", 0, other)
    ck_produce(cluster, "rf3", 0, 5, "before")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    result = admin.elect_leaders(ElectionType.PREFERRED, [CkTP("rf3", 0), CkTP("rf3", 1)]).result(10)
    codes = {tp.partition: (err.name() if err is not None else None) for tp, err in result.items()}
    assert codes == {0: None, 1: "ELECTION_NOT_NEEDED"}
    assert leader(cluster, "rf3", 0) == preferred
    assert admin.elect_leaders(ElectionType.PREFERRED, None).result(10) == {}  # nothing left to elect
    since = last_seq(cluster)
    ck_produce(cluster, "rf3", 0, 5, "after")
    assert produced_at(cluster, since) == {preferred}
    assert cluster.call(lambda: cluster.state.topics["rf3"].partitions[0].high_watermark) == 10


# -- kafka-python ------------------------------------------------------------------------------
def kp_admin(cluster: MockCluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)


def test_kafka_python_delete_records_then_seek_to_beginning(cluster: MockCluster) -> None:
    ck_produce(cluster, "logs", 1, 20)
    admin = kp_admin(cluster)
    try:
        out = admin.delete_records({TopicPartition("logs", 1): 7})
        assert out[TopicPartition("logs", 1)]["low_watermark"] == 7
        out = admin.delete_records({TopicPartition("logs", 1): -1})  # the high watermark
        assert out[TopicPartition("logs", 1)]["low_watermark"] == 20
    finally:
        admin.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False)
    try:
        tp = TopicPartition("logs", 1)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        assert consumer.position(tp) == 20
        assert consumer.beginning_offsets([tp]) == {tp: 20}
    finally:
        consumer.close()


def test_kafka_python_log_dirs_describe_and_move(cluster: MockCluster) -> None:
    ck_produce(cluster, "logs", 0, 10)
    node = leader(cluster, "logs", 0)
    size = cluster.call(lambda: cluster.state.topics["logs"].partitions[0].size_bytes)
    admin = kp_admin(cluster)
    try:
        def where() -> dict[str, dict[int, int]]:
            [broker] = admin.describe_log_dirs({"logs": [0]}, brokers=[node])
            assert broker["broker"] == node
            return {d["log_dir"]: {p["partition_index"]: p["partition_size"]
                                   for t in d["topics"] for p in t["partitions"]} for d in broker["log_dirs"]}

        assert where() == {f"/data/{node}/a": {0: size}, f"/data/{node}/b": {}}
        outsider = next(b for b in (0, 1, 2) if b != node)
        moved = admin.alter_replica_log_dirs({("logs", 0, node): f"/data/{node}/b",
                                              ("logs", 0, outsider): f"/data/{outsider}/b"})
        assert {k.broker_id: v for k, v in moved.items()} == {node: NoError, outsider: ReplicaNotAvailableError}
        assert where() == {f"/data/{node}/a": {}, f"/data/{node}/b": {0: size}}
        everything = admin.describe_log_dirs()
        assert sorted(b["broker"] for b in everything) == [0, 1, 2]
        usable = {d["log_dir"]: d["usable_bytes"] for b in everything for d in b["log_dirs"]}
        assert usable[f"/data/{node}/b"] == usable[f"/data/{outsider}/b"] - size
    finally:
        admin.close()


def test_kafka_python_elect_leaders_after_a_broker_returns(cluster: MockCluster) -> None:
    preferred = replicas(cluster, "rf3", 1)[0]
    cluster.broker_down(preferred)
    assert leader(cluster, "rf3", 1) != preferred
    cluster.broker_up(preferred)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks=1)
    admin = kp_admin(cluster)
    try:
        producer.send("rf3", b"before", partition=1).get(10)
        resp = admin.elect_leaders(0, {"rf3": [1]})
        assert [(p.partition_id, p.error_code) for r in resp.replica_election_results for p in r.partition_result] == [
            (1, 0)]
        assert leader(cluster, "rf3", 1) == preferred
        since = last_seq(cluster)
        producer.send("rf3", b"after", partition=1).get(10)  # the producer follows the new leader
        assert produced_at(cluster, since) == {preferred}
    finally:
        producer.close(5)
        admin.close()


def test_kafka_python_reassignment_in_progress_then_done_and_producing_follows() -> None:
    with MockCluster(brokers=3, config={"mock.reassignment.delay.ms": 800}) as cluster:
        cluster.create_topic("moving", 1, 1)
        old = leader(cluster, "moving", 0)
        new = [b for b in (0, 1, 2) if b != old]
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks=1)
        admin = kp_admin(cluster)
        tp = TopicPartition("moving", 0)
        try:
            producer.send("moving", b"one", partition=0).get(10)
            assert admin.alter_partition_reassignments({tp: new}) == {tp: None}
            assert admin.list_partition_reassignments() == {
                tp: {"replicas": [*new, old], "adding_replicas": new, "removing_replicas": [old]}}
            deadline = time.monotonic() + 10
            while admin.list_partition_reassignments() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert admin.list_partition_reassignments() == {}
            assert (leader(cluster, "moving", 0), replicas(cluster, "moving", 0)) == (new[0], new)
            since = last_seq(cluster)
            producer.send("moving", b"two", partition=0).get(10)
            assert produced_at(cluster, since) == {new[0]}
            # cancelling with nothing in progress
            out = admin.alter_partition_reassignments({tp: None})
            assert out[tp].__name__ == "NoReassignmentInProgressError"
        finally:
            producer.close(5)
            admin.close()
        consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False,
                                 auto_offset_reset="earliest", consumer_timeout_ms=5000)
        try:
            consumer.assign([tp])
            assert [m.value for m in consumer][:2] == [b"one", b"two"]
        finally:
            consumer.close()


def test_kafka_python_describe_topic_partitions_pages(cluster: MockCluster) -> None:
    admin = kp_admin(cluster)
    try:
        first = admin.describe_topic_partitions(["rf3", "logs"], response_partition_limit=3)
        assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in first["topics"]] == [
            ("logs", [0, 1]), ("rf3", [0])]
        assert first["next_cursor"] == {"topic_name": "rf3", "partition_index": 1}
        rest = admin.describe_topic_partitions(["rf3", "logs"], cursor=first["next_cursor"])
        parts = rest["topics"][0]["partitions"]
        assert rest["next_cursor"] is None and [p["partition_index"] for p in parts] == [1, 2]
        assert parts[0]["replica_nodes"] == replicas(cluster, "rf3", 1) and parts[0]["leader_id"] == leader(
            cluster, "rf3", 1)
    finally:
        admin.close()


def test_kafka_python_features(cluster: MockCluster) -> None:
    admin = kp_admin(cluster)
    try:
        before = admin.describe_features()
        assert before["metadata.version"] == {"supported": (7, 25), "finalized": (25, 25), "finalized_epoch": 1}
        assert admin.update_features({"transaction.version": ("SAFE_DOWNGRADE", 1)}) == {"transaction.version": "OK"}
        after = admin.describe_features()
        assert after["transaction.version"]["finalized"] == (1, 1)
        assert after["transaction.version"]["finalized_epoch"] == 2
        with pytest.raises(InvalidUpdateVersionError, match=r"only supports versions \[7-25\]"):
            admin.update_features({"metadata.version": 26})
        assert admin.update_features({"group.version": ("SAFE_DOWNGRADE", 0)}, validate_only=True) == {
            "group.version": "OK"}
        assert admin.describe_features()["group.version"]["finalized"] == (1, 1)
    finally:
        admin.close()


# -- aiokafka ----------------------------------------------------------------------------------
async def test_aiokafka_delete_records_then_seek_to_beginning() -> None:
    async with MockCluster(brokers=3) as cluster:
        cluster.state.create_topic("aio", 1, 1)
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers)  # the broker shares this loop
        await producer.start()
        try:
            for i in range(15):
                await producer.send_and_wait("aio", f"v{i}".encode(), partition=0)
        finally:
            await producer.stop()
        admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        await admin.start()
        try:
            assert await admin.delete_records({AioTP("aio", 0): RecordsToDelete(9)}) == {AioTP("aio", 0): 9}
        finally:
            await admin.close()
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False)
        await consumer.start()
        try:
            tp = AioTP("aio", 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            msg = await consumer.getone()
            assert (msg.offset, msg.value) == (9, b"v9")
        finally:
            await consumer.stop()
