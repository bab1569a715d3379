"""Retention and compaction on the cluster state with a manual clock (no sockets): which batches go,
where the log start moves, what a compacted batch keeps, and that tick runs both at their intervals.
Real clients reading the results are in tests/clients/test_configs_clients.py."""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mockbroker import batches
from mockbroker import records as rec
from mockbroker.state.clock import ManualClock
from mockbroker.state.cluster import ClusterState
from mockbroker.state.compaction import compact_log
from mockbroker.state.inspect import append_records, decoded_batches, read_records
from mockbroker.state.log import PartitionLog

# every batch a segment of its own (Kafka rolls a segment before a batch that would take it past
# segment.bytes): all but the newest batch are out of the active segment, for retention and cleaning
ONE_BATCH_SEGMENTS = {"log.segment.bytes": 14}


def state(**config: Any) -> tuple[ClusterState, ManualClock]:
    clock = ManualClock()
    s = ClusterState({**ONE_BATCH_SEGMENTS, **config}, clock)
    s.add_broker(0, "127.0.0.1", 9092)
    return s, clock


def put(log: PartitionLog, clock: ManualClock, *pairs: tuple[bytes | None, bytes | None]) -> int:
    return append_records(log, [(k, v, []) for k, v in pairs], clock.now_ms())


def put_idempotent(log: PartitionLog, clock: ManualClock, pid: int, seq: int, codec: int,
                   *pairs: tuple[bytes, bytes | None]) -> None:
    data = rec.build_batch([(k, v, [], clock.now_ms()) for k, v in pairs], base_offset=log.next_offset,
                           producer_id=pid, producer_epoch=3, base_sequence=seq, compression=codec,
                           partition_leader_epoch=log.leader_epoch)
    log.append(batches.stored_batch(memoryview(data), log.next_offset, log.leader_epoch))


def values(log: PartitionLog) -> list[tuple[int, str | None, str | None]]:
    return [(r["offset"], r["key"], r["value"]) for r in read_records(log, 0, 1000)]


def test_retention_ms_moves_log_start_at_the_check_interval() -> None:
    s, clock = state(**{"log.retention.check.interval.ms": 5000})
    topic = s.create_topic("t", 1, configs={"retention.ms": "10000"})
    log = topic.partitions[0]
    put(log, clock, (b"a", b"1"), (b"b", b"2"))
    clock.advance(6000)
    put(log, clock, (b"c", b"3"))
    clock.advance(6000)  # the first batch is 12 s old, the second 6 s
    put(log, clock, (b"d", b"4"))
    s.tick()
    assert log.log_start_offset == 2 and [v[0] for v in values(log)] == [2, 3]
    clock.advance(11000)
    s.tick()  # everything expired: the log start reaches the high watermark
    assert log.log_start_offset == log.next_offset == 4 and log.batches == []


def test_retention_bytes_keeps_at_least_the_limit() -> None:
    s, clock = state()
    topic = s.create_topic("t", 1)
    log = topic.partitions[0]
    for i in range(5):
        put(log, clock, (b"k", b"x" * 100 + bytes([48 + i])))
    size = log.batches[0].size
    topic.config.set("retention.bytes", str(2 * size + 10))
    assert s.log_maintenance.run_retention() == 2  # three batches left: two would be under the limit
    assert log.log_start_offset == 2 and log.size_bytes == 3 * size
    topic.config.set("cleanup.policy", "compact")  # no delete in the policy: retention leaves it alone
    topic.config.set("retention.bytes", "0")
    assert s.log_maintenance.run_retention() == 0


def test_compaction_keeps_last_value_per_key_and_batch_fields() -> None:
    s, clock = state(**{"log.cleaner.backoff.ms": 1000})
    topic = s.create_topic("t", 1, configs={"cleanup.policy": "compact"})
    log = topic.partitions[0]
    put_idempotent(log, clock, 7, 0, rec.GZIP, (b"a", b"1"), (b"b", b"1"), (b"a", b"2"))
    put(log, clock, (b"b", b"2"), (b"c", b"1"))
    put(log, clock, (b"a", b"3"))  # the last batch is never cleaned (Kafka's active segment)
    before = [(b.base_offset, b.last_offset, b.max_timestamp) for b in log.batches]
    clock.advance(1000)
    s.tick()
    assert values(log) == [(2, "a", "2"), (3, "b", "2"), (4, "c", "1"), (5, "a", "3")]
    assert [(b.base_offset, b.last_offset, b.max_timestamp) for b in log.batches] == before
    first = decoded_batches(log)[0].header
    assert (first.producer_id, first.producer_epoch, first.base_sequence, first.compression) == (7, 3, 0, rec.GZIP)
    assert (first.last_offset_delta, first.record_count) == (2, 1)
    assert log.size_bytes == sum(b.size for b in log.batches)


