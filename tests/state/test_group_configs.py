"""GROUP config resources in plain state: Kafka's GroupConfig names, checks and messages, describe with
sources and synonyms, IncrementalAlterConfigs ops, and a KIP-848 group expiring members after its own
consumer.session.timeout.ms; plus CLIENT_METRICS subscriptions and the OTLP reader."""

from __future__ import annotations

from typing import Any

import pytest

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state.client_metrics import ClientMetrics, parse_match
from mockbroker.state.clock import ManualClock
from mockbroker.state.cluster import ClusterState
from mockbroker.telemetry.otlp import OTLPError, decode_metrics_data, encode_gauges

GROUP, CLIENT_METRICS, SET, DELETE, APPEND = 32, 16, 0, 1, 2


def _state(**config: Any) -> tuple[ClusterState, ManualClock]:
    clock = ManualClock()
    state = ClusterState(config, clock)
    state.add_broker(0, "127.0.0.1", 9092)
    state.create_topic("t", 2)
    return state, clock


def refused(fn: Any) -> tuple[int, str | None]:
    with pytest.raises(KafkaError) as exc:
        fn()
    return exc.value.code, exc.value.message


def test_group_configs_checked_as_kafka_checks_them() -> None:
    state, _ = _state()
    admin = state.config_admin

    def alter(*ops: tuple[str, int, str | None]) -> None:
        admin.incremental_alter(GROUP, "g", list(ops), 0, False)

    assert refused(lambda: alter(("session.timeout.ms", SET, "1"))) == (ErrorCode.INVALID_CONFIG,
                                                                       "Unknown group config name: session.timeout.ms")
    assert refused(lambda: alter(("consumer.session.timeout.ms", SET, "x"))) == (
        ErrorCode.INVALID_CONFIG, "Invalid value x for configuration consumer.session.timeout.ms: Not a number of "
        "type INT")
    assert refused(lambda: alter(("consumer.session.timeout.ms", SET, "0")))[1] == (
        "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1")
    assert refused(lambda: alter(("consumer.session.timeout.ms", SET, "999")))[1] == (
        "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms")
    assert refused(lambda: alter(("consumer.heartbeat.interval.ms", SET, "20000")))[1] == (
        "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms")
    assert refused(lambda: alter(("consumer.session.timeout.ms", SET, "2000"),
                                 ("consumer.heartbeat.interval.ms", SET, "2000")))[1] == (
        "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")
    assert refused(lambda: alter(("share.isolation.level", SET, "dirty")))[0] == ErrorCode.INVALID_CONFIG
    assert refused(lambda: alter(("share.auto.offset.reset", SET, "middle")))[0] == ErrorCode.INVALID_CONFIG
    assert refused(lambda: alter(("streams.num.standby.replicas", SET, "3")))[1] == (
        "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas")
    assert refused(lambda: alter(("consumer.session.timeout.ms", APPEND, "1")))[0] == ErrorCode.INVALID_CONFIG
    unnamed = [("consumer.session.timeout.ms", SET, "2000")]
    assert refused(lambda: admin.incremental_alter(GROUP, "", unnamed, 0, False)) == (ErrorCode.INVALID_REQUEST,
                                                                                      "Group name must not be empty")
    assert admin.group_configs.overrides == {}  # nothing refused was kept
    alter(("share.auto.offset.reset", SET, "by_duration:PT1H"), ("share.isolation.level", SET, "read_committed"))
    assert admin.group_configs.of("g") == {"share.auto.offset.reset": "by_duration:PT1H",
                                           "share.isolation.level": "read_committed"}


