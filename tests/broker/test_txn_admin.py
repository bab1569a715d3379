"""DescribeProducers, DescribeTransactions and ListTransactions over the wire, with transactions made by
a real confluent-kafka producer (the installed Python admin clients do not offer these three APIs)."""

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


@pytest.fixture
def open_txn() -> Iterator[tuple[MockCluster, Producer]]:
    """A 3-broker cluster with one open transaction ("open-1") over t-0 and t-2 and one committed ("done-1")."""
    with MockCluster(brokers=3, topics={"t": 3}) as cluster:
        done = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "done-1"})
        done.init_transactions(10)
        done.begin_transaction()
        done.produce("t", b"x", partition=1)
        done.commit_transaction(10)
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "open-1"})
        p.init_transactions(10)
        p.begin_transaction()
        for partition in (0, 2, 0):
            p.produce("t", b"y", partition=partition)
        assert p.flush(10) == 0
        yield cluster, p
        p.abort_transaction(10)


def client(cluster: MockCluster, node_id: int) -> WireClient:
    return WireClient(cluster.brokers[node_id].port)


def coordinator(cluster: MockCluster, txn_id: str) -> int:
    return cluster.state.coordinator_for(txn_id).node_id


def test_describe_producers_on_the_leader(open_txn: tuple[MockCluster, Producer]) -> None:
    cluster, _ = open_txn
    log = cluster.state.topics["t"].partitions[0]
    m = api.request_module(61)
    body = m.DescribeProducersRequest(topics=[m.TopicRequest(name="t", partition_indexes=[0]),
                                              m.TopicRequest(name="nope", partition_indexes=[0])])
    with client(cluster, log.leader) as c:
        resp = c.call(61, 0, body)
    part = resp.topics[0].partitions[0]
    assert part.error_code == 0
    [state] = part.active_producers
    txn = cluster.state.transactions.transactions["open-1"]
    assert (state.producer_id, state.producer_epoch) == (txn.producer_id, txn.epoch)
    assert state.last_sequence == 1 and state.current_txn_start_offset == 0 and state.last_timestamp > 0
    assert resp.topics[1].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    other = next(b for b in cluster.state.brokers if b != log.leader)
    with client(cluster, other) as c:
        assert c.call(61, 0, body).topics[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_describe_transactions(open_txn: tuple[MockCluster, Producer]) -> None:
    cluster, _ = open_txn
    m = api.request_module(65)
    node = coordinator(cluster, "open-1")
    with client(cluster, node) as c:
        states = c.call(65, 0, m.DescribeTransactionsRequest(transactional_ids=["open-1", "missing"]))
    opened, missing = states.transaction_states
    assert (opened.error_code, opened.transaction_state) == (0, "Ongoing")
    assert [(t.topic, sorted(t.partitions)) for t in opened.topics] == [("t", [0, 2])]
    assert opened.transaction_start_time_ms > 0 and opened.transaction_timeout_ms == 60000
    wrong_node = next(b for b in cluster.state.brokers if b != coordinator(cluster, "missing"))
    expected_missing = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND if node == coordinator(cluster, "missing") \
        else ErrorCode.NOT_COORDINATOR
    assert missing.error_code == expected_missing
    with client(cluster, wrong_node) as c:
        other = c.call(65, 0, m.DescribeTransactionsRequest(transactional_ids=["missing"]))
    assert other.transaction_states[0].error_code == ErrorCode.NOT_COORDINATOR


def list_all(cluster: MockCluster, version: int = 2, **filters: Any) -> tuple[int, list[str], dict[str, str]]:
    """ListTransactions asked of every broker: (error, unknown filters, {id: state}) merged."""
    m = api.request_module(66)
    found: dict[str, str] = {}
    unknown: list[str] = []
    error = 0
    for node in cluster.state.brokers:
        body = m.ListTransactionsRequest(state_filters=filters.get("states", []),
                                         producer_id_filters=filters.get("producers", []),
                                         duration_filter=filters.get("duration", -1),
                                         transactional_id_pattern=filters.get("pattern"))
        with client(cluster, node) as c:
            resp = c.call(66, version, body)
        error = error or resp.error_code
        unknown = resp.unknown_state_filters
        found.update({t.transactional_id: t.transaction_state for t in resp.transaction_states})
    return error, unknown, found


def test_list_transactions_filters(open_txn: tuple[MockCluster, Producer]) -> None:
    cluster, _ = open_txn
    assert list_all(cluster) == (0, [], {"done-1": "CompleteCommit", "open-1": "Ongoing"})
    assert list_all(cluster, states=["Ongoing", "Bogus"]) == (0, ["Bogus"], {"open-1": "Ongoing"})
    pid = cluster.state.transactions.transactions["done-1"].producer_id
    assert list_all(cluster, producers=[pid])[2] == {"done-1": "CompleteCommit"}
    assert list_all(cluster, pattern="open-.*")[2] == {"open-1": "Ongoing"}
    assert list_all(cluster, pattern="open")[2] == {}  # the whole id must match
    assert list_all(cluster, pattern="(")[0] == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert list_all(cluster, version=1, duration=60_000)[2] == {}
    time.sleep(0.05)
    assert list_all(cluster, version=1, duration=10)[2] == {"open-1": "Ongoing"}
