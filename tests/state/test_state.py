"""Broker state on its own: topics, placement, partition logs, configs, fetch sessions."""

from __future__ import annotations

import pytest

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state.cluster import ClusterState
from mockbroker.state.config import BrokerConfig, TopicConfig
from mockbroker.state.fetch_sessions import FetchSessionCache
from mockbroker.state.log import PartitionLog, StoredBatch


def cluster(brokers: int = 3, **config: object) -> ClusterState:
    state = ClusterState(config)
    for i in range(brokers):
        state.add_broker(i, "127.0.0.1", 9092 + i)
    return state


def stored(base: int, count: int, size: int = 100, ts: int = 0) -> StoredBatch:
    return StoredBatch(base, base + count - 1, ts, size, [b"x" * size])


def test_topic_creation_rules() -> None:
    state = cluster()
    topic = state.create_topic("orders", 6, 2)
    assert len(topic.partitions) == 6 and {p.leader for p in topic.partitions} == {0, 1, 2}
    assert all(len(set(p.replicas)) == 2 for p in topic.partitions)
    for name, parts, rf, code in [
        ("orders", 1, 1, ErrorCode.TOPIC_ALREADY_EXISTS),
        ("bad name", 1, 1, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("x" * 250, 1, 1, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("zero", 0, 1, ErrorCode.INVALID_PARTITIONS),
        ("rf", 1, 4, ErrorCode.INVALID_REPLICATION_FACTOR),
    ]:
        with pytest.raises(KafkaError) as err:
            state.create_topic(name, parts, rf)
        assert err.value.code == code
    assert state.create_topic("dflt").partitions and len(state.topics["dflt"].partitions) == 1


def test_auto_create_follows_config() -> None:
    assert cluster().topic_or_autocreate("new").name == "new"
    off = cluster(**{"auto.create.topics.enable": "false"})
    with pytest.raises(KafkaError) as err:
        off.topic_or_autocreate("new")
    assert err.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_leader_check() -> None:
    state = cluster()
    state.create_topic("t", 3)
    log = state.partition("t", 0)
    with pytest.raises(KafkaError) as err:
        state.leader_partition("t", 0, (log.leader + 1) % 3)
    assert err.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert state.leader_partition("t", 0, log.leader) is log


def test_log_reads_whole_batches_within_limits() -> None:
    log = PartitionLog("t", 0, 0, [0])
    log.append(stored(0, 5, 100))
    log.append(stored(5, 5, 100))
    log.append(stored(10, 1, 500))
    assert log.high_watermark == 11
    assert log.read(7, 1000).batches[0].base_offset == 5  # the batch holding offset 7
    assert len(log.read(0, 150).batches) == 1
    assert len(log.read(10, 10).batches) == 1  # the first batch even when larger than the limit
    assert log.read(10, 10, first_always=False).batches == []
    assert log.read(11, 100).batches == []
    with pytest.raises(KafkaError) as err:
        log.read(12, 100)
    assert err.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    with pytest.raises(ValueError):
        log.append(stored(3, 1))


def test_leader_epochs() -> None:
    log = PartitionLog("t", 0, 0, [0, 1])
    log.append(stored(0, 3))
    log.bump_leader_epoch(new_leader=1)
    log.append(stored(3, 2))
    assert (log.leader, log.leader_epoch) == (1, 1)
    assert log.end_offset_for_epoch(0) == (0, 3)
    assert log.end_offset_for_epoch(1) == (1, 5)
    assert log.end_offset_for_epoch(2) == (-1, -1)


def test_configs() -> None:
    broker = BrokerConfig({"num.partitions": "3", "log.message.timestamp.type": "LogAppendTime"})
    assert broker["num.partitions"] == 3
    topic = TopicConfig(broker, {"max.message.bytes": 10})
    assert topic["max.message.bytes"] == 10 and topic["message.timestamp.type"] == "LogAppendTime"
    for bad in ({"num.partitions": "x"}, {"compression.type": "brotli"}, {"auto.create.topics.enable": "maybe"}):
        with pytest.raises(KafkaError) as err:
            BrokerConfig(bad)
        assert err.value.code == ErrorCode.INVALID_CONFIG


def test_fetch_session_cache() -> None:
    cache = FetchSessionCache(slots=1)
    session = cache.open()
    assert session is not None and cache.open() is None  # full: the next fetch is sessionless
    assert cache.resume(session.session_id, 1) is session
    with pytest.raises(KafkaError) as err:
        cache.resume(session.session_id, 1)
    assert err.value.code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    cache.close(session.session_id)
    with pytest.raises(KafkaError) as err:
        cache.resume(session.session_id, 2)
    assert err.value.code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_advance_log_start_drops_whole_batches_below_and_never_goes_back() -> None:
    log = PartitionLog("t", 0, 0, [0])
    for i in range(5):
        log.append(StoredBatch(i * 10, i * 10 + 9, 0, 100, (b"x" * 100,)))
    assert log.advance_log_start(25) == 25
    assert [b.base_offset for b in log.batches] == [20, 30, 40] and log.size_bytes == 300
    assert log.advance_log_start(5) == 25  # never backwards
    with pytest.raises(KafkaError):
        log.read(24, 1000)
    assert log.read(25, 1000).batches[0].base_offset == 20  # the batch holding the new start is served
    assert log.advance_log_start(999) == 50  # capped at the high watermark
    assert log.batches == [] and log.size_bytes == 0 and log.read(50, 1000).batches == []


def test_broker_describe_gives_each_broker_its_own_log_dirs() -> None:
    state = ClusterState()
    for node in (0, 1):
        state.add_broker(node, "127.0.0.1", 9092 + node)
    for node in (0, 1):
        (entry,) = state.config_admin.broker_entries(str(node), node, ["log.dirs"])
        assert entry.value == f"/var/lib/mockbroker/broker-{node}"
        assert state.log_dirs.dirs(node) == [entry.value]  # DescribeConfigs and DescribeLogDirs agree
