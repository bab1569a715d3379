"""Strict configs (pure unit tests): unknown broker and topic config names are refused naming the
nearest known one, values are range-checked as Kafka's ConfigDef does, and the ``mock.*`` keys page
(docs/configuration-mock-keys.md) matches BROKER_DEFAULTS.

Run ``python -m tests.state.test_config_strict`` to rewrite the docs page after changing a mock key.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state import config_catalogue as cat
from mockbroker.state.cluster import ClusterState
from mockbroker.state.config import BROKER_DEFAULTS, TOPIC_TO_BROKER, BrokerConfig, TopicConfig, topic_names
from mockbroker.state.memory_cap import TOTAL_CAP
from mockbroker.state.topic_rules import KAFKA_TOPIC_CONFIGS

DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration-mock-keys.md"


def refused(fn: object, *args: object) -> str:
    with pytest.raises(KafkaError) as info:
        fn(*args)  # type: ignore[operator]
    assert info.value.code == ErrorCode.INVALID_CONFIG
    return info.value.message


# -- names ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "hint"), [
    ("auto.create.topic.enable", "did you mean 'auto.create.topics.enable'?"),
    ("num.partition", "did you mean 'num.partitions'?"),
    ("mock.journal.max.entrie", "did you mean 'mock.journal.max.entries'?"),
    ("retention.ms", "it is a topic config; the broker's default for it is 'log.retention.ms'"),
    ("max.message.bytes", "the broker's default for it is 'message.max.bytes'"),
])
def test_an_unknown_broker_name_is_refused_naming_the_nearest(name: str, hint: str) -> None:
    message = refused(BrokerConfig, {name: "1"})
    assert message.startswith(f"unknown broker config '{name}'") and message.endswith(hint)


def test_a_name_nothing_like_a_known_one_is_refused_without_a_guess() -> None:
    assert refused(BrokerConfig, {"zzzz": "1"}) == "unknown broker config 'zzzz'"


@pytest.mark.parametrize("name", [
    "auto.create.topics.enable", "mock.produce.validation", "min.insync.replicas", "log.segment.bytes",
    "listeners", "listener.security.protocol.map", "ssl.keystore.location", "ssl.client.auth",
    "listener.name.client.ssl.client.auth", "listener.name.client.oauthbearer.sasl.jaas.config",
])
def test_known_names_pass(name: str) -> None:
    value = {"listeners": "PLAINTEXT://127.0.0.1:0", "listener.security.protocol.map": "CLIENT:SSL",
             "ssl.client.auth": "none", "listener.name.client.ssl.client.auth": "none",
             "log.segment.bytes": "1048576"}.get(name, "2")
    value = "strict" if name == "mock.produce.validation" else "true" if name.endswith(".enable") else value
    assert BrokerConfig({name: value}).get(name) is not None


def test_every_key_the_mock_implements_is_known() -> None:
    for name, (default, _kind) in BROKER_DEFAULTS.items():
        BrokerConfig({name: default})
    for name in TOPIC_TO_BROKER:
        assert name in topic_names()
    assert set(KAFKA_TOPIC_CONFIGS) <= topic_names()


def test_dynamic_broker_configs_keep_kafkas_custom_names() -> None:
    """AlterConfigs stores names Kafka does not define (Kafka's controller checks only the broker id),
    so only the start-up configs are strict."""
    config = BrokerConfig()
    config.set("custom.plugin.setting", "x")
    assert config.get("custom.plugin.setting") == "x"
    assert BrokerConfig({"custom.plugin.setting": "x"}, strict=False).get("custom.plugin.setting") == "x"


@pytest.mark.parametrize(("name", "hint"), [
    ("retention.msx", "did you mean 'retention.ms'?"),
    ("log.retention.ms", "it is a broker config; the topic's is 'retention.ms'"),
    ("message.max.bytes", "the topic's is 'max.message.bytes'"),
])
def test_an_unknown_topic_name_is_refused_naming_the_nearest(name: str, hint: str) -> None:
    message = refused(TopicConfig, BrokerConfig(), {name: "1"})
    assert message.startswith(f"unknown topic config '{name}'") and message.endswith(hint)


def test_create_topic_refuses_an_unknown_topic_config() -> None:
    state = ClusterState({})
    assert "did you mean 'cleanup.policy'" in refused(state.create_topic, "t", 1, 1, {"cleanup.polcy": "compact"})
    assert "t" not in state.topics


def test_the_wire_check_keeps_kafkas_message_and_adds_the_hint() -> None:
    message = refused(ClusterState({}).check_topic_configs, {"retention.msx": "1"})
    assert message == "Unknown topic config name: retention.msx (did you mean retention.ms?)"


# -- values -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "value", "words"), [
    ("num.partitions", "-5", "at least 1"),
    ("num.partitions", "0", "at least 1"),
    ("default.replication.factor", "0", "at least 1"),
    ("message.max.bytes", "-1", "at least 0"),
    ("fetch.max.bytes", "100", "at least 1024"),
    ("socket.request.max.bytes", "0", "at least 1"),
    ("transaction.max.timeout.ms", "0", "at least 1"),
    ("log.retention.check.interval.ms", "0", "at least 1"),
    ("log.cleaner.backoff.ms", "-1", "at least 0"),
    ("log.cleaner.min.cleanable.ratio", "1.5", "in [0, 1]"),
    ("group.consumer.heartbeat.interval.ms", "0", "at least 1"),
    ("offsets.topic.replication.factor", "0", "at least 1"),
    ("mock.journal.max.entries", "-1", "at least 0"),
    ("mock.log.max.total.bytes", "-2", "at least -1"),
    ("min.insync.replicas", "0", "at least 1"),  # a Kafka name the mock stores: checked all the same
    ("min.insync.replicas", "two", "a number"),
    ("delete.topic.enable", "maybe", "true or false"),
    ("num.partitions", "many", "a number"),
    ("auto.create.topics.enable", "yes", "true or false"),
    ("compression.type", "brotli", "one of producer"),
    ("log.message.timestamp.type", "WallClock", "CreateTime"),
    ("log.cleanup.policy", "compact,forever", "delete, compact"),
    ("mock.produce.validation", "lenient", "strict, envelope"),
])
def test_broker_values_out_of_range_are_refused(name: str, value: str, words: str) -> None:
    message = refused(BrokerConfig, {name: value})
    assert name in message and words in message


@pytest.mark.parametrize(("name", "value"), [
    ("num.partitions", "1"), ("message.max.bytes", "0"), ("log.cleaner.min.cleanable.ratio", "1"),
    ("log.cleanup.policy", "compact,delete"), ("mock.log.max.total.bytes", "-1"), ("connections.max.idle.ms", "-1"),
    ("log.retention.ms", "-1"), ("socket.send.buffer.bytes", "-1"),
])
def test_values_at_the_bounds_pass(name: str, value: str) -> None:
    BrokerConfig({name: value})


@pytest.mark.parametrize(("name", "value", "words"), [
    ("retention.ms", "-2", "at least -1"),
    ("segment.bytes", "1", "at least 14"),
    ("min.cleanable.dirty.ratio", "2", "in [0, 1]"),
    ("cleanup.policy", "forever", "delete, compact"),
    ("message.timestamp.type", "Now", "CreateTime"),
    ("max.message.bytes", "-1", "at least 0"),
])
def test_topic_values_out_of_range_are_refused(name: str, value: str, words: str) -> None:
    message = refused(TopicConfig, BrokerConfig(), {name: value})
    assert name in message and words in message


def test_the_range_tables_name_only_known_configs() -> None:
    assert set(cat.BROKER_RANGES) <= set(BROKER_DEFAULTS) | set(cat.BROKER_CONFIGS)
    assert set(cat.TOPIC_RANGES) <= set(cat.TOPIC_CONFIGS)


# -- the docs page of mock.* keys ---------------------------------------------------------------------
COMPUTED_DEFAULTS = {TOTAL_CAP: "half the machine's memory"}


def render_mock_keys() -> str:
    rows = []
    for name in sorted(n for n in BROKER_DEFAULTS if n.startswith("mock.")):
        text = cat.config_text(BROKER_DEFAULTS[name][0])
        default = COMPUTED_DEFAULTS.get(name) or (f"`{text}`" if text else "(empty)")
        spec = cat.BROKER_CONFIGS[name]
        doc = spec.doc.removeprefix("Mock: ")
        rows.append(f"| `{name}` | {default} | {'yes' if spec.dynamic else 'no'} | {doc} |")
    return "\n".join([
        "# The mock's own broker configs (`mock.*`)",
        "",
        "Keys Kafka does not have: they change how the mock behaves. Pass them as any broker config:",
        "`MockCluster(config={...})`, `mockbroker serve --config KEY=VALUE`, or a scenario's `config:`.",
        "\"Dynamic\" ones may also be changed while the cluster runs (IncrementalAlterConfigs on the broker).",
        "An unknown `mock.*` key (a typo) is refused, naming the nearest known one.",
        "",
        "<!-- generated from mockbroker/state/config.py (BROKER_DEFAULTS) and config_catalogue.py;",
        "     tests/state/test_config_strict.py checks it: `python -m tests.state.test_config_strict` rewrites it -->",
        "",
        "| Key | Default | Dynamic | Meaning |",
        "| --- | --- | --- | --- |",
        *rows,
        "",
    ])


def test_every_mock_key_is_in_the_catalogue() -> None:
    mock_keys = {n for n in BROKER_DEFAULTS if n.startswith("mock.")}
    assert mock_keys == {n for n in cat.BROKER_CONFIGS if n.startswith("mock.")}


def test_the_mock_keys_page_matches_broker_defaults() -> None:
    assert DOCS_PAGE.read_text() == render_mock_keys(), (
        f"{DOCS_PAGE} is out of date: run python -m tests.state.test_config_strict")


if __name__ == "__main__":
    DOCS_PAGE.write_text(render_mock_keys())
    print(f"wrote {DOCS_PAGE}")
