"""Every broker config Kafka 4.x documents is known (mockbroker.state.kafka_broker_configs): the strict
config path that ``serve --config`` and ``MockCluster(config=...)`` take accepts each of them, values are
checked by Kafka's type, the mock's own entries agree with Kafka's facts, and a name Kafka does not
know is still refused with one line naming the nearest.  Pure unit tests of state."""

from __future__ import annotations

import pytest

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state import config_catalogue as cat
from mockbroker.state.config import BrokerConfig, broker_names
from mockbroker.state.kafka_broker_configs import KAFKA_BROKER_CONFIGS

# a value each name takes where Kafka has no default, or where the mock checks the value further
_SAMPLES = {cat.BOOLEAN: "true", cat.STRING: "x", cat.INT: "1", cat.SHORT: "1", cat.LONG: "1", cat.DOUBLE: "0.5",
            cat.LIST: "x", cat.CLASS: "org.example.Plugin", cat.PASSWORD: "secret"}
_VALUES = {"listeners": "PLAINTEXT://127.0.0.1:0", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT",
           "replica.selector.class": "", "compression.type": "producer", "log.cleanup.policy": "delete",
           "log.message.timestamp.type": "CreateTime", "log.segment.bytes": "1048576"}


def sample_value(name: str) -> str:
    """Kafka's default for ``name`` when it has one, else a value of its type."""
    type_, default, _mode = KAFKA_BROKER_CONFIGS[name]
    if name in _VALUES:
        return _VALUES[name]
    return default if default not in (None, "") else _SAMPLES[type_]


def test_the_share_coordinator_state_topic_names_are_accepted() -> None:
    # the replication factor makes __share_group_state (state/internal_topics.py): typed; min.isr is kept as text
    assert BrokerConfig({"share.coordinator.state.topic.replication.factor": "1"}).get(
        "share.coordinator.state.topic.replication.factor") == 1
    min_isr = "share.coordinator.state.topic.min.isr"
    assert BrokerConfig({min_isr: "1"}).get(min_isr) == "1"


def test_every_documented_broker_config_is_accepted_by_the_strict_path() -> None:
    refused = {}
    for name in KAFKA_BROKER_CONFIGS:
        try:
            BrokerConfig({name: sample_value(name)})
        except KafkaError as exc:
            refused[name] = exc.message
    assert refused == {}
    assert set(KAFKA_BROKER_CONFIGS) <= broker_names()


def test_all_documented_names_at_once_are_accepted() -> None:
    config = BrokerConfig({name: sample_value(name) for name in KAFKA_BROKER_CONFIGS})
    assert config.get("share.coordinator.state.topic.min.isr") == "2"
    assert config.get("group.coordinator.background.threads") == "2"


@pytest.mark.parametrize(("name", "value", "words"), [
    ("share.coordinator.state.topic.replication.factor", "three", "a number expected"),
    ("log.cleaner.enable", "yes", "true or false expected"),
    ("log.cleaner.io.buffer.load.factor", "high", "a number expected"),
])
def test_a_documented_name_with_a_value_of_the_wrong_type_is_refused(name: str, value: str, words: str) -> None:
    with pytest.raises(KafkaError) as info:
        BrokerConfig({name: value})
    message = str(info.value.message)
    assert info.value.code == ErrorCode.INVALID_CONFIG and name in message and words in message


@pytest.mark.parametrize(("name", "nearest"), [
    ("share.coordinator.state.topic.replication.factr", "share.coordinator.state.topic.replication.factor"),
    ("share.coordinator.state.topic.min.isrs", "share.coordinator.state.topic.min.isr"),
    ("zookeeper.connect", None),  # Kafka 4 has no ZooKeeper
    ("inter.broker.protocol.version", None),  # removed with it (docs/documentation/zk2kraft.html)
])
def test_a_name_kafka_does_not_know_is_still_refused_with_one_line(name: str, nearest: str | None) -> None:
    with pytest.raises(KafkaError) as info:
        BrokerConfig({name: "1"})
    message = str(info.value.message)
    assert info.value.code == ErrorCode.INVALID_CONFIG and "\n" not in message
    assert message.startswith(f"unknown broker config {name!r}")
    if nearest is not None:
        assert message.endswith(f"did you mean {nearest!r}?")


def test_the_mocks_own_entries_agree_with_kafkas_facts() -> None:
    """Type, default and whether AlterConfigs may change it, for the names both tables hold; the
    exceptions are the mock's documented choices (listeners bound at start, node.id given per broker)."""
    differ = {}
    for name, spec in cat.BROKER_CONFIGS.items():
        if name not in KAFKA_BROKER_CONFIGS:
            continue
        type_, default, mode = KAFKA_BROKER_CONFIGS[name]
        if (spec.type, spec.default, spec.dynamic) != (type_, default, mode != "r"):
            differ[name] = ((spec.type, spec.default, spec.dynamic), (type_, default, mode))
    assert set(differ) == {"listeners", "node.id"}, differ


def test_every_entry_is_well_formed() -> None:
    for name, (type_, default, mode) in KAFKA_BROKER_CONFIGS.items():
        assert name == name.strip().lower() or name.startswith("zookeeper."), name
        assert type_ in _SAMPLES and mode in ("r", "b", "c"), name
        assert default is None or isinstance(default, str), name
        assert not name.startswith(("zookeeper.", "password.encoder.")), name
    spec = cat.broker_spec("share.coordinator.state.topic.replication.factor")
    assert spec is not None and (spec.type, spec.default, spec.dynamic) == (cat.SHORT, "3", False)
    assert cat.broker_spec("delegation.token.secret.key").sensitive  # type: ignore[union-attr]
