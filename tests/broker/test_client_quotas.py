"""Client quotas over a real socket: AlterClientQuotas and DescribeClientQuotas (every version, each
match type, remove, validate_only, Kafka's errors) and throttling (produce bytes, fetch bytes, request
time), with a hand-moved clock so throttle times follow Kafka's formula exactly."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.protocol import api
from mockbroker.state.clock import ManualClock
from mockbroker.state.quotas import ClientQuotas, user_name

from .wire import WireClient, fetch_body, produce_body

AQ, DQ = api.request_module(49), api.request_module(48)
META = api.request_module(3).MetadataRequest(topics=[])
EXACT, DEFAULT, SPECIFIED = 0, 1, 2


@pytest.fixture
def one() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, topics={"t": 1}) as c:
        yield c


def alter(c: WireClient, entity: dict[str, str | None], ops: dict[str, float | None], version: int = 1,
          validate_only: bool = False) -> Any:
    entry = AQ.EntryData(entity=[AQ.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
                         ops=[AQ.OpData(key=k, value=v or 0.0, remove=v is None) for k, v in ops.items()])
    answer = c.call(49, version, AQ.AlterClientQuotasRequest(entries=[entry], validate_only=validate_only))
    assert len(answer.entries) == 1
    return answer.entries[0]


def describe(c: WireClient, components: list[tuple[str, int, str | None]], strict: bool = False,
             version: int = 1) -> Any:
    return c.call(48, version, DQ.DescribeClientQuotasRequest(
        components=[DQ.ComponentData(entity_type=t, match_type=m, match=s) for t, m, s in components], strict=strict))


def found(answer: Any) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    assert answer.error_code == 0, answer
    return {tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {v.key: v.value for v in entry.values}
            for entry in answer.entries}


@pytest.mark.parametrize("version", [0, 1])
def test_alter_then_describe_each_version(one: MockCluster, version: int) -> None:
    with WireClient(one.brokers[0].port) as c:
        result = alter(c, {"user": "alice", "client-id": "app"}, {"producer_byte_rate": 1024.0,
                                                                   "request_percentage": 12.5}, version)
        assert (result.error_code, result.error_message) == (0, None)
        assert [(e.entity_type, e.entity_name) for e in result.entity] == [("user", "alice"), ("client-id", "app")]
        got = found(describe(c, [("user", EXACT, "alice")], version=version))
    assert got == {(("client-id", "app"), ("user", "alice")): {"producer_byte_rate": 1024.0,
                                                               "request_percentage": 12.5}}
    assert one.quotas() == [{"entity": {"client-id": "app", "user": "alice"},
                             "values": {"producer_byte_rate": 1024.0, "request_percentage": 12.5}}]


def test_describe_match_types_and_strict(one: MockCluster) -> None:
    entities: list[dict[str, str | None]] = [
        {"user": "alice"}, {"user": None}, {"user": "alice", "client-id": "app"}, {"client-id": "app"},
        {"client-id": None}, {"user": None, "client-id": None}, {"ip": "10.0.0.1"}]
    with WireClient(one.brokers[0].port) as c:
        for entity in entities:
            key = "connection_creation_rate" if "ip" in entity else "consumer_byte_rate"
            assert alter(c, entity, {key: 100.0}).error_code == 0

        def keys(components: list[tuple[str, int, str | None]], strict: bool = False) -> set[str]:
            return {",".join(f"{t}={n}" for t, n in k) for k in found(describe(c, components, strict))}

        assert keys([("user", EXACT, "alice")]) == {"user=alice", "client-id=app,user=alice"}
        assert keys([("user", EXACT, "alice")], strict=True) == {"user=alice"}
        assert keys([("user", DEFAULT, None)]) == {"user=None", "client-id=None,user=None"}
        assert keys([("user", SPECIFIED, None)]) == {"user=alice", "user=None", "client-id=app,user=alice",
                                                     "client-id=None,user=None"}
        assert keys([("client-id", SPECIFIED, None)], strict=True) == {"client-id=app", "client-id=None"}
        assert keys([("user", SPECIFIED, None), ("client-id", DEFAULT, None)]) == {"client-id=None,user=None"}
        assert keys([("ip", SPECIFIED, None)]) == {"ip=10.0.0.1"}
        assert len(keys([])) == len(entities)
        assert keys([], strict=True) == set()


def test_remove_and_validate_only(one: MockCluster) -> None:
    with WireClient(one.brokers[0].port) as c:
        assert alter(c, {"user": "bob"}, {"producer_byte_rate": 10.0, "consumer_byte_rate": 20.0}).error_code == 0
        assert alter(c, {"user": "bob"}, {"producer_byte_rate": 99.0}, validate_only=True).error_code == 0
        assert alter(c, {"user": "carol"}, {"producer_byte_rate": 5.0}, validate_only=True).error_code == 0
        assert found(describe(c, [])) == {(("user", "bob"),): {"producer_byte_rate": 10.0, "consumer_byte_rate": 20.0}}
        assert alter(c, {"user": "bob"}, {"producer_byte_rate": None}).error_code == 0
        assert found(describe(c, [])) == {(("user", "bob"),): {"consumer_byte_rate": 20.0}}
        assert alter(c, {"user": "bob"}, {"consumer_byte_rate": None, "request_percentage": None}).error_code == 0
        assert found(describe(c, [])) == {}  # an entity without quotas is gone
        bad = alter(c, {"user": "bob"}, {"producer_byte_rate": -1.0}, validate_only=True)
        assert bad.error_code == ErrorCode.INVALID_REQUEST  # validate_only still checks


@pytest.mark.parametrize(("entity", "ops", "message"), [
    ({}, {"producer_byte_rate": 1.0}, "Invalid empty client quota entity"),
    ({"group": "g"}, {"producer_byte_rate": 1.0}, "Unhandled client quota entity type: group"),
    ({"user": ""}, {"producer_byte_rate": 1.0}, "Empty user not supported"),
    ({"ip": "10.0.0.1", "user": "a"}, {"connection_creation_rate": 1.0}, "IP entity should not be combined"),
    ({"ip": "not an address"}, {"connection_creation_rate": 1.0}, "is not a valid IP"),
    ({"ip": "10.0.0.1"}, {"producer_byte_rate": 1.0}, "Invalid configuration key producer_byte_rate"),
    ({"user": "a"}, {"connection_creation_rate": 1.0}, "Invalid configuration key connection_creation_rate"),
    ({"user": "a"}, {"no_such_quota": 1.0}, "Invalid configuration key no_such_quota"),
    ({"user": "a"}, {"consumer_byte_rate": 0.0}, "must be greater than 0"),
    ({"client-id": "c"}, {"producer_byte_rate": 10.5}, "cannot be a fractional value"),
], ids=["empty", "unknown-type", "empty-name", "ip-combined", "bad-ip", "ip-key", "user-ip-key", "unknown-key",
        "zero", "fraction"])
def test_alter_errors(one: MockCluster, entity: dict[str, str | None], ops: dict[str, float], message: str) -> None:
    with WireClient(one.brokers[0].port) as c:
        result = alter(c, entity, ops)
        assert result.error_code == ErrorCode.INVALID_REQUEST and message in result.error_message
        assert found(describe(c, [])) == {}  # nothing stored


def test_alter_duplicates_in_one_request(one: MockCluster) -> None:
    entity = [AQ.EntityData(entity_type="user", entity_name="dup")]
    twice = AQ.EntryData(entity=entity, ops=[AQ.OpData(key="producer_byte_rate", value=1.0),
                                             AQ.OpData(key="producer_byte_rate", value=2.0)])
    fine = AQ.EntryData(entity=[AQ.EntityData(entity_type="client-id", entity_name="x")],
                        ops=[AQ.OpData(key="request_percentage", value=50.0)])
    with WireClient(one.brokers[0].port) as c:
        answer = c.call(49, 0, AQ.AlterClientQuotasRequest(entries=[twice, fine, fine]))
        assert [(e.error_code, e.error_message) for e in answer.entries] == [
            (ErrorCode.INVALID_REQUEST, "Duplicate quota key producer_byte_rate not updating quota for this entity "
                                        "(user=dup)"),
            (ErrorCode.INVALID_REQUEST, "Ignoring duplicate entity (client-id=x)"),
        ]
        assert found(describe(c, [])) == {(("client-id", "x"),): {"request_percentage": 50.0}}


@pytest.mark.parametrize(("components", "code", "message"), [
    ([("", EXACT, "a")], ErrorCode.INVALID_REQUEST, "Invalid empty entity type."),
    ([("user", EXACT, "a"), ("user", DEFAULT, None)], ErrorCode.INVALID_REQUEST, "cannot appear more than once"),
    ([("group", EXACT, "g")], ErrorCode.UNSUPPORTED_VERSION, "Unsupported entity type group"),
    ([("user", EXACT, None)], ErrorCode.INVALID_REQUEST, "MATCH_TYPE_EXACT, but set match string to null"),
    ([("user", DEFAULT, "a")], ErrorCode.INVALID_REQUEST, "MATCH_TYPE_DEFAULT, but also specified a match"),
    ([("user", SPECIFIED, "a")], ErrorCode.INVALID_REQUEST, "MATCH_TYPE_SPECIFIED, but also specified a match"),
    ([("user", 7, None)], ErrorCode.INVALID_REQUEST, "Unknown match type 7"),
    ([("ip", SPECIFIED, None), ("user", SPECIFIED, None)], ErrorCode.INVALID_REQUEST, "IP filter component"),
], ids=["empty-type", "repeated-type", "unknown-type", "exact-null", "default-match", "specified-match",
        "bad-match-type", "ip-with-user"])
@pytest.mark.parametrize("version", [0, 1])
def test_describe_errors(one: MockCluster, components: list[tuple[str, int, str | None]], code: int, message: str,
                         version: int) -> None:
    one.set_quota({"user": "a"}, producer_byte_rate=1)
    with WireClient(one.brokers[0].port) as c:
        answer = describe(c, components, version=version)
        assert answer.error_code == code and message in answer.error_message and not answer.entries


def test_resolution_follows_kafkas_order() -> None:
    config = {"quota.window.num": 11, "quota.window.size.seconds": 1}
    q = ClientQuotas(config, ManualClock())
    levels: list[tuple[dict[str, str | None], tuple[str, str]]] = [  # least specific first
        ({"client-id": None}, ("", "app")), ({"client-id": "app"}, ("", "app")), ({"user": None}, ("alice", "")),
        ({"user": None, "client-id": None}, ("alice", "app")), ({"user": None, "client-id": "app"}, ("alice", "app")),
        ({"user": "alice"}, ("alice", "")), ({"user": "alice", "client-id": None}, ("alice", "app")),
        ({"user": "alice", "client-id": "app"}, ("alice", "app")),
    ]
    for rate, (entity, tags) in enumerate(levels, 1):
        q.alter(entity, [("producer_byte_rate", float(rate))])
        assert q.resolve("producer_byte_rate", "alice", "app") == (tags, float(rate))  # the newest wins
    assert q.resolve("producer_byte_rate", "bob", "other") == (("bob", "other"), 4.0)  # default user + client
    assert q.resolve("consumer_byte_rate", "alice", "app") is None
    assert (user_name("User:alice"), user_name("User:ANONYMOUS")) == ("alice", "ANONYMOUS")  # from ctx.principal
    with pytest.raises(KafkaError):
        q.alter({"user": "x"}, [("producer_byte_rate", 1.5)])


def produce_size(version: int, records: bytes) -> int:
    """What Kafka counts against producer_byte_rate: the whole request (its size field excluded)."""
    frame = api.to_bytes(api.encode_request(0, version, 1, produce_body(version, "t", 0, records), "wire-test"))
    return len(frame) - 4


def quota_cluster(**config: Any) -> MockCluster:
    """One broker with a clock that stands still and two 1 s quota windows: every rate is measured over
    exactly one second, so a throttle time is (bytes - bound) / bound * 1000 ms."""
    return MockCluster(brokers=1, topics={"t": 1}, clock=ManualClock(),
                       config={"quota.window.num": 2, "quota.window.size.seconds": 1, **config})


def test_produce_over_its_byte_rate_is_throttled_and_muted() -> None:
    data = rec.build_batch([(b"k", b"x" * 300, [], 1_700_000_000_000)])
    size = produce_size(9, data)
    with quota_cluster() as cluster:
        cluster.set_quota({"client-id": "wire-test"}, producer_byte_rate=2 * size - 100)
        with WireClient(cluster.brokers[0].port) as c:
            assert c.call(0, 9, produce_body(9, "t", 0, data)).throttle_time_ms == 0
            answer = c.call(0, 9, produce_body(9, "t", 0, data))  # 2 * size bytes in the window
            assert answer.throttle_time_ms == round(100 / (2 * size - 100) * 1000)
            assert answer.responses[0].partition_responses[0].error_code == 0  # appended all the same
            started = time.monotonic()
            c.call(3, 12, META)  # muted until the throttle time has passed
            assert time.monotonic() - started >= answer.throttle_time_ms / 1000 * 0.8
        produced = cluster.journal.entries(api="Produce")
        assert [e.throttle_ms for e in produced] == [0, answer.throttle_time_ms]
        assert produced[1].to_dict()["throttle_ms"] == answer.throttle_time_ms
        assert cluster.state.partition("t", 0).next_offset == 2


def test_produce_before_kip219_holds_the_answer() -> None:
    data = rec.build_batch([(b"k", b"x" * 300, [], 1_700_000_000_000)])
    with quota_cluster() as cluster:
        cluster.set_quota({"user": None}, producer_byte_rate=produce_size(5, data))  # every user ("ANONYMOUS" too)
        with WireClient(cluster.brokers[0].port) as c:
            c.call(0, 5, produce_body(5, "t", 0, data))
            started = time.monotonic()
            answer = c.call(0, 5, produce_body(5, "t", 0, data))  # v5: throttled by the broker itself
            assert answer.throttle_time_ms == 1000
            assert time.monotonic() - started >= 0.8


def test_acks_zero_produce_is_muted_without_an_answer() -> None:
    data = rec.build_batch([(b"k", b"x" * 300, [], 1_700_000_000_000)])
    with quota_cluster() as cluster:
        cluster.set_quota({"client-id": None}, producer_byte_rate=produce_size(9, data))
        with WireClient(cluster.brokers[0].port) as c:
            c.send(0, 9, produce_body(9, "t", 0, data, acks=0))
            started = time.monotonic()
            c.send(0, 9, produce_body(9, "t", 0, data, acks=0))  # over quota: muted 1000 ms
            assert c.call(3, 12, META).brokers
            assert time.monotonic() - started >= 0.8
        assert [e.throttle_ms for e in cluster.journal.entries(api="Produce")] == [0, 1000]


def test_other_clients_are_not_throttled() -> None:
    data = rec.build_batch([(b"k", b"x" * 300, [], 1_700_000_000_000)])
    with quota_cluster() as cluster:
        cluster.set_quota({"client-id": "someone-else"}, producer_byte_rate=1)
        with WireClient(cluster.brokers[0].port) as c:
            for _ in range(3):
                assert c.call(0, 9, produce_body(9, "t", 0, data)).throttle_time_ms == 0
        cluster.set_quota({"client-id": "someone-else"}, producer_byte_rate=None, controller_mutation_rate=5)
        assert not cluster.state.quotas.enabled  # only stored keys left: dispatch skips quotas altogether
        cluster.clear_quotas()
        assert cluster.quotas() == []


@pytest.mark.parametrize("version", [12, 4])
def test_fetch_over_its_byte_rate_gets_an_empty_throttled_answer(version: int) -> None:
    with quota_cluster() as cluster:
        with WireClient(cluster.brokers[0].port) as c:
            for _ in range(4):
                c.call(0, 9, produce_body(9, "t", 0, rec.build_batch([(b"k", b"x" * 500, [], 1_700_000_000_000)])))
            first = c.call(1, version, fetch_body("t", 0, 0))
            size = len(api.to_bytes(api.encode_response(1, version, 1, first))) - 4  # Kafka: body + 4 ...
            size -= 1 if version >= 12 else 0  # ... so without the flexible header's tag byte
            cluster.set_quota({"client-id": "wire-test"}, consumer_byte_rate=size)
            full = c.call(1, version, fetch_body("t", 0, 0))
            assert full.throttle_time_ms == 0 and len(full.responses[0].partitions[0].records) > 2000
            started = time.monotonic()
            throttled = c.call(1, version, fetch_body("t", 0, 0))  # would be 2 * size: over, so nothing
            assert throttled.responses == [] and throttled.throttle_time_ms == 1000
            if version < 8:  # before KIP-219 the answer itself waited
                assert time.monotonic() - started >= 0.8
            # the throttled bytes were not counted: the window still holds one answer
            rate, _window = next(iter(cluster.state.quotas.sensors.values())).measure(
                cluster.state.clock.now_ms(), 1000, 2)
            assert rate == size


def test_fetch_max_bytes_is_capped_by_the_quota_window() -> None:
    with quota_cluster() as cluster:
        with WireClient(cluster.brokers[0].port) as c:
            for _ in range(6):
                c.call(0, 9, produce_body(9, "t", 0, rec.build_batch([(b"k", b"x" * 1000, [], 1_700_000_000_000)])))
            cluster.set_quota({"user": "ANONYMOUS"}, consumer_byte_rate=2500)  # 2500 bytes per window at most
            part = c.call(1, 12, fetch_body("t", 0, 0)).responses[0].partitions[0]
            assert 1000 < len(part.records) <= 2500


def test_request_percentage_throttles_any_request() -> None:
    with quota_cluster() as cluster:
        cluster.set_quota({"client-id": "wire-test"}, request_percentage=0.01)  # 100 us of handler time a second
        with WireClient(cluster.brokers[0].port) as c:
            throttles = [c.call(3, 12, META).throttle_time_ms]
            while throttles[-1] == 0 and len(throttles) < 10_000:  # handler time adds up, the clock stands still
                throttles.append(c.call(3, 12, META).throttle_time_ms)
            assert 0 < throttles[-1] <= 1000  # Kafka bounds request-time throttling by one window
            started = time.monotonic()
            c.call(18, 3, api.request_module(18).ApiVersionsRequest(client_software_name="t",
                                                                  client_software_version="1"))
            assert time.monotonic() - started >= throttles[-1] / 1000 * 0.8  # muted
        entries = cluster.journal.entries(api="Metadata")
        assert [e.throttle_ms for e in entries] == throttles


def test_a_fault_rule_throttle_shows_in_the_journal_too(one: MockCluster) -> None:
    one.add_fault(api="Metadata", action="throttle", throttle_ms=50)
    with WireClient(one.brokers[0].port) as c:
        assert c.call(3, 12, META).throttle_time_ms == 50
    assert [e.throttle_ms for e in one.journal.entries(api="Metadata")] == [50]


@pytest.mark.parametrize("key", ["quota.window.num", "quota.window.size.seconds"])
def test_quota_window_configs_must_be_positive(key: str) -> None:
    with pytest.raises(KafkaError):
        MockCluster(config={key: 0})


def test_quota_apis_need_cluster_config_rights_when_acls_are_on() -> None:
    config = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with MockCluster(brokers=1, config=config) as cluster, WireClient(cluster.brokers[0].port) as c:
        refused = alter(c, {"user": "alice"}, {"producer_byte_rate": 1024.0})
        assert refused.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert describe(c, []).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert cluster.quotas() == []
        cluster.add_acl("CLUSTER", "kafka-cluster", "User:ANONYMOUS", "ALTER_CONFIGS")  # implies DESCRIBE_CONFIGS
        assert alter(c, {"user": "alice"}, {"producer_byte_rate": 1024.0}).error_code == 0
        assert found(describe(c, [])) == {(("user", "alice"),): {"producer_byte_rate": 1024.0}}
