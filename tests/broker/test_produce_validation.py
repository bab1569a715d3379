"""``mock.produce.validation``: strict (Kafka's checks, the default) or envelope (speed over strictness).

In envelope mode a batch's CRC, compressed data and records are not looked at: what the producer
sent is stored and served back byte for byte.  The envelope checks stay (sizes, magic, one batch
per partition, codec id, no control batches, counts, sequences), and so do the broker's own uses of
the header (offsets, idempotence).  A real client works the same in both modes.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.protocol import api
from tests.records.helpers import fix_v2_crc

from .wire import WireClient, fetch_body, produce_body

NOW = 1_760_000_000_000


@pytest.fixture(params=["strict", "envelope"])
def cluster(request: pytest.FixtureRequest) -> Iterator[MockCluster]:
    with MockCluster(brokers=1, topics={"t": 1}, config={"mock.produce.validation": request.param}) as c:
        yield c


def _batch(n: int = 3, **kw: object) -> bytearray:
    return bytearray(rec.build_batch([(b"k", f"v{i}".encode(), [], NOW) for i in range(n)], **kw))


def _produce(c: WireClient, data: bytes) -> int:
    result = c.call(0, 9, produce_body(9, "t", 0, data)).responses[0].partition_responses[0]
    return result.error_code  # type: ignore[no-any-return]


def _bad_crc() -> bytes:
    data = _batch()
    data[-1] ^= 0xFF
    return bytes(data)


def _bad_records() -> bytes:
    data = _batch()
    data[61] = 0x7F  # the first record's length varint now claims 63 bytes; the CRC matches the damage
    return bytes(fix_v2_crc(data))


def _bad_lz4() -> bytes:
    data = _batch(compression=rec.LZ4)
    data[70:80] = b"\xff" * 10
    return bytes(fix_v2_crc(data))


@pytest.mark.parametrize(("make", "strict_code"), [(_bad_crc, ErrorCode.CORRUPT_MESSAGE),
                                                   (_bad_records, ErrorCode.INVALID_RECORD),
                                                   (_bad_lz4, ErrorCode.UNKNOWN_SERVER_ERROR)],
                         ids=["crc", "records", "lz4-data"])
def test_what_envelope_mode_leaves_unchecked(cluster: MockCluster, make: object, strict_code: int) -> None:
    data = make()  # type: ignore[operator]
    envelope = cluster.state.config["mock.produce.validation"] == "envelope"
    with WireClient(cluster.brokers[0].port) as c:
        assert _produce(c, data) == (0 if envelope else strict_code)
        if envelope:  # stored and served back exactly as sent
            part = c.call(1, 12, fetch_body("t", 0, 0)).responses[0].partitions[0]
            assert bytes(part.records)[16:] == data[16:]  # after the offset, length and leader epoch


@pytest.mark.parametrize(("data", "code"), [
    (bytes(_batch(control=True)), ErrorCode.INVALID_RECORD),
    (bytes(_batch()) * 2, ErrorCode.INVALID_RECORD),  # v3+: one batch per partition
    (bytes(_batch()[:40]), ErrorCode.CORRUPT_MESSAGE),
    (bytes(_batch(400)), ErrorCode.MESSAGE_TOO_LARGE),
], ids=["control", "two-batches", "truncated", "too-large"])
def test_the_envelope_is_checked_in_both_modes(data: bytes, code: int) -> None:
    for mode in ("strict", "envelope"):
        config = {"mock.produce.validation": mode, "message.max.bytes": 2000}
        with MockCluster(brokers=1, topics={"t": 1}, config=config) as cluster, \
                WireClient(cluster.brokers[0].port) as c:
            assert _produce(c, data) == code, mode
            assert _produce(c, bytes(_batch())) == 0


def test_unknown_modes_are_refused() -> None:
    with pytest.raises(KafkaError) as info:
        MockCluster(brokers=1, config={"mock.produce.validation": "none"})
    assert info.value.code == ErrorCode.INVALID_CONFIG


def test_a_real_client_round_trip_in_either_mode(cluster: MockCluster) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True,
                         "compression.type": "lz4", "linger.ms": 5})
    for i in range(500):
        producer.produce("t", f"value-{i}".encode(), key=b"k", partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g", "enable.auto.commit": False})
    consumer.assign([TopicPartition("t", 0, 0)])
    seen: list[bytes] = []
    while len(seen) < 500:
        msg = consumer.poll(10)
        assert msg is not None and msg.error() is None
        seen.append(msg.value())
    consumer.close()
    assert seen == [f"value-{i}".encode() for i in range(500)]


def test_reads_that_decode_an_unchecked_damaged_batch_answer_corrupt_message(caplog: pytest.LogCaptureFixture) -> None:
    config = {"mock.produce.validation": "envelope"}
    with MockCluster(brokers=1, topics={"t": 1}, config=config) as cluster, WireClient(cluster.brokers[0].port) as c:
        assert _produce(c, _bad_records()) == 0
        fetch = api.request_module(1)
        old_fetch = fetch.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
            fetch.FetchTopic(topic="t", partitions=[fetch.FetchPartition(partition=0, fetch_offset=0,
                                                                         partition_max_bytes=1 << 20)])])
        part = c.call(1, 3, old_fetch).responses[0].partitions[0]  # v3: down-converted to magic 1
        assert part.error_code == ErrorCode.CORRUPT_MESSAGE
        offsets = api.request_module(2)
        by_time = offsets.ListOffsetsRequest(replica_id=-1, topics=[offsets.ListOffsetsTopic(name="t", partitions=[
            offsets.ListOffsetsPartition(partition_index=0, timestamp=NOW - 1)])])
        assert c.call(2, 5, by_time).topics[0].partitions[0].error_code == ErrorCode.CORRUPT_MESSAGE
        # the connection keeps serving; reading the batch as stored (Fetch v4+) works
        assert c.call(1, 12, fetch_body("t", 0, 0)).responses[0].partitions[0].error_code == 0
    assert any("does not decode" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("make", [_bad_crc, _bad_records, _bad_lz4], ids=["crc", "records", "lz4-data"])
def test_python_http_and_spark_reads_of_an_unchecked_damaged_batch_name_its_partition(make: object) -> None:
    from mockbroker.client import KafkaClient, KafkaClientError
    from mockbroker.state.inspect import audit_topic, read_records
    from tests.control.openapi_check import Client

    config = {"mock.produce.validation": "envelope"}
    with MockCluster(brokers=1, topics={"t": 1}, config=config, control_port=0) as cluster, \
            WireClient(cluster.brokers[0].port) as c:
        assert _produce(c, bytes(_batch(2))) == 0  # offsets 0-1 decode
        assert _produce(c, make()) == 0  # type: ignore[operator]  # offsets 2-4 do not
        log = cluster.state.partition("t", 0)
        for read in (lambda: read_records(log, 0), lambda: audit_topic([log])):
            with pytest.raises(KafkaError) as info:
                read()
            assert info.value.code == ErrorCode.CORRUPT_MESSAGE and "t-0 offsets 2..4" in info.value.message
        answer = Client(cluster.control_url).call("GET", "/topics/t/records?partition=0")  # type: ignore[arg-type]
        assert answer.status == 409 and answer.json()["name"] == "CORRUPT_MESSAGE"
        assert "t-0 offsets 2..4" in answer.json()["error"]
        with KafkaClient(cluster.bootstrap_servers) as client:
            assert len(client.fetch("t", 0, 0, max_bytes=1).batches) == 1  # the first batch alone: fine
            # a raw read checks the CRC alone: a batch whose CRC matches its damage passes it (Spark decodes it later)
            for decode in (True, False) if make is _bad_crc else (True,):
                with pytest.raises(KafkaClientError) as client_info:
                    client.fetch("t", 0, 0, decode=decode)
                assert client_info.value.code == ErrorCode.CORRUPT_MESSAGE
                assert "t-0 batch at offset 2 does not decode" in str(client_info.value)
        # the Spark source needs pyarrow ([spark]; not in noxfile.py's core venvs): the reads above still ran
        pytest.importorskip("pyarrow", reason="pyarrow is not installed: the Spark source's read is not checked")
        from mockbroker.spark.rows import Range, read_range

        with pytest.raises(KafkaClientError) as spark_info:
            list(read_range(Range(cluster.bootstrap_servers, "t", 0, 0, 5)))
        assert spark_info.value.code == ErrorCode.CORRUPT_MESSAGE and "t-0 batch at offset 2" in str(spark_info.value)
