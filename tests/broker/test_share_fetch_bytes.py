"""ShareFetch's size limits over a real socket, as Kafka reads the log for a share fetch: MaxBytes (capped by
the broker's fetch.max.bytes) bounds the whole batches read from each share-partition's next fetch offset,
split evenly between the partitions that can acquire (PartitionMaxBytesStrategy UNIFORM); the first batch of
the first partition with data comes whole even when larger (minOneMessage, KAFKA-18936); records are
acquired only from what was read; MaxBytes 0 answers those partitions UNKNOWN_SERVER_ERROR, as Kafka's
strategy refuses a request max bytes that is not positive."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from tests.broker.wire import WireClient

FETCH = api.request_module(78)


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(topics={"jobs": 2}) as c:
        configs = c.state.config_admin.group_configs
        c.call(lambda: configs.replace("g", {"share.auto.offset.reset": "earliest"}))
        yield c


def port(cluster: MockCluster) -> int:
    return int(cluster.bootstrap_servers.rsplit(":", 1)[1])


def produce(cluster: MockCluster, sizes: list[int], partition: int = 0) -> None:
    """One record a batch (flushed one by one), each value ``size`` bytes."""
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    for size in sizes:
        p.produce("jobs", b"x" * size, partition=partition)
        assert p.flush(10) == 0


def batch_sizes(cluster: MockCluster, partition: int = 0) -> list[int]:
    return cluster.call(lambda: [b.size for b in cluster.state.topics["jobs"].partitions[partition].batches])


def fetch(w: WireClient, cluster: MockCluster, epoch: int, max_bytes: int, partitions: tuple[int, ...] = (0,),
          max_records: int = 500) -> Any:
    tid = bytes(cluster.state.topics["jobs"].topic_id)
    return w.call(78, 1, FETCH.ShareFetchRequest(
        group_id="g", member_id="m1", share_session_epoch=epoch, max_wait_ms=0, min_bytes=1, max_bytes=max_bytes,
        max_records=max_records, batch_size=500, forgotten_topics_data=[],
        topics=[FETCH.FetchTopic(topic_id=tid, partitions=[
            FETCH.FetchPartition(partition_index=i, acknowledgement_batches=[]) for i in partitions])]))


def acquired(answer: Any, partition: int = 0) -> list[tuple[int, int]]:
    return [(r.first_offset, r.last_offset) for t in answer.responses for p in t.partitions
            if p.partition_index == partition for r in p.acquired_records]


def record_bytes(answer: Any) -> int:
    return sum(len(p.records or b"") for t in answer.responses for p in t.partitions)


def test_max_bytes_stops_before_the_batch_that_would_pass_it(cluster: MockCluster) -> None:
    produce(cluster, [1000] * 10)
    size = batch_sizes(cluster)[0]
    with WireClient(port(cluster)) as w:
        first = fetch(w, cluster, 0, size + size // 2)  # room for one batch and half of the next
        assert acquired(first) == [(0, 0)] and record_bytes(first) == size
        assert acquired(fetch(w, cluster, 1, 3 * size)) == [(1, 3)]  # the next read starts past the acquired
        assert acquired(fetch(w, cluster, 2, 1 << 20)) == [(4, 9)]


def test_a_first_batch_larger_than_max_bytes_comes_whole(cluster: MockCluster) -> None:
    produce(cluster, [5000, 100])
    big, small = batch_sizes(cluster)
    with WireClient(port(cluster)) as w:
        answer = fetch(w, cluster, 0, 1000)  # Kafka reads at least the first batch (minOneMessage)
        assert acquired(answer) == [(0, 0)] and record_bytes(answer) == big
        assert acquired(fetch(w, cluster, 1, 1000)) == [(1, 1)] and small < 1000


def test_max_bytes_is_split_evenly_between_the_partitions(cluster: MockCluster) -> None:
    for partition in (0, 1):
        produce(cluster, [1000] * 3, partition)
    size = batch_sizes(cluster)[0]
    with WireClient(port(cluster)) as w:
        answer = fetch(w, cluster, 0, 3 * size, (0, 1))  # 1.5 batches a partition
        assert (acquired(answer, 0), acquired(answer, 1)) == ([(0, 0)], [(0, 0)])


def test_the_broker_fetch_max_bytes_caps_the_request(cluster: MockCluster) -> None:
    produce(cluster, [1000] * 4)
    size = batch_sizes(cluster)[0]
    cluster.call(lambda: cluster.state.config.values.update({"fetch.max.bytes": 2 * size}))
    with WireClient(port(cluster)) as w:
        assert acquired(fetch(w, cluster, 0, 1 << 20)) == [(0, 1)]


def test_max_bytes_0_answers_unknown_server_error_and_acquires_nothing(cluster: MockCluster) -> None:
    produce(cluster, [100] * 3)
    with WireClient(port(cluster)) as w:
        answer = fetch(w, cluster, 0, 0)
        part = answer.responses[0].partitions[0]
        assert answer.error_code == 0 and acquired(answer) == []
        assert (part.error_code, part.error_message) == (ErrorCode.UNKNOWN_SERVER_ERROR,
                                                         "Request max bytes must be greater than 0")
        assert acquired(fetch(w, cluster, 1, 1 << 20)) == [(0, 2)]  # nothing was taken by the refused fetch


def test_the_session_epoch_turns_which_partition_reads_first(cluster: MockCluster) -> None:
    for partition in (0, 1):
        produce(cluster, [1000] * 2, partition)
    size = batch_sizes(cluster)[0]
    with WireClient(port(cluster)) as w:  # room for one batch: only the partition read first gets one
        first = fetch(w, cluster, 0, size, (0, 1))
        assert (acquired(first, 0), acquired(first, 1)) == ([(0, 0)], [])
        second = fetch(w, cluster, 1, size)  # epoch 1 of two partitions: partition 1 first (ROUND_ROBIN)
        assert (acquired(second, 0), acquired(second, 1)) == ([], [(0, 0)])


def test_a_read_of_only_a_marker_answers_at_once(cluster: MockCluster) -> None:
    txn = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "t1"})
    txn.init_transactions(10)
    txn.begin_transaction()
    txn.produce("jobs", b"in-txn", partition=0)
    txn.commit_transaction(10)  # log: the record (0), its commit marker (1)
    produce(cluster, [10])  # then a record (2)
    with WireClient(port(cluster)) as w:
        assert acquired(fetch(w, cluster, 0, 1)) == [(0, 0)]  # (the first batch, whole)
        started = time.monotonic()
        marker_only = w.call(78, 1, FETCH.ShareFetchRequest(  # 1 byte from offset 1: the marker alone
            group_id="g", member_id="m1", share_session_epoch=1, max_wait_ms=5000, min_bytes=1, max_bytes=1,
            max_records=500, batch_size=500, forgotten_topics_data=[], topics=[]))
        assert acquired(marker_only) == [] and time.monotonic() - started < 2  # Kafka: MinBytes of log read
        assert acquired(fetch(w, cluster, 2, 1)) == [(2, 2)]
