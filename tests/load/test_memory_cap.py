"""Memory caps (mockbroker.state.memory_cap): ``mock.log.max.total.bytes`` refuses produce with
KAFKA_STORAGE_ERROR once retention cannot make room; ``retention.bytes`` holds between retention
checks; a confluent-kafka producer flooding a capped ``mockbroker serve`` cannot grow its RSS."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from tests.broker.wire import WireClient, fetch_body, produce_body
from tests.load.broker_process import BrokerProcess

MiB = 1024 * 1024
CAP = 40_000


def _port(cluster: MockCluster) -> int:
    return int(cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)[1])


def _produce(client: WireClient, topic: str, size: int, n: int = 0) -> Any:
    batch = rec.build_batch([(b"k%d" % n, b"v" * size)])
    return client.call(0, 9, produce_body(9, topic, 0, batch)).responses[0].partition_responses[0]


def _fill_until_refused(client: WireClient, topic: str, size: int = 2000) -> tuple[list[int], Any]:
    acked: list[int] = []
    for n in range(1000):
        answer = _produce(client, topic, size, n)
        if answer.error_code:
            return acked, answer
        acked.append(answer.base_offset)
    raise AssertionError("the cap never refused a produce")


@pytest.mark.parametrize("policy", ["delete", "compact"])
def test_the_global_cap_refuses_with_kafka_storage_error_and_keeps_what_was_acknowledged(
        policy: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mockbroker")
    with MockCluster(brokers=1, config={"mock.log.max.total.bytes": CAP}) as cluster:
        cluster.create_topic("capped", 1, config={"cleanup.policy": policy})  # no retention configured
        with WireClient(_port(cluster)) as client:
            acked, refused = _fill_until_refused(client, "capped")
            assert refused.error_code == ErrorCode.KAFKA_STORAGE_ERROR
            assert "mock.log.max.total.bytes" in refused.error_message
            assert len(acked) >= CAP // 3000
            # nothing acknowledged went: the log still starts at 0 and holds every offset
            part = client.call(1, 12, fetch_body("capped", 0, 0)).responses[0].partitions[0]
            assert part.error_code == 0 and part.log_start_offset == 0 and part.high_watermark == len(acked)
            # the broker keeps serving, and makes room when data goes: DeleteRecords (delete policy;
            # Kafka refuses it on compacted topics) or deleting the topic
            if policy == "delete":
                dm = api.request_module(21)
                deleted = client.call(21, 2, dm.DeleteRecordsRequest(timeout_ms=5000, topics=[dm.DeleteRecordsTopic(
                    name="capped", partitions=[dm.DeleteRecordsPartition(partition_index=0, offset=len(acked))])]))
                assert deleted.topics[0].partitions[0].error_code == 0
                assert _produce(client, "capped", 2000).error_code == 0
            else:
                cluster.call(cluster.state.delete_topic, "capped")
                cluster.create_topic("next", 1, config={"cleanup.policy": policy})
                assert _produce(client, "next", 2000).error_code == 0
    assert any("KAFKA_STORAGE_ERROR" in r.getMessage() and "mock.log.max.total.bytes" in r.getMessage()
               for r in caplog.records)


def test_at_the_global_cap_retention_runs_before_anything_is_refused() -> None:
    config = {"mock.log.max.total.bytes": CAP, "log.retention.check.interval.ms": 3_600_000}
    with MockCluster(brokers=1, config=config) as cluster:
        cluster.create_topic("kept", 1)
        # segment.bytes below a batch: each batch a segment, so retention.bytes trims batch by batch
        cluster.create_topic("trimmed", 1, config={"retention.bytes": 5000, "segment.bytes": 14})
        with WireClient(_port(cluster)) as client:
            for n in range(12):  # ~24 kB: above its retention.bytes, but no retention check comes for an hour
                assert _produce(client, "trimmed", 2000, n).error_code == 0
            assert cluster.call(lambda: cluster.state.partition("trimmed", 0).log_start_offset) == 0
            acked, refused = _fill_until_refused(client, "kept")
            assert refused.error_code == ErrorCode.KAFKA_STORAGE_ERROR
            # "trimmed" went back to its retention.bytes first; "kept" (no retention) lost nothing
            trimmed = cluster.call(lambda: cluster.state.partition("trimmed", 0))
            assert trimmed.log_start_offset > 0 and trimmed.size_bytes <= 5000 + 2200
            assert len(acked) * 2000 > CAP - 5000 - 2200 - 12 * 2600
            part = client.call(1, 12, fetch_body("kept", 0, 0)).responses[0].partitions[0]
            assert part.log_start_offset == 0 and part.high_watermark == len(acked)


def test_retention_bytes_holds_between_retention_checks() -> None:
    config = {"log.retention.check.interval.ms": 3_600_000, "mock.log.max.total.bytes": -1}
    with MockCluster(brokers=1, config=config) as cluster:
        # retention.bytes deletes whole segments below the active one: 1 MiB segments (Kafka's smallest)
        cluster.create_topic("fast", 1, config={"retention.bytes": 100_000, "segment.bytes": MiB})
        biggest = 0
        with WireClient(_port(cluster)) as client:
            for n in range(100):  # 3 MB, far faster than the (hourly) retention check
                answer = _produce(client, "fast", 30_000, n)
                assert answer.error_code == 0
                biggest = max(biggest, cluster.call(lambda: cluster.state.partition("fast", 0).size_bytes))
            log_start = cluster.call(lambda: cluster.state.partition("fast", 0).log_start_offset)
            assert 0 < log_start < 100
            part = client.call(1, 12, fetch_body("fast", 0, log_start)).responses[0].partitions[0]
            assert part.error_code == 0 and part.log_start_offset == log_start
        assert biggest <= 100_000 + 1 * MiB + MiB + 31_000  # retention.bytes, the slack, a segment, a batch


@pytest.mark.slow
@pytest.mark.clients
def test_a_confluent_producer_flooding_a_capped_broker() -> None:
    cap = 48 * MiB
    with BrokerProcess("--topic", "flood:2", "--config", f"mock.log.max.total.bytes={cap}") as broker:
        time.sleep(0.5)
        rss_start = broker.rss()
        errors: dict[str, int] = {}
        acked = 0

        def delivered(err: Any, _msg: Any) -> None:
            nonlocal acked
            if err is None:
                acked += 1
            else:
                errors[err.name()] = errors.get(err.name(), 0) + 1

        # retries off: the broker's code reaches the delivery report (with retries, librdkafka retries
        # KAFKA_STORAGE_ERROR until message.timeout.ms and reports _MSG_TIMED_OUT)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "retries": 0})
        value = b"x" * 100_000
        rss_max = 0
        start = time.monotonic()
        while time.monotonic() - start < 8 and errors.get("KAFKA_STORAGE_ERROR", 0) < 200:
            try:
                producer.produce("flood", value=value, on_delivery=delivered)
            except BufferError:
                producer.poll(0.05)
                rss_max = max(rss_max, broker.rss())
            producer.poll(0)
        producer.flush(30)
        rss_max = max(rss_max, broker.rss())
        print(f"\nflood: {acked} x 100 kB acknowledged, refusals {errors}; broker RSS {rss_start / MiB:.0f} MiB "
              f"at start, at most {rss_max / MiB:.0f} MiB under a cap of {cap / MiB:.0f} MiB")
        assert errors.get("KAFKA_STORAGE_ERROR", 0) > 0 and set(errors) == {"KAFKA_STORAGE_ERROR"}
        assert acked * 100_000 <= cap
        assert rss_max <= rss_start + cap + 40 * MiB
        # the broker keeps serving: every acknowledged record reads back, DeleteRecords makes room
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "flood-check",
                             "auto.offset.reset": "earliest", "fetch.max.bytes": 8 * MiB})
        consumer.subscribe(["flood"])
        read, deadline = 0, time.monotonic() + 30
        while read < acked and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                read += 1
        consumer.close()
        assert read == acked
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for f in admin.delete_records([TopicPartition("flood", p, -1) for p in (0, 1)]).values():
            f.result(10)
        ok: list[KafkaError | None] = []
        producer.produce("flood", value=b"after", on_delivery=lambda err, _m: ok.append(err))
        producer.flush(10)
        assert ok == [None]
        assert broker.alive()


def test_a_stored_batch_does_not_keep_a_larger_request_frame_alive() -> None:
    with MockCluster(brokers=1, topics={"two": 2}) as cluster, WireClient(_port(cluster)) as client:
        m = api.request_module(0)
        big, small = rec.build_batch([(b"k", b"b" * 60_000)]), rec.build_batch([(b"k", b"s" * 100)])
        answer = client.call(0, 9, m.ProduceRequest(acks=1, timeout_ms=5000, topic_data=[m.TopicProduceData(
            name="two", partition_data=[m.PartitionProduceData(index=0, records=big),
                                        m.PartitionProduceData(index=1, records=small)])]))
        assert [p.error_code for p in answer.responses[0].partition_responses] == [0, 0]

        def frames() -> list[int]:
            """Bytes each stored batch keeps alive: the frame a view is of, or its own copy (bytes)."""
            kept = [cluster.state.partition("two", p).batches[0].buffers[1] for p in (0, 1)]
            return [len(b.obj if isinstance(b, memoryview) else b) for b in kept]

        big_frame, small_frame = cluster.call(frames)
        assert big_frame >= 60_000  # most of the frame: stored without a copy
        assert small_frame < 1000  # copied out: deleting partition 0's data frees the 60 kB


@pytest.mark.parametrize("huge_pages", [False, True], ids=["plain", "huge-pages"])
def test_the_batches_of_one_request_share_its_frame_when_together_they_are_most_of_it(huge_pages: bool) -> None:
    """Four partitions' batches of ~20 kB in one ~80 kB request (above LARGE_FRAME, so a buffer of its
    own whether the connection read it in one piece or not): stored as views of that one buffer,
    not copied batch by batch into fresh memory; in a huge-page arena when arenas are on."""
    from mockbroker.server import connection

    if connection._Reader is connection.PyReader:
        pytest.skip("the C reader and lane are not in use (MOCKBROKER_PURE_PYTHON set, or not built)")
    from mockbroker.native import _reading

    before = _reading.use_arenas(1 if huge_pages else 0)
    try:
        if huge_pages and _reading.use_arenas(1) == 0:
            pytest.skip("transparent huge pages are off here")
        _share_one_frame(_reading.ArenaFrame if huge_pages else bytearray)
    finally:
        _reading.use_arenas(before)


def _share_one_frame(frame_type: type) -> None:
    with MockCluster(brokers=1, topics={"four": 4}) as cluster, WireClient(_port(cluster)) as client:
        m = api.request_module(0)
        batches = [rec.build_batch([(b"k", bytes([p]) * 20_000)]) for p in range(4)]
        answer = client.call(0, 9, m.ProduceRequest(acks=1, timeout_ms=5000, topic_data=[m.TopicProduceData(
            name="four", partition_data=[m.PartitionProduceData(index=p, records=batches[p]) for p in range(4)])]))
        assert [p.error_code for p in answer.responses[0].partition_responses] == [0, 0, 0, 0]

        def kept() -> list[Any]:
            return [cluster.state.partition("four", p).batches[0].buffers[1] for p in range(4)]

        views = cluster.call(kept)
        assert all(isinstance(v, memoryview) for v in views)
        frames = {id(v.obj) for v in views}
        assert len(frames) == 1 and len(views[0].obj) > 80_000 and type(views[0].obj) is frame_type
        assert [bytes(v) for v in views] == [b[16:] for b in batches]  # the records after offset and length


@pytest.mark.clients
def test_the_cap_is_a_dynamic_broker_config_and_kafka_python_sees_kafka_storage_error() -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    from kafka import KafkaProducer
    from kafka.errors import KafkaStorageError

    from mockbroker.state.memory_cap import default_total_cap

    with MockCluster(brokers=1, topics={"t": 1}) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        broker = ConfigResource(ConfigResource.Type.BROKER, "0")
        entries = admin.describe_configs([broker])[broker].result(10)
        assert entries["mock.log.max.total.bytes"].value == str(default_total_cap())
        assert entries["socket.listen.backlog.size"].value == "1024"
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, retries=0, linger_ms=0)
        producer.send("t", b"x" * 5000).get(10)  # under the default cap
        dynamic = ConfigResource(ConfigResource.Type.BROKER, "0", incremental_configs=[
            ConfigEntry("mock.log.max.total.bytes", "4000", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([dynamic])[dynamic].result(10)
        with pytest.raises(KafkaStorageError):
            producer.send("t", b"y" * 5000).get(10)
        producer.close()


def test_writes_from_python_and_markers_are_counted_and_far_from_the_cap_the_tick_does_not_recount() -> None:
    """Every append is counted as it comes, whoever makes it (a client's Produce, records written from
    Python, transaction markers), so the count never falls below what is stored; below half the cap
    the tick leaves a count that only lags deletions alone (no walk over every partition each second),
    and near the cap it recounts."""
    from mockbroker.cluster_actions import produce

    cap = 10 * MiB
    with MockCluster(brokers=1, config={"mock.log.max.total.bytes": cap}) as cluster:
        cluster.create_topic("counted", 2)
        state, memory = cluster.state, cluster.state.memory_cap
        with WireClient(_port(cluster)) as client:
            assert _produce(client, "counted", 1000).error_code == 0
        produce(cluster, "counted", 300, value_size=500)  # straight into the logs, as the control API does
        cluster.call(lambda: state.write_txn_markers(7, 0, True, [("counted", 0), ("counted", 1)], []))
        counted = cluster.call(lambda: memory.total)
        assert counted == cluster.call(memory.refresh) > 300 * 500

        cluster.call(lambda: state.topics["counted"].partitions[1].advance_log_start(10**9))  # DeleteRecords
        cluster.call(memory.tick)
        assert cluster.call(lambda: memory.total) == counted  # far from the cap: stale, and no walk

        cluster.call(lambda: state.config.set("mock.log.max.total.bytes", counted + 1000))
        cluster.call(lambda: setattr(memory, "_recounted_at", 0.0))
        cluster.call(memory.tick)  # near the cap: the deletion is counted now
        assert cluster.call(lambda: memory.total) == cluster.call(memory.refresh) < counted
