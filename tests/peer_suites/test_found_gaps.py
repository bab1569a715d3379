"""mockbroker bugs that kafka-python's integration suite (test_kafka_python_suite.py) found, pinned at the wire.

test_kafka_consumer_max_bytes_simple: with ``fetch_max_bytes=300`` over two partitions, Kafka answers the
session's partitions round robin (a partition that answered records goes to the end of the incremental fetch
session's list), so the second partition is served on the next fetch; mockbroker served the first partition
until it ran dry.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.protocol import api
from tests.broker.wire import WireClient, produce_body


@pytest.fixture
def two() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, topics={"t": 2}) as c:
        yield c


def _fetch(offsets: dict[int, int], session_id: int, epoch: int) -> Any:
    """Fetch v12 of topic t with a 1-byte response budget (one batch per answer), naming ``offsets``."""
    m = api.request_module(1)
    parts = [m.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20, current_leader_epoch=-1)
             for p, o in offsets.items()]
    return m.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1, session_id=session_id,
                          session_epoch=epoch, topics=[m.FetchTopic(topic="t", partitions=parts)] if parts else [])


def _with_records(resp: Any) -> list[int]:
    assert resp.error_code == 0
    return [p.partition_index for t in resp.responses for p in t.partitions if p.records]


def test_an_incremental_session_serves_its_partitions_round_robin(two: MockCluster) -> None:
    now = int(time.time() * 1000)
    with WireClient(two.brokers[0].port) as c:
        for partition in (0, 1):
            for i in range(3):  # three one-record batches each
                batch = rec.build_batch([(None, f"v{i}".encode(), [], now)])
                assert c.call(0, 9, produce_body(9, "t", partition, batch)).responses[0] \
                    .partition_responses[0].error_code == 0
        full = c.call(1, 12, _fetch({0: 0, 1: 0}, 0, 0))
        assert full.session_id > 0
        assert _with_records(full) == [0]  # the budget: the first partition's first batch only
        # the client moved partition 0 on: partition 0 goes to the end, partition 1 answers
        assert _with_records(c.call(1, 12, _fetch({0: 1}, full.session_id, 1))) == [1]
        assert _with_records(c.call(1, 12, _fetch({1: 1}, full.session_id, 2))) == [0]
        assert _with_records(c.call(1, 12, _fetch({0: 2}, full.session_id, 3))) == [1]


def test_a_partition_named_again_at_the_same_offset_keeps_its_place(two: MockCluster) -> None:
    now = int(time.time() * 1000)
    with WireClient(two.brokers[0].port) as c:
        for partition in (0, 1):
            c.call(0, 9, produce_body(9, "t", partition, rec.build_batch([(None, b"v", [], now)])))
        full = c.call(1, 12, _fetch({0: 0, 1: 0}, 0, 0))
        assert _with_records(full) == [0]
        # named again without moving (a client re-sending its position): still first, still answered first
        assert _with_records(c.call(1, 12, _fetch({0: 0}, full.session_id, 1))) == [0]


def test_broker_configs_list_advertised_listeners() -> None:
    """test_describe_configs_broker_resource_returns_configs: Kafka lists advertised.listeners among a
    broker's configs (static, read-only, a LIST); mockbroker left it out."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    def advertised(cluster: MockCluster) -> dict[str, Any]:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            configs = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, 0)], config_filter="all")
        finally:
            admin.close()
        return configs["broker"]["0"]["advertised.listeners"]

    with MockCluster(listeners="PLAINTEXT://127.0.0.1:0", advertised_listeners="PLAINTEXT://127.0.0.1:0") as c:
        entry = advertised(c)
        assert (entry["value"], entry["config_source"]) == ("PLAINTEXT://127.0.0.1:0", "STATIC_BROKER_CONFIG")
        assert entry["read_only"] is True and entry["config_type"] == "LIST"
    with MockCluster() as c:  # not set: Kafka's default, null
        entry = advertised(c)
        assert (entry["value"], entry["config_source"]) == (None, "DEFAULT_CONFIG")
