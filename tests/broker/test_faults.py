"""Fault rules and the journal over real sockets: every matcher (API, version, broker, topic, partition,
group, transactional id, client id, nth, times, seeded probability, time window) and every action (error
by request or partition, delay, drop before/after handling, no reply, throttle, corrupt CRC, truncate,
observe)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.codec_errors import CorruptRecordError
from mockbroker.errors import ErrorCode
from mockbroker.faults import FaultRule, rule_from_dict
from mockbroker.protocol import api
from mockbroker.state.clock import ManualClock

from .wire import WireClient, fetch_body, produce_body

META = api.request_module(3).MetadataRequest(topics=[])
FIND = api.request_module(10)
NOW = int(time.time() * 1000)


@pytest.fixture
def one() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, topics={"t": 2}) as c:
        yield c


def batch(n: int = 2) -> bytes:
    return rec.build_batch([(b"k", f"v{i}".encode(), [], NOW) for i in range(n)])


def two_partition_produce() -> object:
    m = api.request_module(0)
    return m.ProduceRequest(acks=1, timeout_ms=5000, topic_data=[m.TopicProduceData(name="t", partition_data=[
        m.PartitionProduceData(index=0, records=batch()), m.PartitionProduceData(index=1, records=batch())])])


def codes(resp: object) -> dict[int, int]:
    return {p.index: p.error_code for t in resp.responses for p in t.partition_responses}


def test_partition_scope_error_refuses_only_the_named_partition(one: MockCluster) -> None:
    rule = one.add_fault(api="Produce", topic="t", partition=1, error="NOT_LEADER_OR_FOLLOWER", scope="partition")
    with WireClient(one.brokers[0].port) as c:
        resp = c.call(0, 9, two_partition_produce())
    assert codes(resp) == {0: 0, 1: ErrorCode.NOT_LEADER_OR_FOLLOWER}
    assert [p.high_watermark for p in one.state.topics["t"].partitions] == [2, 0]  # only partition 0 appended
    assert rule.hits == 1


def test_request_scope_error_refuses_everything_and_changes_nothing(one: MockCluster) -> None:
    one.add_fault(api="Produce", error=ErrorCode.KAFKA_STORAGE_ERROR)
    with WireClient(one.brokers[0].port) as c:
        assert codes(c.call(0, 9, two_partition_produce())) == {0: 56, 1: 56}
        assert codes(c.call(0, 9, two_partition_produce())) == {0: 0, 1: 0}  # times=1 by default
    assert [p.high_watermark for p in one.state.topics["t"].partitions] == [2, 2]


def test_top_level_error_for_a_coordinator_request(one: MockCluster) -> None:
    one.add_fault(api="FindCoordinator", group="g", error="COORDINATOR_NOT_AVAILABLE")
    with WireClient(one.brokers[0].port) as c:
        other = c.call(10, 3, FIND.FindCoordinatorRequest(key="other"))
        refused = c.call(10, 3, FIND.FindCoordinatorRequest(key="g"))
    assert other.error_code == 0 and refused.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_nth_and_times_pick_which_requests(one: MockCluster) -> None:
    rule = one.add_fault(api="Metadata", action="observe", nth=2, times=2)
    with WireClient(one.brokers[0].port) as c:
        for _ in range(5):
            c.call(3, 12, META)
    marked = [e.faults for e in one.journal.entries(api="Metadata")]
    assert marked == [[], [rule.id], [rule.id], [], []]
    assert (rule.hits, rule.active) == (2, False)


def test_version_client_id_and_broker_matchers() -> None:
    with MockCluster(brokers=2) as cluster:
        v12 = cluster.add_fault(api=3, version=12, action="observe", times=None)
        wire = cluster.add_fault(api="Metadata", client_id="wire-.*", action="observe", times=None)
        nobody = cluster.add_fault(api="Metadata", client_id="librdkafka", action="observe", times=None)
        second = cluster.add_fault(api="Metadata", broker=1, action="observe", times=None)
        with WireClient(cluster.brokers[0].port) as c0, WireClient(cluster.brokers[1].port) as c1:
            c0.call(3, 12, META)
            c0.call(3, 9, META)
            c1.call(3, 12, META)
        assert (v12.hits, wire.hits, nobody.hits, second.hits) == (2, 3, 0, 1)


def test_seeded_probability_repeats() -> None:
    def pattern() -> list[bool]:
        rule = rule_from_dict({"api": "Metadata", "action": "observe", "times": None, "probability": 0.5,
                               "seed": 7})
        with MockCluster() as cluster:
            cluster.add_fault(rule)
            with WireClient(cluster.brokers[0].port) as c:
                for _ in range(40):
                    c.call(3, 12, META)
            return [bool(e.faults) for e in cluster.journal.entries(api="Metadata")]

    first, second = pattern(), pattern()
    assert first == second and 5 < sum(first) < 35


def test_time_window_follows_the_cluster_clock() -> None:
    clock = ManualClock()
    with MockCluster(clock=clock) as cluster:
        rule = cluster.add_fault(api="Metadata", action="observe", times=None, after_ms=1000, until_ms=2000)
        with WireClient(cluster.brokers[0].port) as c:
            c.call(3, 12, META)  # too early
            clock.advance(1500)
            c.call(3, 12, META)  # inside
            clock.advance(1000)
            c.call(3, 12, META)  # too late
        assert rule.hits == 1 and rule.matched == 1


def test_delay_holds_the_answer(one: MockCluster) -> None:
    one.add_fault(api="Metadata", action="delay", delay_ms=300)
    with WireClient(one.brokers[0].port) as c:
        started = time.monotonic()
        c.call(3, 12, META)
        held = time.monotonic() - started
    assert held >= 0.25
    assert one.journal.entries(api="Metadata")[0].latency_ms >= 250


def test_drop_before_changes_nothing_and_drop_after_keeps_the_append(one: MockCluster) -> None:
    log = one.state.partition("t", 0)
    one.add_fault(api="Produce", action="drop_before")
    with WireClient(one.brokers[0].port) as c:
        c.send(0, 9, produce_body(9, "t", 0, batch()))
        assert c.closed_by_peer()
    assert log.high_watermark == 0
    one.add_fault(api="Produce", action="drop_after")
    with WireClient(one.brokers[0].port) as c:
        c.send(0, 9, produce_body(9, "t", 0, batch()))
        assert c.closed_by_peer()
    assert log.high_watermark == 2
    assert [e.outcome for e in one.journal.entries(api="Produce")] == ["closed", "closed"]


def test_no_reply_hangs_only_that_request_until_the_client_leaves(one: MockCluster) -> None:
    rule = one.add_fault(api="Metadata", action="no_reply")
    with WireClient(one.brokers[0].port, timeout=0.5) as c:
        c.send(3, 12, META)
        with pytest.raises(TimeoutError):
            c.receive(3, 12)
    with WireClient(one.brokers[0].port) as c:  # others are served
        assert c.call(3, 12, META).brokers
    assert rule.hits == 1


def test_throttle_answers_with_the_time_and_mutes_the_connection(one: MockCluster) -> None:
    one.add_fault(api="Produce", action="throttle", throttle_ms=500)
    with WireClient(one.brokers[0].port) as c, WireClient(one.brokers[0].port) as other:
        answer = c.call(0, 9, produce_body(9, "t", 0, batch()))
        assert answer.throttle_time_ms == 500
        started = time.monotonic()
        other.call(3, 12, META)  # another connection is not muted
        other_took = time.monotonic() - started
        c.call(3, 12, META)  # this one is, until the throttle time has passed
        muted = time.monotonic() - started
    assert other_took < 0.4 and muted >= 0.4


def test_throttle_before_kip219_holds_the_answer(one: MockCluster) -> None:
    one.add_fault(api="Metadata", action="throttle", throttle_ms=400)
    with WireClient(one.brokers[0].port) as c:
        started = time.monotonic()
        answer = c.call(3, 5, META)  # Metadata v5 (before KIP-219): the broker delays the answer itself
        assert answer.throttle_time_ms == 400 and time.monotonic() - started >= 0.35


def test_corrupt_crc_breaks_one_fetched_batch(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        c.call(0, 9, produce_body(9, "t", 0, batch()))
        one.add_fault(api="Fetch", action="corrupt_crc")
        bad = c.call(1, 12, fetch_body("t", 0, 0)).responses[0].partitions[0].records
        good = c.call(1, 12, fetch_body("t", 0, 0)).responses[0].partitions[0].records
    with pytest.raises(CorruptRecordError):
        rec.verify_batch(bad)
    assert rec.verify_batch(good).record_count == 2


def test_truncate_sends_half_and_closes(one: MockCluster) -> None:
    one.add_fault(api="Metadata", action="truncate")
    with WireClient(one.brokers[0].port) as c:
        c.send(3, 12, META)
        with pytest.raises(ConnectionError, match="connection closed after"):
            c.receive(3, 12)


def test_transactional_id_matcher(one: MockCluster) -> None:
    init = api.request_module(22)
    one.add_fault(api="InitProducerId", transactional_id="txn-a", error="COORDINATOR_LOAD_IN_PROGRESS")
    with WireClient(one.brokers[0].port) as c:
        b = c.call(22, 4, init.InitProducerIdRequest(transactional_id="txn-b", transaction_timeout_ms=60000,
                                                     producer_id=-1, producer_epoch=-1))
        a = c.call(22, 4, init.InitProducerIdRequest(transactional_id="txn-a", transaction_timeout_ms=60000,
                                                     producer_id=-1, producer_epoch=-1))
    assert b.error_code == 0 and a.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def test_bad_rules_are_refused() -> None:
    for spec, message in [({"action": "explode"}, "unknown action"), ({"api": "Nope"}, "unknown API"),
                          ({"error": "NOPE"}, "unknown error code"), ({"colour": 1}, "unknown fault field"),
                          ({"action": "error"}, "needs an error code"), ({"probability": 2}, "between 0 and 1"),
                          ({"nth": 0}, "at least 1"), ({"scope": "topic", "error": 6}, "scope must be")]:
        with pytest.raises(ValueError, match=message):
            rule_from_dict(spec)
    assert isinstance(rule_from_dict({"error": 6}), FaultRule)


def test_journal_records_software_latency_topics_and_errors(one: MockCluster) -> None:
    versions = api.request_module(18)
    with WireClient(one.brokers[0].port) as c:
        c.call(18, 3, versions.ApiVersionsRequest(client_software_name="probe", client_software_version="1.2"))
        c.call(0, 9, produce_body(9, "nope!", 0, batch()))
        c.call(0, 9, produce_body(9, "t", 1, batch()))
    entries = one.journal.entries()
    assert [e.api for e in entries] == ["ApiVersions", "Produce", "Produce"]
    produce = entries[2]
    assert produce.client_id == "wire-test" and produce.client_software == "probe/1.2"
    assert produce.about["topics"] == {"t": [1]} and produce.latency_ms >= 0 and produce.outcome == "answered"
    assert one.journal.entries(errors_only=True)[0].errors  # the bad topic name was refused
    lines = [json.loads(line) for line in one.journal.to_jsonl().splitlines()]
    assert [line["seq"] for line in lines] == [1, 2, 3]


def test_journal_size_is_configurable() -> None:
    with MockCluster(config={"mock.journal.max.entries": 2}) as cluster:
        with WireClient(cluster.brokers[0].port) as c:
            for _ in range(5):
                c.call(3, 12, META)
        assert [e.seq for e in cluster.journal.entries()] == [4, 5]
    with MockCluster(config={"mock.journal.max.entries": 0}) as cluster:
        with WireClient(cluster.brokers[0].port) as c:
            c.call(3, 12, META)
        assert cluster.journal.entries() == []
