"""Racks and fetch-from-follower (KIP-392) over a raw socket with the codec.

Three brokers in racks a, b, c; topic "t" of one partition on brokers 0 (leader), 1 and 2, topic
"two" on brokers 0 and 1 only.  Checks the preferred read replica the rack-aware leader answers
(and when it does not), followers answering consumer fetches v11+ (not older ones, nor replicas),
ListOffsets to a follower, Metadata racks, DescribeConfigs' broker.rack and bad input.
"""

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
from mockbroker.state.replica_selector import RACK_AWARE

from .test_configs import BROKER, alter, by_name, describe
from .wire import WireClient, produce_body

F, LO, MD = api.request_module(1), api.request_module(2), api.request_module(3)
NOW = int(time.time() * 1000)
STORED = 5


def _cluster(selector: str | None) -> Iterator[MockCluster]:
    config = {"replica.selector.class": selector} if selector else {}
    with MockCluster(brokers=3, racks=["a", "b", "c"], config=config) as c:
        c.call(c.state.create_topic, "t", 1, 3, None, False, [[0, 1, 2]])
        c.call(c.state.create_topic, "two", 1, 2, None, False, [[0, 1]])
        with WireClient(c.brokers[0].port) as w:
            for topic in ("t", "two"):
                for i in range(STORED):
                    resp = w.call(0, 9, produce_body(9, topic, 0, rec.build_batch([(b"k", b"v%d" % i, [], NOW)])))
                    assert resp.responses[0].partition_responses[0].error_code == 0
        yield c


@pytest.fixture
def rack_aware() -> Iterator[MockCluster]:
    yield from _cluster(RACK_AWARE)


@pytest.fixture
def leader_only() -> Iterator[MockCluster]:
    yield from _cluster(None)


def fetch(cluster: MockCluster, broker: int, version: int, offset: int = 0, rack: str = "", replica: int = -1,
          topic: str = "t", max_wait_ms: int = 0) -> Any:
    """One partition's answer to a Fetch sent to ``broker``."""
    body = F.FetchRequest(
        replica_id=replica, replica_state=F.ReplicaState(replica_id=replica, replica_epoch=-1),
        max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
        session_epoch=-1, rack_id=rack,
        topics=[F.FetchTopic(topic=topic, topic_id=cluster.state.topics[topic].topic_id, partitions=[
            F.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20,
                             current_leader_epoch=-1)])])
    with WireClient(cluster.server(broker).port) as w:
        resp = w.call(1, version, body)
    return resp.responses[0].partitions[0]


def values(part: Any) -> list[bytes]:
    data = bytes(part.records or b"")
    return [bytes(r.value) for batch in rec.iter_batches(data) for r in rec.decode_batch(batch[2])[1]]


@pytest.mark.parametrize("version", [11, 12, 13, 16])
def test_the_rack_aware_leader_names_the_follower_in_the_consumers_rack(rack_aware: MockCluster,
                                                                       version: int) -> None:
    part = fetch(rack_aware, 0, version, rack="b")
    assert (part.error_code, part.preferred_read_replica, bytes(part.records or b"")) == (0, 1, b"")
    assert (part.high_watermark, part.log_start_offset) == (STORED, 0)
    assert fetch(rack_aware, 0, version, rack="c").preferred_read_replica == 2
    # at the log's end too, and answered at once rather than waiting out max_wait_ms
    assert fetch(rack_aware, 0, version, offset=STORED, rack="b", max_wait_ms=20_000).preferred_read_replica == 1


def test_the_leader_serves_when_no_follower_fits(rack_aware: MockCluster) -> None:
    for rack in ("a", "", "elsewhere"):  # the leader's own rack, no rack, a rack without replicas
        part = fetch(rack_aware, 0, 12, rack=rack)
        assert (part.error_code, part.preferred_read_replica, values(part)) == (0, -1, [b"v%d" % i for i in range(5)])
    part = fetch(rack_aware, 0, 10, rack="b")  # v10 carries no rack
    assert part.error_code == 0 and len(values(part)) == STORED
    part = fetch(rack_aware, 0, 12, offset=STORED + 3, rack="b")  # out of range: no replica has it
    assert (part.error_code, part.preferred_read_replica) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)


def test_a_stopped_follower_is_not_named(rack_aware: MockCluster) -> None:
    rack_aware.broker_down(1)
    part = fetch(rack_aware, 0, 12, rack="b")
    assert (part.preferred_read_replica, len(values(part))) == (-1, STORED)
    rack_aware.broker_up(1)
    assert fetch(rack_aware, 0, 12, rack="b").preferred_read_replica == 1


def test_without_the_selector_the_leader_serves_every_rack(leader_only: MockCluster) -> None:
    part = fetch(leader_only, 0, 12, rack="b")
    assert (part.error_code, part.preferred_read_replica, len(values(part))) == (0, -1, STORED)


