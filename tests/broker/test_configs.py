"""DescribeConfigs (v0-4), AlterConfigs (v0-2) and IncrementalAlterConfigs (v0-1) over a raw socket
with the codec: sources, synonyms, documentation, sensitive values, Kafka's error codes, and that
altered configs change what the broker does."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api

from .wire import WireClient, produce_body

DC, AC, IAC = (api.request_module(k) for k in (32, 33, 44))
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def describe(port: int, version: int, rtype: int, name: str, keys: list[str] | None = None,
             synonyms: bool = False, docs: bool = False) -> Any:
    with WireClient(port) as w:
        resp = w.call(32, version, DC.DescribeConfigsRequest(
            resources=[DC.DescribeConfigsResource(resource_type=rtype, resource_name=name, configuration_keys=keys)],
            include_synonyms=synonyms, include_documentation=docs))
    return resp.results[0]


def alter(port: int, version: int, resources: list[tuple[int, str, dict[str, str | None]]],
          validate_only: bool = False) -> list[tuple[int, str | None]]:
    with WireClient(port) as w:
        resp = w.call(33, version, AC.AlterConfigsRequest(resources=[
            AC.AlterConfigsResource(resource_type=t, resource_name=n,
                                    configs=[AC.AlterableConfig(name=k, value=v) for k, v in cfg.items()])
            for t, n, cfg in resources], validate_only=validate_only))
    return [(r.error_code, r.error_message) for r in resp.responses]


def incremental(port: int, version: int, resources: list[tuple[int, str, list[tuple[str, int, str | None]]]],
                validate_only: bool = False) -> list[int]:
    with WireClient(port) as w:
        resp = w.call(44, version, IAC.IncrementalAlterConfigsRequest(resources=[
            IAC.AlterConfigsResource(resource_type=t, resource_name=n, configs=[
                IAC.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])
            for t, n, ops in resources], validate_only=validate_only))
    return [r.error_code for r in resp.responses]


def by_name(result: Any) -> dict[str, Any]:
    return {c.name: c for c in result.configs}


@pytest.fixture
def configured() -> Any:
    with MockCluster(brokers=2, topics={"t": 2}, config={"log.retention.bytes": "5000000"}) as c:
        c.call(c.state.topics["t"].config.set, "retention.ms", "60000")
        yield c


@pytest.mark.parametrize("version", range(5))
def test_describe_topic_every_version(configured: MockCluster, version: int) -> None:
    port = configured.brokers[0].port
    result = describe(port, version, TOPIC, "t", synonyms=version >= 1, docs=version >= 3)
    assert result.error_code == 0 and result.resource_name == "t"
    cfg = by_name(result)
    assert {"cleanup.policy", "retention.ms", "max.message.bytes", "segment.bytes", "min.insync.replicas"} <= set(cfg)
    assert "message.format.version" not in cfg  # dropped in Kafka 4
    assert cfg["retention.ms"].value == "60000" and cfg["cleanup.policy"].value == "delete"
    assert cfg["retention.bytes"].value == "5000000"
    assert cfg["segment.bytes"].value == "1073741824" and cfg["preallocate"].value == "false"
    if version == 0:
        assert cfg["retention.ms"].is_default is False and cfg["cleanup.policy"].is_default is True
        assert cfg["retention.bytes"].is_default is False
    else:
        assert cfg["retention.ms"].config_source == 1
        assert cfg["retention.bytes"].config_source == 4
        assert cfg["cleanup.policy"].config_source == 5
        assert [(s.name, s.value, s.source) for s in cfg["retention.ms"].synonyms] == [
            ("retention.ms", "60000", 1), ("log.retention.ms", "-1", 5)]
        assert [(s.name, s.value, s.source) for s in cfg["retention.bytes"].synonyms] == [
            ("log.retention.bytes", "5000000", 4), ("log.retention.bytes", "-1", 5)]
    if version >= 3:
        assert cfg["retention.ms"].config_type == 5 and cfg["cleanup.policy"].config_type == 7
        assert cfg["preallocate"].config_type == 1 and "tombstones" in cfg["delete.retention.ms"].documentation
    assert not any(c.read_only or c.is_sensitive for c in result.configs)


def test_describe_filters_errors_and_no_synonyms_unless_asked(configured: MockCluster) -> None:
    port = configured.brokers[1].port
    result = describe(port, 2, TOPIC, "t", keys=["retention.ms", "no.such.config"])
    assert [c.name for c in result.configs] == ["retention.ms"] and result.configs[0].synonyms == []
    missing = describe(port, 4, TOPIC, "nope")
    assert (missing.error_code, missing.error_message, missing.configs) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                                            None, [])
    assert describe(port, 1, TOPIC, "bad name!").error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert describe(port, 1, 64, "x").error_code == ErrorCode.INVALID_REQUEST
    assert describe(port, 1, BROKER, "0").error_code == ErrorCode.INVALID_REQUEST  # not the receiving broker
    assert describe(port, 1, BROKER, "one").error_code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize("version", range(5))
def test_describe_broker_every_version(configured: MockCluster, version: int) -> None:
    port = configured.brokers[1].port
    result = describe(port, version, BROKER, "1", synonyms=version >= 1, docs=version >= 3)
    assert result.error_code == 0
    cfg = by_name(result)
    assert cfg["log.retention.bytes"].value == "5000000" and cfg["log.retention.bytes"].read_only is False
    assert cfg["num.partitions"].read_only is True and cfg["num.partitions"].value == "1"
    assert cfg["ssl.keystore.password"].is_sensitive is True
    assert cfg["node.id"].value == "1" and cfg["node.id"].read_only
    if version >= 1:
        assert cfg["log.retention.bytes"].config_source == 4 and cfg["message.max.bytes"].config_source == 5
    # the cluster-wide default resource lists only dynamic defaults: none yet
    assert describe(port, version, BROKER, "").configs == []


def test_alter_replaces_overrides_every_version(configured: MockCluster) -> None:
    port = configured.brokers[0].port
    topic = configured.state.topics["t"]
    for version in range(3):
        assert alter(port, version, [(TOPIC, "t", {"max.message.bytes": str(2000 + version),
                                                   "cleanup.policy": "compact,delete"})]) == [(0, None)]
        assert topic.config.overrides == {"max.message.bytes": 2000 + version, "cleanup.policy": "compact,delete"}
    assert by_name(describe(port, 1, TOPIC, "t"))["retention.ms"].config_source == 5  # reset
    # validate_only changes nothing
    assert alter(port, 1, [(TOPIC, "t", {"retention.ms": "1"})], validate_only=True) == [(0, None)]
    assert "retention.ms" not in topic.config.overrides
    codes = [c for c, _ in alter(port, 2, [
        (TOPIC, "t", {"no.such": "1"}), (TOPIC, "missing", {}), (TOPIC, "bad name!", {}),
        (BROKER, "0", {"num.partitions": "3"}), (BROKER, "1", {"log.retention.ms": "1"}),
        (BROKER, "0", {"log.retention.ms": "soon"}), (BROKER_LOGGER, "0", {"root": "INFO"}), (64, "x", {}),
    ])]
    assert codes == [ErrorCode.INVALID_CONFIG, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_TOPIC_EXCEPTION,
                     ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST,
                     ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST]


def test_alter_errors_kafka_checks_first(configured: MockCluster) -> None:
    port = configured.brokers[0].port
    assert [c for c, _ in alter(port, 0, [(TOPIC, "t", {"segment.bytes": "big"}),
                                          (TOPIC, "nope", {"retention.ms": None})])] == [
        ErrorCode.INVALID_CONFIG, ErrorCode.INVALID_REQUEST]  # null checked before the topic exists
    twice = alter(port, 1, [(TOPIC, "t", {}), (TOPIC, "t", {"retention.ms": "5"})])
    assert twice == [(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")] * 2
    assert configured.state.topics["t"].config.overrides == {"retention.ms": 60000}


def test_alter_broker_dynamic_layers_change_behaviour(configured: MockCluster) -> None:
    state = configured.state
    port0, port1 = (b.port for b in configured.brokers)
    assert alter(port0, 1, [(BROKER, "", {"log.retention.bytes": "42", "message.max.bytes": "3000"})]) == [(0, None)]
    assert state.config["log.retention.bytes"] == 42 and state.config["message.max.bytes"] == 3000
    cluster_wide = by_name(describe(port0, 1, BROKER, "", synonyms=True))
    assert set(cluster_wide) == {"log.retention.bytes", "message.max.bytes"}
    assert cluster_wide["message.max.bytes"].config_source == 3
    assert [s.source for s in cluster_wide["log.retention.bytes"].synonyms] == [3]
    topic_cfg = by_name(describe(port0, 1, TOPIC, "t", synonyms=True))["max.message.bytes"]
    assert (topic_cfg.value, topic_cfg.config_source) == ("3000", 3)
    assert [s.source for s in topic_cfg.synonyms] == [3, 5]
    # a per-broker value wins; its removal returns to the cluster-wide one, then the static one
    assert alter(port1, 2, [(BROKER, "1", {"log.retention.bytes": "7"})]) == [(0, None)]
    assert state.config["log.retention.bytes"] == 7
    broker1 = by_name(describe(port1, 1, BROKER, "1", synonyms=True))["log.retention.bytes"]
    assert [(s.value, s.source) for s in broker1.synonyms] == [("7", 2), ("42", 3), ("5000000", 4), ("-1", 5)]
    assert alter(port1, 0, [(BROKER, "1", {})]) == [(0, None)]
    assert state.config["log.retention.bytes"] == 42
    assert alter(port0, 0, [(BROKER, "", {})]) == [(0, None)]
    assert state.config["log.retention.bytes"] == 5000000 and state.config["message.max.bytes"] == 1048588


@pytest.mark.parametrize("version", range(2))
def test_incremental_every_version(configured: MockCluster, version: int) -> None:
    port = configured.brokers[0].port
    topic = configured.state.topics["t"]
    assert incremental(port, version, [(TOPIC, "t", [("cleanup.policy", APPEND, "compact"),
                                                     ("max.message.bytes", SET, "4096")])]) == [0]
    assert topic.config.overrides == {"retention.ms": 60000, "cleanup.policy": "delete,compact",
                                      "max.message.bytes": 4096}
    assert incremental(port, version, [(TOPIC, "t", [("cleanup.policy", SUBTRACT, "delete"),
                                                     ("retention.ms", DELETE, None)])]) == [0]
    assert topic.config.overrides == {"cleanup.policy": "compact", "max.message.bytes": 4096}
    assert incremental(port, version, [(TOPIC, "t", [("max.message.bytes", SET, "1")])], validate_only=True) == [0]
    assert topic.config["max.message.bytes"] == 4096
    assert incremental(port, version, [
        (TOPIC, "t", [("retention.ms", APPEND, "5")]),
        (TOPIC, "missing", [("retention.ms", SET, "5")]),
        (BROKER, "0", [("num.partitions", SET, "4")]),
        (BROKER, "", [("log.cleanup.policy", APPEND, "compact")]),
        (TOPIC, "x", [("a", SET, "1"), ("a", DELETE, None)]),
    ]) == [ErrorCode.INVALID_CONFIG, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_REQUEST, 0,
           ErrorCode.INVALID_REQUEST]
    assert incremental(port, version, [(TOPIC, "t", [("retention.ms", 9, "1")])]) == [ErrorCode.INVALID_REQUEST]
    assert incremental(port, version, [(TOPIC, "t", [("cleanup.policy", SET, "shred")])]) == [ErrorCode.INVALID_CONFIG]
    for name, value in (("max.message.bytes", "-1"), ("segment.bytes", "10"), ("retention.ms", "-2"),
                        ("compression.zstd.level", "23"), ("min.cleanable.dirty.ratio", "1.5")):
        assert incremental(port, version, [(TOPIC, "t", [(name, SET, value)])]) == [ErrorCode.INVALID_CONFIG], name
    assert incremental(port, version, [(TOPIC, "t", [("retention.ms", SET, "-1")])]) == [0]
    assert configured.state.config["log.cleanup.policy"] == "delete,compact"
    assert incremental(port, version, [(BROKER, "", [("log.cleanup.policy", SET, "shred")])]) == [
        ErrorCode.INVALID_REQUEST]


def test_broker_logger_describe_and_incremental(configured: MockCluster) -> None:
    port = configured.brokers[0].port
    name = "mockbroker.configs"
    loggers = by_name(describe(port, 4, BROKER_LOGGER, "0"))
    assert "root" in loggers and name in loggers and loggers[name].config_source == 6
    assert describe(port, 4, BROKER_LOGGER, "1").error_code == ErrorCode.INVALID_REQUEST
    assert describe(port, 4, BROKER_LOGGER, "").error_code == ErrorCode.INVALID_REQUEST
    try:
        assert incremental(port, 1, [(BROKER_LOGGER, "0", [(name, SET, "TRACE")])]) == [0]
        assert logging.getLogger(name).level == 5
        assert by_name(describe(port, 3, BROKER_LOGGER, "0", keys=[name]))[name].value == "TRACE"
        assert incremental(port, 0, [(BROKER_LOGGER, "0", [(name, DELETE, None)])]) == [0]
        assert logging.getLogger(name).level == logging.NOTSET
        refused = [
            ("0", [(name, SET, "LOUD")], ErrorCode.INVALID_CONFIG),
            ("0", [("nobody", SET, "INFO")], ErrorCode.INVALID_CONFIG),
            ("0", [("root", DELETE, None)], ErrorCode.INVALID_REQUEST),
            ("0", [(name, APPEND, "INFO")], ErrorCode.INVALID_REQUEST),
            ("1", [(name, SET, "INFO")], ErrorCode.INVALID_REQUEST),
        ]
        for node, ops, code in refused:
            assert incremental(port, 1, [(BROKER_LOGGER, node, ops)]) == [code], ops
        assert logging.getLogger(name).level == logging.NOTSET
    finally:
        logging.getLogger(name).setLevel(logging.NOTSET)


def test_sensitive_values_are_null(configured: MockCluster) -> None:
    port = configured.brokers[0].port
    # (ssl.key.password and the other keystore configs change only per listener: listener.name.<l>.ssl...)
    jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required;"
    assert incremental(port, 1, [(BROKER, "0", [("sasl.jaas.config", SET, jaas)])]) == [0]
    entry = by_name(describe(port, 1, BROKER, "0", keys=["sasl.jaas.config"], synonyms=True))["sasl.jaas.config"]
    assert (entry.value, entry.is_sensitive, entry.config_source) == (None, True, 2)
    assert [(s.value, s.source) for s in entry.synonyms] == [(None, 2)]


def test_create_topics_configs_match_describe(configured: MockCluster) -> None:
    ct = api.request_module(19)
    port = configured.brokers[0].port
    with WireClient(port) as w:
        resp = w.call(19, 7, ct.CreateTopicsRequest(topics=[ct.CreatableTopic(
            name="n", num_partitions=1, replication_factor=1, assignments=[],
            configs=[ct.CreatableTopicConfig(name="retention.ms", value="5")])], timeout_ms=1000))
    created = {c.name: (c.value, c.config_source) for c in resp.topics[0].configs}
    described = {c.name: (c.value, c.config_source) for c in describe(port, 1, TOPIC, "n").configs}
    assert created == described and created["retention.ms"] == ("5", 1)


def test_produce_policy_follows_alter_configs(single: MockCluster) -> None:
    """What Produce enforces changes with the next request after AlterConfigs / IncrementalAlterConfigs."""
    single.create_topic("p", 1)
    port = single.brokers[0].port

    def send(key: bytes | None, codec: int = 0, size: int = 10) -> Any:
        data = rec.build_batch([(key, b"v" * size)], compression=codec)
        with WireClient(port) as w:
            return w.call(0, 9, produce_body(9, "p", 0, data)).responses[0].partition_responses[0]

    assert send(None).error_code == 0
    assert alter(port, 1, [(TOPIC, "p", {"message.timestamp.type": "LogAppendTime", "compression.type": "gzip",
                                         "cleanup.policy": "compact"})]) == [(0, None)]
    stamped = send(b"k")
    assert stamped.error_code == 0 and stamped.log_append_time_ms > 0
    last = single.state.topics["p"].partitions[0].batches[-1]
    header = rec.parse_batch_header(b"".join(bytes(b) for b in last.buffers))
    assert header.compression == rec.GZIP and header.timestamp_type == 1
    assert send(None).error_code == ErrorCode.INVALID_RECORD  # compacted topics need keys
    assert incremental(port, 0, [(TOPIC, "p", [("cleanup.policy", DELETE, None),
                                               ("max.message.bytes", SET, "200")])]) == [0]
    assert send(None).error_code == 0
    assert send(b"k", size=500).error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert incremental(port, 1, [(BROKER, "", [("message.max.bytes", SET, "150")])]) == [0]
    assert send(b"k", size=100).error_code == 0  # the topic's override wins over the broker's
    assert incremental(port, 1, [(TOPIC, "p", [("max.message.bytes", DELETE, None)])]) == [0]
    assert send(b"k", size=100).error_code == ErrorCode.MESSAGE_TOO_LARGE  # now the broker's 150 applies


def test_list_offsets_by_time_looks_past_compacted_batches(single: MockCluster) -> None:
    """After compaction removed the record a timestamp search lands on, ListOffsets finds the next one."""
    from mockbroker import batches

    # each batch a segment of its own: all but the newest may be cleaned
    topic = single.create_topic("lo", 1, config={"cleanup.policy": "compact", "segment.bytes": "14"})
    log = topic.partitions[0]
    now = single.state.clock.now_ms()

    def put(*items: tuple[bytes, int]) -> None:
        data = rec.build_batch([(k, b"v", [], ts) for k, ts in items], base_offset=log.next_offset)
        log.append(batches.stored_batch(memoryview(data), log.next_offset, 0))

    single.call(put, (b"a", now), (b"b", now + 5000))  # offsets 0, 1: b is superseded below
    single.call(put, (b"b", now + 6000))  # offset 2
    single.call(put, (b"z", now + 7000))  # offset 3, never cleaned
    assert single.run_log_cleaner() == 1
    lo = api.request_module(2)
    with WireClient(single.brokers[0].port) as w:
        resp = w.call(2, 7, lo.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[lo.ListOffsetsTopic(
            name="lo", partitions=[lo.ListOffsetsPartition(partition_index=0, timestamp=now + 5000)])]))
    part = resp.topics[0].partitions[0]
    assert (part.error_code, part.offset, part.timestamp) == (0, 2, now + 6000)
