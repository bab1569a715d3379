"""Configs through real admin clients (confluent-kafka, kafka-python, aiokafka) and their effects as
real producers and consumers see them: max.message.bytes lowered at runtime, retention.ms moving the
log start, compaction leaving one value per key, tombstones going after delete.retention.ms, and
idempotent / transactional producers carrying on after compaction emptied their batches."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

from mockbroker.cluster import MockCluster
from mockbroker.state.inspect import decoded_batches

pytestmark = pytest.mark.clients


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    # log.segment.bytes below any batch: every batch is a segment of its own (Kafka rolls before a batch
    # that would take the active segment past it), so retention and the cleaner reach all but the newest
    with MockCluster(brokers=2, topics={"t": 1}, config={"log.cleaner.backoff.ms": 300, "log.segment.bytes": 14}) as c:
        yield c


def wait_for(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"condition not met within {timeout} s")


def error_name(future: Any) -> str:
    try:
        future.result(10)
    except KafkaException as exc:
        return exc.args[0].name()
    return "ok"


def produce(cluster: MockCluster, topic: str, items: list[tuple[bytes | None, bytes | None]],
            producer: Producer | None = None, **send: Any) -> None:
    """Send ``items`` as one batch (one flush) and fail on any delivery error."""
    p = producer or Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 50})
    errors: list[Any] = []
    for key, value in items:
        p.produce(topic, key=key, value=value, partition=0, on_delivery=lambda e, m: errors.append(e) if e else None,
                  **send)
    assert p.flush(15) == 0
    assert not errors, errors


def consume_all(cluster: MockCluster, topic: str, expected: int, **conf: Any) -> list[tuple[int, Any, Any]]:
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": str(uuid.uuid4()),
                  "auto.offset.reset": "earliest", "enable.partition.eof": True, **conf})
    c.subscribe([topic])
    out: list[tuple[int, Any, Any]] = []
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF and len(out) >= expected:
                    break
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                continue
            out.append((m.offset(), m.key(), m.value()))
    finally:
        c.close()
    return out


# -- confluent-kafka AdminClient --------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_confluent_describe_alter_incremental(cluster: MockCluster) -> None:
    a = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = ConfigResource("topic", "t")
    cfg = a.describe_configs([topic])[topic].result(10)
    assert cfg["retention.ms"].value == "-1" and cfg["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert cfg["cleanup.policy"].is_default and not cfg["cleanup.policy"].is_read_only

    a.alter_configs([ConfigResource("topic", "t", set_config={"retention.ms": "86400000"})])[
        ConfigResource("topic", "t")].result(10)
    a.incremental_alter_configs([ConfigResource("topic", "t", incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("max.message.bytes", "3000", incremental_operation=AlterConfigOpType.SET)])])[
        ConfigResource("topic", "t")].result(10)
    cfg = a.describe_configs([topic])[topic].result(10)  # librdkafka always asks for synonyms
    assert cfg["cleanup.policy"].value == "delete,compact"
    assert cfg["retention.ms"].value == "86400000"
    assert cfg["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert [(s.name, s.source) for s in cfg["retention.ms"].synonyms.values()] == [
        ("retention.ms", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
        ("log.retention.ms", ConfigSource.DEFAULT_CONFIG.value)]
    bad = a.incremental_alter_configs([ConfigResource("topic", "t", incremental_configs=[
        ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.APPEND)])])
    assert error_name(bad[ConfigResource("topic", "t")]) == "INVALID_CONFIG"

    broker = ConfigResource("broker", "1")
    described = a.describe_configs([broker])[broker].result(10)
    assert described["num.partitions"].is_read_only and not described["log.retention.ms"].is_read_only
    a.incremental_alter_configs([ConfigResource("broker", "1", incremental_configs=[
        ConfigEntry("log.retention.bytes", "123456", incremental_operation=AlterConfigOpType.SET)])])[broker].result(10)
    assert cluster.state.config["log.retention.bytes"] == 123456
    described = a.describe_configs([broker])[broker].result(10)
    assert described["log.retention.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    refused = a.incremental_alter_configs([ConfigResource("broker", "1", incremental_configs=[
        ConfigEntry("num.partitions", "3", incremental_operation=AlterConfigOpType.SET)])])
    assert error_name(refused[broker]) == "INVALID_REQUEST"


# -- kafka-python -------------------------------------------------------------------------------
def test_kafka_python_describe_alter(cluster: MockCluster) -> None:
    from kafka.admin import ConfigResource as KpResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10_000)
    try:
        described = client.describe_configs([KpResource(ConfigResourceType.TOPIC, "t")], config_filter="all")
        topic_cfg = described["topic"]["t"]
        assert topic_cfg["max.message.bytes"]["value"] == "1048588"
        assert topic_cfg["max.message.bytes"]["config_source"] == "DEFAULT_CONFIG"
        # legacy AlterConfigs (the client first adds the modified keys so nothing is reset), then incremental
        result = client.alter_configs([KpResource(ConfigResourceType.TOPIC, "t", {"retention.ms": "5000"})],
                                      incremental=False)
        assert result == {"topic": {"t": "OK"}}
        result = client.alter_configs([KpResource(ConfigResourceType.TOPIC, "t", {"segment.ms": "60000"})],
                                      incremental=True)
        assert result == {"topic": {"t": "OK"}}
        modified = client.describe_configs([KpResource(ConfigResourceType.TOPIC, "t")], include_synonyms=True)
        assert set(modified["topic"]["t"]) == {"retention.ms", "segment.ms"}
        assert modified["topic"]["t"]["retention.ms"]["synonyms"][0]["source"] == "DYNAMIC_TOPIC_CONFIG"
        assert cluster.state.topics["t"].config.overrides == {"retention.ms": 5000, "segment.ms": 60000}
        client.reset_configs([KpResource(ConfigResourceType.TOPIC, "t", ["segment.ms"])])
        assert cluster.state.topics["t"].config.overrides == {"retention.ms": 5000}

        result = client.alter_configs([KpResource(ConfigResourceType.BROKER, "0", {"message.max.bytes": "500000"})],
                                      incremental=False)
        assert result == {"broker": {"0": "OK"}} and cluster.state.config["message.max.bytes"] == 500000
        broker = client.describe_configs([KpResource(ConfigResourceType.BROKER, "0")])["broker"]["0"]
        assert broker["message.max.bytes"]["config_source"] == "DYNAMIC_BROKER_CONFIG"
        result = client.alter_configs([KpResource(ConfigResourceType.BROKER, "0", {"message.max.bytes": "big"})],
                                      incremental=True)
        assert "InvalidRequest" in result["broker"]["0"]
    finally:
        client.close()


# -- aiokafka -------------------------------------------------------------------------------------
async def test_aiokafka_describe_alter() -> None:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource as AioResource
    from aiokafka.admin.config_resource import ConfigResourceType as AioType

    async with MockCluster(brokers=2, topics={"t": 1}) as cluster:
        client = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        await client.start()
        try:
            responses = await client.alter_configs([
                AioResource(AioType.TOPIC, "t", {"max.message.bytes": "2048", "cleanup.policy": "compact"}),
                AioResource(AioType.BROKER, "1", {"log.retention.ms": "3600000"})])
            codes = sorted(r[0] for resp in responses for r in resp.resources)
            assert codes == [0, 0]
            assert cluster.state.topics["t"].config["max.message.bytes"] == 2048
            assert cluster.state.config["log.retention.ms"] == 3600000
            responses = await client.describe_configs([AioResource(AioType.TOPIC, "t", {"max.message.bytes": None}),
                                                       AioResource(AioType.BROKER, "1")], include_synonyms=True)
            entries = {resource[3]: {e[0]: e for e in resource[4]} for resp in responses for resource in resp.resources}
            assert entries["t"]["max.message.bytes"][1] == "2048" and list(entries["t"]) == ["max.message.bytes"]
            assert entries["1"]["log.retention.ms"][1] == "3600000"
            responses = await client.alter_configs([AioResource(AioType.TOPIC, "t", {"no.such.config": "1"})])
            assert [r[0] for resp in responses for r in resp.resources] == [40]  # INVALID_CONFIG
        finally:
            await client.close()


# -- effects seen by real producers and consumers ----------------------------------------------------
def test_max_message_bytes_lowered_at_runtime(cluster: MockCluster) -> None:
    a = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    big = bytes(range(256)) * 8  # 2 KiB, incompressible enough and uncompressed anyway
    produce(cluster, "t", [(b"k", big)])
    a.incremental_alter_configs([ConfigResource("topic", "t", incremental_configs=[
        ConfigEntry("max.message.bytes", "1000", incremental_operation=AlterConfigOpType.SET)])])[
        ConfigResource("topic", "t")].result(10)
    errors: list[Any] = []
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "retries": 0})
    p.produce("t", key=b"k", value=big, partition=0, on_delivery=lambda e, m: errors.append(e))
    p.flush(15)
    assert [e.code() for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE]


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_retention_ms_moves_where_consumers_start(cluster: MockCluster) -> None:
    now = int(time.time() * 1000)
    produce(cluster, "t", [(b"old", str(i).encode()) for i in range(5)], timestamp=now - 120_000)
    produce(cluster, "t", [(b"new", str(i).encode()) for i in range(5)])
    a = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    a.alter_configs([ConfigResource("topic", "t", set_config={"retention.ms": "60000"})])[
        ConfigResource("topic", "t")].result(10)
    log = cluster.state.topics["t"].partitions[0]
    wait_for(lambda: log.log_start_offset == 5)  # the next retention check (every 1000 ms)
    got = consume_all(cluster, "t", 5)
    assert [(o, k) for o, k, _ in got] == [(i, b"new") for i in range(5, 10)]


def test_compaction_one_value_per_key_and_tombstones_expire(cluster: MockCluster) -> None:
    cluster.create_topic("c", 1, config={"cleanup.policy": "compact", "delete.retention.ms": "2000"})
    for round_ in range(3):
        produce(cluster, "c", [(f"k{i}".encode(), f"v{round_}".encode()) for i in range(4)])
    produce(cluster, "c", [(b"k0", None)])  # tombstone
    produce(cluster, "c", [(b"end", b"1")])  # the last batch stays uncleaned
    log = cluster.state.topics["c"].partitions[0]
    wait_for(lambda: sum(1 for b in decoded_batches(log) for _ in b.records) == 5)
    got = consume_all(cluster, "c", 5)
    assert [(k, v) for _, k, v in got] == [(b"k1", b"v2"), (b"k2", b"v2"), (b"k3", b"v2"), (b"k0", None),
                                          (b"end", b"1")]
    assert [o for o, _, _ in got] == [9, 10, 11, 12, 13]  # offsets kept
    wait_for(lambda: sum(1 for b in decoded_batches(log) for _ in b.records) == 4, timeout=15)
    got = consume_all(cluster, "c", 4)
    assert [(k, v) for _, k, v in got] == [(b"k1", b"v2"), (b"k2", b"v2"), (b"k3", b"v2"), (b"end", b"1")]


def test_idempotent_and_transactional_producers_survive_compaction(cluster: MockCluster) -> None:
    cluster.create_topic("c", 1, config={"cleanup.policy": "compact"})
    idem = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True, "linger.ms": 20})
    txn = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "cfg-txn", "linger.ms": 20})
    txn.init_transactions(15)
    produce(cluster, "c", [(b"i", b"1")], producer=idem)
    txn.begin_transaction()
    produce(cluster, "c", [(b"x", b"1")], producer=txn)
    txn.commit_transaction(15)
    produce(cluster, "c", [(b"i", b"2"), (b"x", b"2")])  # a plain producer overwrites both keys
    produce(cluster, "c", [(b"end", b"1")])
    log = cluster.state.topics["c"].partitions[0]
    wait_for(lambda: any(b.header.record_count == 0 for b in decoded_batches(log)))
    empty = [b.header for b in decoded_batches(log) if b.header.record_count == 0 and not b.header.is_control]
    assert len(empty) == 2 and all(h.producer_id >= 0 for h in empty)  # both producers' batches kept, empty
    produce(cluster, "c", [(b"i", b"3")], producer=idem)  # sequence 1 follows the emptied batch's 0
    txn.begin_transaction()
    produce(cluster, "c", [(b"x", b"3")], producer=txn)
    txn.commit_transaction(15)
    # The cleaner runs every second and may already have dropped i=2 and x=2 (superseded now): a pass
    # here makes the outcome the same either way.
    cluster.run_log_cleaner()
    got = consume_all(cluster, "c", 3, **{"isolation.level": "read_committed"})
    assert [(k, v) for _, k, v in got] == [(b"end", b"1"), (b"i", b"3"), (b"x", b"3")]
