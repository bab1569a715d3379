"""Where Kafka would roll a partition's active segment (mockbroker.state.segments): on size, on the
time between batch timestamps, with a compacted topic's max.compaction.lag.ms capping segment.ms, and
the broker's log.roll.ms / log.roll.hours under a topic without segment.ms.  Pure unit tests of state."""

from __future__ import annotations

from typing import Any

from mockbroker.state.cluster import ClusterState
from mockbroker.state.inspect import append_records
from mockbroker.state.log import PartitionLog
from mockbroker.state.segments import Segments, roll_settings, segment_ranges


def cluster_with_topic(broker: dict[str, Any] | None = None, /, **config: str) -> tuple[ClusterState, Any]:
    s = ClusterState(broker or {})
    s.add_broker(0, "127.0.0.1", 9092)
    return s, s.create_topic("t", 1, configs=config)


def topic(broker: dict[str, Any] | None = None, /, **config: str) -> Any:
    return cluster_with_topic(broker, **config)[1]


def put(log: PartitionLog, ts: int, value: bytes = b"v") -> None:
    append_records(log, [(b"k", value, [])], ts)


def test_a_segment_rolls_before_a_batch_that_would_take_it_past_segment_bytes() -> None:
    log = topic().partitions[0]
    for i in range(5):
        put(log, 1000 + i)
    size = log.batches[0].size
    assert Segments().update(log, int(size * 2.5), 10**12) == [0, 2, 4]


def test_a_segment_rolls_when_a_batch_is_past_the_roll_time_from_its_first() -> None:
    log = topic().partitions[0]
    for ts in (0, 50, 100, 101, 250):  # 101 - 0 > 100: rolls; 250 - 101 > 100: rolls
        put(log, ts)
    assert Segments().update(log, 2**31, 100) == [0, 3, 4]


def test_later_appends_extend_the_active_segment_and_earlier_cuts_stay() -> None:
    log = topic().partitions[0]
    segments = Segments()
    put(log, 0)
    put(log, 10)
    assert segments.update(log, 2**31, 100) == [0]
    put(log, 200)
    assert segments.update(log, 2**31, 100) == [0, 2]
    assert segments.update(log, 2**31, 1) == [0, 2]  # a config change does not cut what is already decided


def test_batches_without_timestamps_roll_on_size_only() -> None:
    log = topic().partitions[0]
    put(log, -1)
    put(log, 10**9)
    assert Segments().update(log, 2**31, 100) == [0]


def test_roll_settings_follow_kafkas_synonyms() -> None:
    assert roll_settings(topic().config) == (1073741824, 168 * 3_600_000)  # Kafka's defaults
    assert roll_settings(topic({"log.roll.hours": 2}).config)[1] == 7_200_000
    assert roll_settings(topic({"log.roll.ms": 500, "log.roll.hours": 2}).config)[1] == 500
    assert roll_settings(topic({"log.roll.ms": 500}, **{"segment.ms": "300"}).config)[1] == 300
    assert roll_settings(topic({"log.segment.bytes": 2048}).config)[0] == 2048
    compacted = topic(**{"cleanup.policy": "compact", "max.compaction.lag.ms": "60000"})
    assert roll_settings(compacted.config)[1] == 60000  # LogConfig.maxSegmentMs
    assert roll_settings(topic(**{"max.compaction.lag.ms": "60000"}).config)[1] == 168 * 3_600_000


def test_segment_ranges_group_the_batches_still_there() -> None:
    log = topic().partitions[0]
    for i in range(6):
        put(log, i)
    assert segment_ranges(log.batches, [0, 2, 5]) == [(0, 2), (2, 5), (5, 6)]
    assert segment_ranges(log.batches[3:], [0, 2, 5]) == [(0, 2), (2, 3)]  # the first segment's head went
    assert segment_ranges(log.batches[:3], []) == [(0, 1), (1, 2), (2, 3)]  # no segments: a batch each


def test_segments_below_the_log_start_are_forgotten_and_an_emptied_log_starts_afresh() -> None:
    log = topic().partitions[0]
    segments = Segments()
    for ts in (0, 500, 1000):
        put(log, ts)
    assert segments.update(log, 2**31, 100) == [0, 1, 2]
    log.advance_log_start(2)
    assert segments.update(log, 2**31, 100) == [2]
    log.advance_log_start(3)
    assert segments.update(log, 2**31, 100) == []
    put(log, 5000)
    assert segments.update(log, 2**31, 100) == [3]


def test_retention_deletes_whole_segments_oldest_first() -> None:
    from mockbroker.state.retention import apply_retention

    log = topic().partitions[0]
    segments = Segments()
    for ts in (0, 10, 500, 510, 1000):  # segments [0, 1], [2, 3], [4] at a 100 ms roll time
        put(log, ts, b"x" * 100)
    segments.update(log, 2**31, 100)
    size = log.batches[0].size
    # retention.ms by each segment's newest record: at 560, [0, 1] (newest 10) expired, [2, 3] (510) not
    assert apply_retention(log, 560, 100, -1, segments) == 2 and log.log_start_offset == 2
    # retention.bytes: a segment goes while what stays is still at least the limit
    assert apply_retention(log, 560, -1, 2 * size, segments) == 0  # without [2, 3] only one batch would stay
    assert apply_retention(log, 560, -1, size, segments) == 2 and log.log_start_offset == 4
    assert apply_retention(log, 560, -1, 0, segments) == 1  # the active segment too, down to nothing
    assert log.batches == [] and log.log_start_offset == 5


def test_a_broker_roll_time_set_at_run_time_rolls_only_later_appends() -> None:
    """IncrementalAlterConfigs of log.roll.ms: the batches before it keep the roll decided under
    Kafka's 7 days (one segment), the next append rolls at the new value."""
    from mockbroker.state.config_admin import BROKER, SET

    cluster, compacted = cluster_with_topic(**{"cleanup.policy": "compact"})
    log = compacted.partitions[0]
    for ts in (0, 1000, 2000):
        put(log, ts)
    cluster.config_admin.incremental_alter(BROKER, "", [("log.roll.ms", SET, "100")], 0, False)
    assert cluster.log_maintenance.run_cleaner(force=True).removed_records == 0
    put(log, 3000)
    assert cluster.log_maintenance.run_cleaner(force=True).removed_records == 2
    assert [b.base_offset for b in log.batches] == [2, 3]