@pytest.mark.parametrize("version", [11, 12, 13, 15, 16])
def test_a_follower_serves_consumer_fetches_up_to_the_high_watermark(leader_only: MockCluster, version: int) -> None:
    part = fetch(leader_only, 1, version, offset=2)
    assert (part.error_code, part.high_watermark, part.preferred_read_replica) == (0, STORED, -1)
    assert values(part) == [b"v2", b"v3", b"v4"]
    assert bytes(fetch(leader_only, 2, version, offset=STORED).records or b"") == b""
    assert fetch(leader_only, 1, version, offset=STORED + 1).error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_who_may_not_read_from_a_follower(leader_only: MockCluster) -> None:
    assert fetch(leader_only, 1, 10).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER  # before KIP-392
    assert fetch(leader_only, 1, 12, replica=2).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER  # a replica's
    assert fetch(leader_only, 2, 12, topic="two").error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER  # not a replica


def test_a_followers_long_poll_answers_when_records_come(leader_only: MockCluster) -> None:
    with WireClient(leader_only.server(1).port) as w:
        w.send(1, 12, F.FetchRequest(
            replica_id=-1, max_wait_ms=20_000, min_bytes=1, max_bytes=1 << 20, session_id=0, session_epoch=-1,
            topics=[F.FetchTopic(topic="t", partitions=[F.FetchPartition(
                partition=0, fetch_offset=STORED, partition_max_bytes=1 << 20, current_leader_epoch=-1)])]))
        assert leader_only.wait_for_requests("Fetch", 1, broker=1)
        with WireClient(leader_only.server(0).port) as p:
            p.call(0, 9, produce_body(9, "t", 0, rec.build_batch([(b"k", b"late", [], NOW)])))
        _corr, resp = w.receive(1, 12)
    assert values(resp.responses[0].partitions[0]) == [b"late"]


def list_offsets(cluster: MockCluster, broker: int, replica: int) -> Any:
    with WireClient(cluster.server(broker).port) as w:
        resp = w.call(2, 7, LO.ListOffsetsRequest(replica_id=replica, isolation_level=0, topics=[LO.ListOffsetsTopic(
            name="t", partitions=[LO.ListOffsetsPartition(partition_index=0, timestamp=-1, current_leader_epoch=-1)])]))
    return resp.topics[0].partitions[0]


def test_list_offsets_to_a_follower(leader_only: MockCluster) -> None:
    assert list_offsets(leader_only, 1, -1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER  # consumers: the leader
    debug = list_offsets(leader_only, 1, -2)  # Kafka's debugging replica id: any replica answers
    assert (debug.error_code, debug.offset) == (0, STORED)


def test_metadata_names_each_brokers_rack(rack_aware: MockCluster) -> None:
    with WireClient(rack_aware.brokers[0].port) as w:
        resp = w.call(3, 12, MD.MetadataRequest(topics=None, allow_auto_topic_creation=False))
    assert {b.node_id: b.rack for b in resp.brokers} == {0: "a", 1: "b", 2: "c"}


def test_describe_configs_broker_rack_and_selector(rack_aware: MockCluster) -> None:
    for node, rack in enumerate("abc"):
        entry = by_name(describe(rack_aware.server(node).port, 4, BROKER, str(node), ["broker.rack"]))["broker.rack"]
        assert (entry.value, entry.read_only, entry.config_source) == (rack, True, 4)  # STATIC_BROKER_CONFIG
    errors = alter(rack_aware.brokers[0].port, 1, [(BROKER, "0", {"broker.rack": "z"})])
    assert errors[0][0] == ErrorCode.INVALID_REQUEST
    errors = alter(rack_aware.brokers[0].port, 1, [(BROKER, "", {"replica.selector.class": ""})])
    assert errors[0][0] == ErrorCode.INVALID_REQUEST  # static in Kafka


def test_racks_forms_and_bad_input() -> None:
    with MockCluster(brokers=2, racks={1: "x"}) as c:
        assert {n: b.rack for n, b in c.state.brokers.items()} == {0: None, 1: "x"}
    with MockCluster(brokers=2, config={"broker.rack": "all"}) as c:  # cluster-wide: every broker
        assert {b.rack for b in c.state.brokers.values()} == {"all"}
    for racks, message in ((["a"], "1 rack name(s) given for 2 broker(s)"), (["a", " "], "rack of broker 1 is empty"),
                           ({5: "a"}, "node id 5 is not one of the brokers 0-1")):
        with pytest.raises(ValueError, match="racks: ") as info:
            MockCluster(brokers=2, racks=racks)  # type: ignore[arg-type]
        assert message in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(KafkaError, match=re.escape(f"did you mean {RACK_AWARE}?")):
        MockCluster(config={"replica.selector.class": "RackAwareSelector"})


def test_the_cli_refuses_bad_racks_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from mockbroker.cli import main

    with pytest.raises(SystemExit) as exit_info:  # bad input: status 2, as every CLI error (tests/test_cli_input.py)
        main(["serve", "--brokers", "3", "--port", "0", "--racks", "a,b"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == ("mockbroker serve: error: argument --racks: 2 rack name(s) given for 3 broker(s); "
                   "give one per broker")
