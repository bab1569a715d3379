"""Leaderless partitions and unclean elections, over a raw socket (Metadata, Produce, ElectLeaders):
with ``mock.leader.failover.to.any.broker`` false, a partition whose last in-sync replica goes down
stays leaderless (leader -1, LEADER_NOT_AVAILABLE) as in Kafka; its last in-sync replica coming back
leads again (a clean election); another replica coming back leads only when
``unclean.leader.election.enable`` is on (topic, else broker), or after an UNCLEAN ElectLeaders."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.protocol import api

from .wire import WireClient, produce_body

EL, MD = api.request_module(43), api.request_module(3)
KAFKA_RULE = {"mock.leader.failover.to.any.broker": False}


def cluster_with(config: dict[str, Any], topic_config: dict[str, str] | None = None) -> MockCluster:
    cluster = MockCluster(brokers=3, config={**KAFKA_RULE, **config})
    cluster.start_background()
    cluster.create_topic("r", 1, 2, topic_config)
    return cluster


@pytest.fixture
def kafka_rule() -> Iterator[MockCluster]:
    cluster = cluster_with({})
    yield cluster
    cluster.stop_background()


def replicas(cluster: MockCluster) -> list[int]:
    return list(cluster.state.topics["r"].partitions[0].replicas)


def metadata(cluster: MockCluster, node: int) -> Any:
    with WireClient(cluster.server(node).port) as c:
        resp = c.call(3, 12, MD.MetadataRequest(topics=[MD.MetadataRequestTopic(name="r")]))
    return resp.topics[0].partitions[0]


def elect(cluster: MockCluster, node: int, kind: int) -> int:
    with WireClient(cluster.server(node).port) as c:
        resp = c.call(43, 2, EL.ElectLeadersRequest(election_type=kind, timeout_ms=1000,
                                                    topic_partitions=[EL.TopicPartitions(topic="r", partitions=[0])]))
    return int(resp.replica_election_results[0].partition_result[0].error_code)


def leaderless(cluster: MockCluster) -> tuple[int, int]:
    """Take the follower down, then the leader: the partition's last in-sync replica was the leader.
    Returns (last in-sync replica, the other replica)."""
    leader, follower = replicas(cluster)
    cluster.broker_down(follower)
    assert cluster.state.topics["r"].partitions[0].leader == leader  # the ISR shrinks to the leader
    cluster.broker_down(leader)
    return leader, follower


def test_the_last_in_sync_replica_going_down_leaves_the_partition_leaderless(kafka_rule: MockCluster) -> None:
    last, other = leaderless(kafka_rule)
    survivor = next(b for b in (0, 1, 2) if b not in (last, other))
    part = metadata(kafka_rule, survivor)
    assert (part.error_code, part.leader_id, list(part.isr_nodes)) == (ErrorCode.LEADER_NOT_AVAILABLE, -1, [])
    assert sorted(part.offline_replicas) == sorted([last, other])
    with WireClient(kafka_rule.server(survivor).port) as c:
        data = rec.build_batch([(b"k", b"v", [], int(time.time() * 1000))])
        got = c.call(0, 9, produce_body(9, "r", 0, data)).responses[0].partition_responses[0]
    assert got.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    # nothing live to elect
    assert elect(kafka_rule, survivor, 1) == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE


def test_an_out_of_sync_replica_coming_back_does_not_lead_unless_elected_uncleanly(kafka_rule: MockCluster) -> None:
    last, other = leaderless(kafka_rule)
    kafka_rule.broker_up(other)
    part = metadata(kafka_rule, other)
    assert (part.error_code, part.leader_id) == (ErrorCode.LEADER_NOT_AVAILABLE, -1)
    # the preferred replica is down (the last in sync) or out of sync (the one back): not available
    assert elect(kafka_rule, other, 0) == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    epoch = part.leader_epoch
    assert elect(kafka_rule, other, 1) == 0  # UNCLEAN: the admin's explicit election, whatever the config
    part = metadata(kafka_rule, other)
    assert (part.error_code, part.leader_id, part.leader_epoch) == (0, other, epoch + 1)
    assert elect(kafka_rule, other, 1) == ErrorCode.ELECTION_NOT_NEEDED
    kafka_rule.broker_up(last)  # back, and led by the other: nothing changes
    assert metadata(kafka_rule, last).leader_id == other


def test_the_last_in_sync_replica_coming_back_leads_again(kafka_rule: MockCluster) -> None:
    last, other = leaderless(kafka_rule)
    kafka_rule.broker_up(other)
    kafka_rule.broker_up(last)
    part = metadata(kafka_rule, last)
    assert (part.error_code, part.leader_id) == (0, last)
    assert sorted(part.isr_nodes) == sorted([last, other])


@pytest.mark.parametrize("where", ["topic", "broker"])
def test_unclean_leader_election_enable_elects_a_replica_coming_back(where: str) -> None:
    setting = {"unclean.leader.election.enable": "true"}
    cluster = cluster_with(setting if where == "broker" else {}, setting if where == "topic" else None)
    try:
        _last, other = leaderless(cluster)
        cluster.broker_up(other)
        part = metadata(cluster, other)
        assert (part.error_code, part.leader_id) == (0, other)
    finally:
        cluster.stop_background()


def test_the_mock_default_hands_a_lone_replica_partition_to_a_live_broker() -> None:
    with MockCluster(brokers=2) as cluster:
        cluster.create_topic("r", 1, 1)
        leader = replicas(cluster)[0]
        cluster.broker_down(leader)
        part = metadata(cluster, 1 - leader)
        assert (part.error_code, part.leader_id) == (0, 1 - leader)


def test_a_bad_failover_setting_is_one_clear_error() -> None:
    with pytest.raises(KafkaError, match=re.escape("mock.leader.failover.to.any.broker")):
        MockCluster(config={"mock.leader.failover.to.any.broker": "maybe"})


def test_a_leaderless_partition_moved_by_hand_is_not_taken_back(kafka_rule: MockCluster) -> None:
    last, other = leaderless(kafka_rule)
    survivor = next(b for b in (0, 1, 2) if b not in (last, other))
    kafka_rule.move_leader("r", 0, survivor)
    kafka_rule.broker_up(last)
    part = metadata(kafka_rule, last)
    assert (part.error_code, part.leader_id) == (0, survivor)
