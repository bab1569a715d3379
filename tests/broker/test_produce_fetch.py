"""Produce and Fetch over a real socket: Kafka's error codes for bad data, offsets, long polls."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode

from .wire import WireClient, fetch_body, produce_body

NOW = int(time.time() * 1000)


@pytest.fixture
def one() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, topics={"t": 2}) as c:
        yield c


def batch(n: int = 3, codec: int = 0, ts: int | None = None, **kw: object) -> bytes:
    return rec.build_batch([(f"k{i}".encode(), f"v{i}".encode(), [("h", b"x")], ts or NOW) for i in range(n)],
                           compression=codec, **kw)


def partition_result(resp: object) -> object:
    return resp.responses[0].partition_responses[0]


def test_offsets_are_assigned_and_fetch_returns_the_producers_bytes(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        first = partition_result(c.call(0, 9, produce_body(9, "t", 0, batch(3))))
        second = partition_result(c.call(0, 9, produce_body(9, "t", 0, batch(2, codec=rec.ZSTD))))
        assert (first.error_code, first.base_offset) == (0, 0)
        assert (second.error_code, second.base_offset) == (0, 3)
        fetched = c.call(1, 12, fetch_body("t", 0, 0))
        part = fetched.responses[0].partitions[0]
        assert part.high_watermark == 5 and part.error_code == 0
        offsets = []
        for _pos, magic, view in rec.iter_batches(part.records):
            header, records = rec.decode_batch(view)
            assert magic == 2
            offsets += [header.base_offset + r.offset_delta for r in records]
        assert offsets == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    ("version", "data", "code"),
    [
        (9, None, ErrorCode.INVALID_RECORD),
        (9, batch() + batch(), ErrorCode.INVALID_RECORD),  # v3+: exactly one batch
        (6, batch(codec=rec.ZSTD), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
        (9, rec.build_message_set([(b"k", b"v", NOW)], 1), ErrorCode.INVALID_RECORD),  # magic 1 at v3+
        (9, batch(ts=NOW + 7_200_000), ErrorCode.INVALID_TIMESTAMP),
        (9, batch(control=True), ErrorCode.INVALID_RECORD),
    ],
    ids=["no-records", "two-batches", "zstd-before-v7", "magic1-at-v9", "future-timestamp", "control-batch"],
)
def test_bad_produce_data_gets_kafkas_error(one: MockCluster, version: int, data: bytes | None, code: int) -> None:
    with WireClient(one.brokers[0].port) as c:
        result = partition_result(c.call(0, version, produce_body(version, "t", 0, data)))
        assert result.error_code == code, result
        assert one.state.partition("t", 0).next_offset == 0
        ok = partition_result(c.call(0, version, produce_body(version, "t", 0, batch(1))))
        assert ok.error_code == 0  # the connection keeps serving


def test_crc_mismatch_is_corrupt_message(one: MockCluster) -> None:
    data = bytearray(batch())
    data[-1] ^= 0xFF
    with WireClient(one.brokers[0].port) as c:
        assert partition_result(c.call(0, 9, produce_body(9, "t", 0, bytes(data)))).error_code == 2


def test_timestamp_errors_name_the_records_from_v8(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        result = partition_result(c.call(0, 8, produce_body(8, "t", 0, batch(2, ts=NOW + 7_200_000))))
        assert result.error_code == ErrorCode.INVALID_TIMESTAMP
        assert [e.batch_index for e in result.record_errors] == [0, 1]


def test_message_too_large_and_unknown_topic_and_not_leader() -> None:
    with MockCluster(brokers=2, topics={"t": 2}, config={"message.max.bytes": 200}) as cluster:
        leader0 = next(p.index for p in cluster.state.topics["t"].partitions if p.leader == 0)
        follower = 1 - leader0
        with WireClient(cluster.brokers[0].port) as c:
            big = partition_result(c.call(0, 9, produce_body(9, "t", leader0, batch(20))))
            assert big.error_code == ErrorCode.MESSAGE_TOO_LARGE
            unknown = partition_result(c.call(0, 9, produce_body(9, "nope", 0, batch(1))))
            assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            resp = c.call(0, 10, produce_body(10, "t", follower, batch(1)))
            moved = partition_result(resp)
            assert moved.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert moved.current_leader.leader_id == 1
            assert [e.node_id for e in resp.node_endpoints] == [1]


def test_acks_zero_gets_no_response(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        c.send(0, 9, produce_body(9, "t", 0, batch(2), acks=0))
        resp = c.call(1, 12, fetch_body("t", 0, 0))  # the next answer is the fetch's
        assert resp.responses[0].partitions[0].high_watermark == 2


def test_log_append_time_topic_stamps_batches(one: MockCluster) -> None:
    one.create_topic("lat", 1, config={"message.timestamp.type": "LogAppendTime"})
    with WireClient(one.brokers[0].port) as c:
        result = partition_result(c.call(0, 9, produce_body(9, "lat", 0, batch(2, ts=1000))))
        assert result.error_code == 0 and result.log_append_time_ms >= NOW
        part = c.call(1, 12, fetch_body("lat", 0, 0)).responses[0].partitions[0]
        header, _ = rec.decode_batch(part.records)
        assert header.timestamp_type == 1 and header.max_timestamp == result.log_append_time_ms


def test_topic_compression_type_recompresses(one: MockCluster) -> None:
    one.create_topic("gz", 1, config={"compression.type": "gzip"})
    with WireClient(one.brokers[0].port) as c:
        assert partition_result(c.call(0, 9, produce_body(9, "gz", 0, batch(3)))).error_code == 0
        part = c.call(1, 12, fetch_body("gz", 0, 0)).responses[0].partitions[0]
        header, records = rec.decode_batch(part.records)
        assert header.compression == rec.GZIP and [bytes(r.key) for r in records] == [b"k0", b"k1", b"k2"]


def test_fetch_errors(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        c.call(0, 9, produce_body(9, "t", 0, batch(2)))
        out_of_range = c.call(1, 12, fetch_body("t", 0, 5)).responses[0].partitions[0]
        assert out_of_range.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        one.call(one.state.partition("t", 0).bump_leader_epoch)
        fenced = c.call(1, 12, fetch_body("t", 0, 0, leader_epoch=0)).responses[0].partitions[0]
        assert fenced.error_code == ErrorCode.FENCED_LEADER_EPOCH
        ahead = c.call(1, 12, fetch_body("t", 0, 0, leader_epoch=5)).responses[0].partitions[0]
        assert ahead.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_long_poll_is_woken_by_an_append(one: MockCluster) -> None:
    port = one.brokers[0].port

    def later() -> None:
        time.sleep(0.3)
        with WireClient(port) as p:
            p.call(0, 9, produce_body(9, "t", 1, batch(1)))

    with WireClient(port) as c:
        threading.Thread(target=later, daemon=True).start()
        start = time.monotonic()
        part = c.call(1, 12, fetch_body("t", 1, 0, max_wait_ms=10_000)).responses[0].partitions[0]
        waited = time.monotonic() - start
        assert part.high_watermark == 1 and part.records
        assert 0.2 < waited < 5  # woken by the append, long before max_wait_ms


def test_long_poll_without_data_waits_max_wait(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        start = time.monotonic()
        part = c.call(1, 12, fetch_body("t", 1, 0, max_wait_ms=300)).responses[0].partitions[0]
        assert time.monotonic() - start >= 0.25 and not part.records


def test_old_fetch_versions_are_down_converted(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        c.call(0, 9, produce_body(9, "t", 0, batch(3, codec=rec.SNAPPY)))
        for version, magic in ((0, 0), (1, 0), (2, 1), (3, 1)):
            part = c.call(1, version, fetch_body("t", 0, 1)).responses[0].partitions[0]
            messages = rec.decode_message_set(part.records)
            assert {m.magic for m in messages} == {magic}
            assert [m.offset for m in messages if m.offset >= 1] == [1, 2]


def test_incremental_fetch_session_sends_only_changes(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        c.call(0, 9, produce_body(9, "t", 0, batch(2)))
        full = c.call(1, 12, fetch_body("t", 0, 0, session_id=0, session_epoch=0))
        assert full.session_id > 0 and full.responses[0].partitions[0].records
        # nothing changed and nothing named: an empty incremental answer
        idle = c.call(1, 12, fetch_body("t", 0, 2, session_id=full.session_id, session_epoch=1))
        assert idle.error_code == 0
        assert all(not p.records for t in idle.responses for p in t.partitions)
        c.call(0, 9, produce_body(9, "t", 0, batch(1)))
        body = fetch_body("t", 0, 2, session_id=full.session_id, session_epoch=2)
        body.topics = []  # offset unchanged: the session remembers it
        changed = c.call(1, 12, body)
        assert changed.responses[0].partitions[0].high_watermark == 3
        wrong = c.call(1, 12, fetch_body("t", 0, 2, session_id=full.session_id, session_epoch=9))
        assert wrong.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
        missing = c.call(1, 12, fetch_body("t", 0, 2, session_id=424242, session_epoch=1))
        assert missing.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_list_offsets(one: MockCluster) -> None:
    from mockbroker.protocol import api

    m = api.request_module(2)
    with WireClient(one.brokers[0].port) as c:
        c.call(0, 9, produce_body(9, "t", 0, rec.build_batch([(b"a", b"1", None, NOW - 50), (b"b", b"2", None, NOW)])))
        c.call(0, 9, produce_body(9, "t", 0, rec.build_batch([(b"c", b"3", None, NOW - 10)])))

        def ask(ts: int, version: int = 7) -> tuple[int, int]:
            body = m.ListOffsetsRequest(replica_id=-1, topics=[m.ListOffsetsTopic(
                name="t", partitions=[m.ListOffsetsPartition(partition_index=0, timestamp=ts, max_num_offsets=5)])])
            p = c.call(2, version, body).topics[0].partitions[0]
            assert p.error_code == 0
            return p.offset, p.timestamp

        assert ask(-2)[0] == 0 and ask(-1)[0] == 3
        assert ask(-3) == (1, NOW)
        assert ask(NOW - 20) == (1, NOW)
        assert ask(NOW + 1) == (-1, -1)
        body = m.ListOffsetsRequest(replica_id=-1, topics=[m.ListOffsetsTopic(
            name="t", partitions=[m.ListOffsetsPartition(partition_index=0, timestamp=-1, max_num_offsets=5)])])
        assert c.call(2, 0, body).topics[0].partitions[0].old_style_offsets == [3, 0]


def test_topic_ids_in_produce_v13_and_fetch_v13(one: MockCluster) -> None:
    topic_id = one.state.topics["t"].topic_id
    with WireClient(one.brokers[0].port) as c:
        resp = c.call(0, 13, produce_body(13, "", 0, batch(2), topic_id=topic_id))
        assert partition_result(resp).error_code == 0 and resp.responses[0].topic_id == topic_id
        unknown = partition_result(c.call(0, 13, produce_body(13, "", 0, batch(1), topic_id=b"\x09" * 16)))
        assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_ID
        fetched = c.call(1, 16, fetch_body("", 0, 0, topic_id=topic_id))
        assert fetched.responses[0].topic_id == topic_id
        assert fetched.responses[0].partitions[0].high_watermark == 2
        missing = c.call(1, 16, fetch_body("", 0, 0, topic_id=b"\x09" * 16)).responses[0].partitions[0]
        assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_broker_fetch_max_bytes_caps_the_answer_as_in_kafka() -> None:
    """The request asks for 1 MiB; the broker's fetch.max.bytes (1,024) wins, but the first batch
    always comes back whole (as Kafka does), so a consumer never stalls on a large batch."""
    with MockCluster(brokers=1, topics={"t": 1}, config={"fetch.max.bytes": 1024}) as cluster, \
            WireClient(cluster.brokers[0].port) as c:
        for _ in range(4):
            assert partition_result(c.call(0, 9, produce_body(9, "t", 0, batch(30)))).error_code == 0
        assert 1024 // 2 < len(batch(30)) <= 1024  # one batch fits the cap, two do not
        part = c.call(1, 12, fetch_body("t", 0, 0)).responses[0].partitions[0]
        assert part.high_watermark == 120 and len(list(rec.iter_batches(part.records))) == 1
        big = c.call(1, 12, fetch_body("t", 0, 0, max_bytes=100)).responses[0].partitions[0]
        assert len(list(rec.iter_batches(big.records))) == 1  # larger than both limits, still returned


def test_config_changes_apply_to_the_next_produce(one: MockCluster) -> None:
    """Produce keeps what it reads from a topic's configs until they change; a change applies at once."""
    one.create_topic("flip", 1)
    with WireClient(one.brokers[0].port) as c:
        first = partition_result(c.call(0, 9, produce_body(9, "flip", 0, batch(1))))
        assert first.error_code == 0 and first.log_append_time_ms == -1
        one.call(one.state.topics["flip"].config.set, "message.timestamp.type", "LogAppendTime")
        second = partition_result(c.call(0, 9, produce_body(9, "flip", 0, batch(1))))
        assert second.log_append_time_ms >= NOW
        one.call(one.state.config.set, "message.max.bytes", 100)  # the topic falls back to the broker's
        third = partition_result(c.call(0, 9, produce_body(9, "flip", 0, batch(3))))
        assert third.error_code == ErrorCode.MESSAGE_TOO_LARGE