def test_tombstones_go_after_delete_retention_and_empty_producer_batch_stays() -> None:
    s, clock = state()
    topic = s.create_topic("t", 1, configs={"cleanup.policy": "compact,delete", "delete.retention.ms": "5000"})
    log = topic.partitions[0]
    put_idempotent(log, clock, 9, 0, rec.NONE, (b"p", b"1"))  # producer 9's only batch
    put(log, clock, (b"p", b"2"), (b"q", b"1"))
    put(log, clock, (b"q", None))  # tombstone for q
    put(log, clock, (b"z", b"1"))
    res = s.log_maintenance.run_cleaner()
    assert res.removed_records == 2 and values(log) == [(1, "p", "2"), (3, "q", None), (4, "z", "1")]
    kept = decoded_batches(log)[0].header
    assert (kept.base_offset, kept.record_count, kept.producer_id, kept.base_sequence) == (0, 0, 9, 0)
    clock.advance(5001)
    s.tick()
    assert values(log) == [(1, "p", "2"), (4, "z", "1")]
    assert [b.base_offset for b in log.batches] == [0, 1, 4]  # the tombstone's batch had no producer: gone


def test_compaction_respects_open_transactions_aborts_and_lag() -> None:
    s, clock = state()
    topic = s.create_topic("t", 1, configs={"cleanup.policy": "compact"})
    log = topic.partitions[0]
    data = rec.build_batch([(b"a", b"aborted", [], clock.now_ms())], base_offset=0, producer_id=5, producer_epoch=0,
                           base_sequence=0, transactional=True)
    log.producers.record_append(5, 0, 0, 0, 0, 0, clock.now_ms(), clock.now_ms(), True)
    log.append(batches.stored_batch(memoryview(data), 0, 0))
    log.append_marker(5, 0, False, 0, clock.now_ms())
    put(log, clock, (b"a", b"1"))
    put(log, clock, (b"a", b"2"))
    res = compact_log(log, clock.now_ms(), 86400000, min_lag_ms=60000)
    assert res.removed_records == 0 and res.retry_at_ms == clock.now_ms() + 60000
    compact_log(log, clock.now_ms(), 86400000)
    assert values(log) == [(2, "a", "1"), (3, "a", "2")]  # the last batch is not in the key map
    assert any(b.is_control for b in log.batches)  # the marker stays


def test_mock_cluster_runs_passes_on_demand() -> None:
    from mockbroker.cluster import MockCluster

    with MockCluster(config={"log.retention.check.interval.ms": 3_600_000, "log.cleaner.backoff.ms": 3_600_000,
                             **ONE_BATCH_SEGMENTS}) as c:
        compacted = c.create_topic("c", 1, config={"cleanup.policy": "compact"})
        timed = c.create_topic("r", 1, config={"retention.ms": "1000"})
        now = c.state.clock.now_ms()
        for key in (b"a", b"a", b"b"):
            c.call(append_records, compacted.partitions[0], [(key, b"v", [])], now)
        c.call(append_records, timed.partitions[0], [(b"k", b"v", [])], now - 5000)
        assert c.run_log_cleaner() == 1 and c.run_retention() == 1
        assert timed.partitions[0].log_start_offset == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from([b"a", b"b", b"c", b"d"]),
                                   st.one_of(st.none(), st.binary(min_size=0, max_size=8))),
                         min_size=1, max_size=4), min_size=1, max_size=8),
       st.sampled_from([rec.NONE, rec.GZIP, rec.LZ4, rec.ZSTD, rec.SNAPPY]))
def test_compaction_matches_a_last_value_per_key_model(batches_in: list[list[tuple[bytes, bytes | None]]],
                                                       codec: int) -> None:
    clock = ManualClock()
    log = PartitionLog("p", 0, 0, [0])
    for i, items in enumerate(batches_in):
        put_idempotent(log, clock, 1, sum(len(b) for b in batches_in[:i]), codec, *items)
    before = [(b.base_offset, b.last_offset) for b in log.batches]
    compact_log(log, clock.now_ms() + 10, delete_retention_ms=0)
    cleanable = [(log_offset, k, v) for log_offset, (k, v) in enumerate(x for b in batches_in[:-1] for x in b)]
    latest = {k: o for o, k, _ in cleanable}
    expected = [(o, k.decode(), None if v is None else v.decode("latin-1"))
                for o, k, v in cleanable if latest[k] == o and v is not None]
    tail_start = before[-1][0]
    expected += [(tail_start + i, k.decode(), None if v is None else v.decode("latin-1"))
                 for i, (k, v) in enumerate(batches_in[-1])]
    got = [(r["offset"], r["key"], None if r["value_b64"] is None
            else base64.b64decode(r["value_b64"]).decode("latin-1")) for r in read_records(log, 0, 1000)]
    assert got == expected
    kept = [(b.base_offset, b.last_offset) for b in log.batches]
    assert set(kept) <= set(before) and kept[-1] == before[-1]
    for b in decoded_batches(log):  # every batch decodes (CRC checked) and keeps producer fields
        assert (b.header.producer_id, b.header.producer_epoch) == (1, 3)