def test_group_configs_described_with_sources_and_synonyms() -> None:
    state, _ = _state(**{"group.consumer.session.timeout.ms": 30000})
    admin = state.config_admin
    admin.incremental_alter(GROUP, "g", [("consumer.heartbeat.interval.ms", SET, "2000")], 0, False)
    entries = {e.name: e for e in admin.describe(GROUP, "g", 0)}
    assert len(entries) == 10 and "share.isolation.level" in entries
    beat, session = entries["consumer.heartbeat.interval.ms"], entries["consumer.session.timeout.ms"]
    assert (beat.value, beat.source) == ("2000", 8)
    assert beat.synonyms == [("consumer.heartbeat.interval.ms", "2000", 8),
                             ("group.consumer.heartbeat.interval.ms", "500", 5)]
    assert (session.value, session.source) == ("30000", 4)  # the broker's static value
    other = {e.name: e for e in admin.describe(GROUP, "never-seen", 0, ["consumer.heartbeat.interval.ms"])}
    assert list(other) == ["consumer.heartbeat.interval.ms"] and other["consumer.heartbeat.interval.ms"].value == "500"
    admin.incremental_alter(GROUP, "g", [("consumer.heartbeat.interval.ms", DELETE, None)], 0, False)
    assert admin.group_configs.overrides == {}
    admin.alter(GROUP, "g", {"consumer.session.timeout.ms": "5000"}, 0, False)  # AlterConfigs replaces
    assert admin.group_configs.of("g") == {"consumer.session.timeout.ms": "5000"}


def test_kip848_members_expire_after_the_groups_session_timeout() -> None:
    state, clock = _state()  # broker group.consumer.session.timeout.ms: 45000
    state.config_admin.incremental_alter(GROUP, "short", [("consumer.session.timeout.ms", SET, "2000")], 0, False)
    for group in ("short", "long"):
        state.groups.consumer_heartbeat(group, member_id="m", epoch=0, instance_id=None, rack_id=None,
                                        rebalance_timeout_ms=5000, subscribed=["t"], regex=None, assignor=None,
                                        owned={}, client_id="c", client_host="h", generate_id=False)
    clock.advance(2500)
    state.tick()
    assert not state.groups.groups["short"].consumer.members
    assert list(state.groups.groups["long"].consumer.members) == ["m"]
    assert state.group_config_value("short", "consumer.heartbeat.interval.ms") == 500


def test_client_metrics_subscriptions() -> None:
    cm = ClientMetrics()
    assert refused(lambda: cm.replace("", {"metrics": "*"})) == (ErrorCode.INVALID_REQUEST,
                                                                 "Subscription name can't be empty")
    assert refused(lambda: cm.replace("s", {"interval.ms": "3600001"}))[0] == ErrorCode.INVALID_REQUEST
    assert refused(lambda: cm.replace("s", {"match": "client_id"})) == (ErrorCode.INVALID_CONFIG,
                                                                      "Illegal client matching pattern: client_id")
    assert set(parse_match("client_id=a.*, client_software_name=librdkafka")) == {"client_id", "client_software_name"}
    cm.replace("s", {"metrics": "org.apache.kafka.producer.", "interval.ms": "1000", "match": "client_id=app-.*"})
    assert cm.describe("s", None) == [("interval.ms", "1000", 3), ("match", "client_id=app-.*", 7),
                                      ("metrics", "org.apache.kafka.producer.", 7)]
    assert cm.describe("unknown", None) == []
    matching = cm.get_subscriptions(bytes(16), {"client_id": "app-1"}, 0)
    other = cm.get_subscriptions(bytes(16), {"client_id": "tool"}, 0)
    assert matching.metrics == ["org.apache.kafka.producer."] and matching.interval_ms == 1000
    assert other.metrics == [] and other.interval_ms == 300000
    cm.replace("s", {})
    assert cm.subscriptions == {}


def test_otlp_reader_round_trip_and_malformed_bytes() -> None:
    payload = encode_gauges({"client_id": "x"}, {"a.b": 1.5, "c": -2.0}, time_unix_nano=123)
    resource, metrics = decode_metrics_data(payload)
    assert resource == {"client_id": "x"}
    assert [(m["name"], m["type"], m["data_points"][0]["value"], m["data_points"][0]["time_unix_nano"])
            for m in metrics] == [("a.b", "gauge", 1.5, 123), ("c", "gauge", -2.0, 123)]
    for bad in (b"\x0a\x05ab", b"\x0b", b"\x0a"):
        with pytest.raises(OTLPError):
            decode_metrics_data(bad)
