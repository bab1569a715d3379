"""When the cleaner cleans a compacted log, as Kafka's LogCleanerManager chooses one: its dirty bytes
(appended since the last cleaning) above ``min.cleanable.dirty.ratio`` (broker
``log.cleaner.min.cleanable.ratio``, 0.5) of its cleanable bytes, or a dirty batch older than
``max.compaction.lag.ms``, or an expired tombstone; ``MockCluster.run_log_cleaner`` cleans whatever the
ratio.  State-level passes with a manual clock, then what a real consumer reads over a socket."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import KafkaError as ClientError

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state.clock import ManualClock
from mockbroker.state.cluster import ClusterState
from mockbroker.state.inspect import append_records, read_records
from mockbroker.state.log import PartitionLog

BIG = b"v" * 400


def state(**config: Any) -> tuple[ClusterState, ManualClock]:
    clock = ManualClock()
    # every batch a segment of its own (log.segment.bytes below any batch): all but the newest may be cleaned
    s = ClusterState({"log.cleaner.backoff.ms": 1000, "log.segment.bytes": 14, **config}, clock)
    s.add_broker(0, "127.0.0.1", 9092)
    return s, clock


def put(log: PartitionLog, clock: ManualClock, *pairs: tuple[bytes, bytes | None]) -> None:
    append_records(log, [(k, v, []) for k, v in pairs], clock.now_ms())


def keys(log: PartitionLog) -> list[tuple[int, str]]:
    return [(r["offset"], r["key"]) for r in read_records(log, 0, 1000)]


def cleaned_once(s: ClusterState, clock: Any, **topic_config: str) -> PartitionLog:
    """A compacted log cleaned once (everything dirty: ratio 1), its clean part four big records
    (offsets 4-7), then one small update of "a" (offset 9) behind the never-cleaned "end" (8), and a
    new last batch (10): dirty bytes now well under half of the cleanable ones."""
    log = s.create_topic("c", 1, configs={"cleanup.policy": "compact", **topic_config}).partitions[0]
    put(log, clock, *[(k, b"old") for k in (b"a", b"b", b"c", b"d")])
    put(log, clock, *[(k, BIG) for k in (b"a", b"b", b"c", b"d")])
    put(log, clock, (b"end", b"1"))
    assert s.log_maintenance.run_cleaner().removed_records == 4  # the first pass: all dirty
    put(log, clock, (b"a", b"new"))
    put(log, clock, (b"tail", b"1"))
    if isinstance(clock, ManualClock):
        clock.advance(1000)
    return log


def test_a_log_under_the_dirty_ratio_is_left_until_enough_is_dirty() -> None:
    s, clock = state()
    log = cleaned_once(s, clock)
    s.tick()
    assert (4, "a") in keys(log)  # superseded by offset 9, but only ~10% of the log is dirty
    for k in (b"b", b"c", b"d"):  # three bigger updates (11-13): the dirty part grows past half
        put(log, clock, (k, BIG * 2))
    put(log, clock, (b"last", b"1"))
    clock.advance(1000)
    s.tick()
    assert [o for o, _k in keys(log)] == [8, 9, 10, 11, 12, 13, 14]


@pytest.mark.parametrize("where", ["topic", "broker"])
def test_a_lower_ratio_cleans_sooner(where: str) -> None:
    if where == "topic":
        s, clock = state()
        log = cleaned_once(s, clock, **{"min.cleanable.dirty.ratio": "0.05"})
    else:
        s, clock = state(**{"log.cleaner.min.cleanable.ratio": "0.05"})
        log = cleaned_once(s, clock)
    s.tick()
    assert (4, "a") not in keys(log) and (9, "a") in keys(log)


def test_max_compaction_lag_cleans_a_log_under_the_ratio() -> None:
    s, clock = state()
    log = cleaned_once(s, clock, **{"max.compaction.lag.ms": "60000"})
    s.tick()
    assert (4, "a") in keys(log)  # "end" (the first dirty batch) is 1 s old: not yet
    clock.advance(59_001)  # now 60.001 s
    s.tick()
    assert (4, "a") not in keys(log)


def test_run_log_cleaner_cleans_whatever_the_ratio_and_a_consumer_sees_it() -> None:
    with MockCluster(config={"log.cleaner.backoff.ms": 3_600_000, "log.segment.bytes": 14}) as cluster:
        log = cluster.call(cleaned_once, cluster.state, cluster.state.clock)  # (the cluster's own clock)
        assert cluster.call(cluster.state.log_maintenance.run_cleaner).removed_records == 0  # as the tick
        assert consumed(cluster)[:2] == [(4, b"a"), (5, b"b")]
        assert cluster.run_log_cleaner() == 1
        assert consumed(cluster)[:2] == [(5, b"b"), (6, b"c")]
        assert (4, "a") not in cluster.call(keys, log)


def consumed(cluster: MockCluster) -> list[tuple[int, bytes]]:
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": str(uuid.uuid4()),
                  "auto.offset.reset": "earliest", "enable.partition.eof": True})
    c.subscribe(["c"])
    out: list[tuple[int, bytes]] = []
    try:
        for _ in range(60):
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                assert m.error().code() == ClientError._PARTITION_EOF, m.error()
                break
            out.append((m.offset(), m.key()))
    finally:
        c.close()
    return out


@pytest.mark.parametrize(("name", "value"), [("min.cleanable.dirty.ratio", "half"),
                                             ("max.compaction.lag.ms", "soon")])
def test_a_bad_value_is_one_clear_error(name: str, value: str) -> None:
    s, _clock = state()
    with pytest.raises(KafkaError, match=name) as caught:
        s.create_topic("c", 1, configs={name: value})
    assert caught.value.code == ErrorCode.INVALID_CONFIG
