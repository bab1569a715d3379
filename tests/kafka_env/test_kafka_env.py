"""mockbroker.kafka_env: the images' naming rules, what is used, what is listed as not needed, and one line naming
the variable for everything refused (pure: no broker)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mockbroker.kafka_env import KafkaEnvError, config_name, read_env, variable_name

EXAMPLES = yaml.safe_load((Path(__file__).parent / "apache_examples.yaml").read_text())


@pytest.mark.parametrize(("variable", "prefix", "name"), [
    ("KAFKA_NUM_PARTITIONS", "KAFKA_", "num.partitions"),
    ("KAFKA_LISTENER_NAME_CLIENT_SCRAM___SHA___256_SASL_JAAS_CONFIG", "KAFKA_",
     "listener.name.client.scram-sha-256.sasl.jaas.config"),
    ("KAFKA_WITH__UNDERSCORE", "KAFKA_", "with_underscore"),
    # apache/kafka's wrapper drops every KAFKA_ (Java's String.replace), not only the prefix
    ("KAFKA_CONFLUENT_KAFKA_THING", "KAFKA_", "confluent.thing"),
    ("SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS", "SCHEMA_REGISTRY_", "kafkastore.bootstrap.servers"),
])
def test_the_images_naming_rules(variable: str, prefix: str, name: str) -> None:
    assert config_name(variable, prefix) == name


def test_variable_names_round_trip() -> None:
    for name in ("num.partitions", "listener.name.client.scram-sha-256.sasl.jaas.config", "with_underscore"):
        assert config_name(variable_name(name, "KAFKA_"), "KAFKA_") == name


def test_apache_single_node_example() -> None:
    kenv = read_env(EXAMPLES["single-node/plaintext/broker"])
    assert kenv.listeners == "PLAINTEXT_HOST://:9092,PLAINTEXT://:19092"  # the controller's listener is not served
    assert kenv.advertised_listeners == "PLAINTEXT_HOST://localhost:9092,PLAINTEXT://broker:19092"
    assert kenv.protocol_map == "PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT"
    assert kenv.configs == {"cluster.id": "4L6g3nShT-eMCtK--X86sw", "group.initial.rebalance.delay.ms": "0",
                            "offsets.topic.replication.factor": "1", "transaction.state.log.min.isr": "1",
                            "transaction.state.log.replication.factor": "1"}
    listed = {variable for variable, _why in kenv.not_needed}
    assert listed == {"KAFKA_NODE_ID", "KAFKA_PROCESS_ROLES", "KAFKA_CONTROLLER_QUORUM_VOTERS", "KAFKA_LOG_DIRS",
                      "KAFKA_CONTROLLER_LISTENER_NAMES", "KAFKA_INTER_BROKER_LISTENER_NAME", "KAFKA_LISTENERS"}
    assert not kenv.controller_only and kenv.voters == 1 and kenv.registry is None


def test_a_controller_alone_and_a_cluster_of_three() -> None:
    assert read_env(EXAMPLES["cluster/isolated/plaintext/controller-1"]).controller_only
    broker = read_env(EXAMPLES["cluster/isolated/plaintext/kafka-1"])
    assert not broker.controller_only and broker.voters == 3
    assert broker.listeners == "PLAINTEXT://:19092,PLAINTEXT_HOST://:9092"
    assert read_env(EXAMPLES["cluster/combined/plaintext/kafka-1"]).voters == 3


def test_listeners_derived_from_the_advertised_ones_as_the_images_do() -> None:
    kenv = read_env({"KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://kafka:9092,OUTSIDE://localhost:29092",
                     "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,OUTSIDE:PLAINTEXT"})
    assert kenv.listeners == "PLAINTEXT://0.0.0.0:9092,OUTSIDE://0.0.0.0:29092"


def test_testcontainers_cp_kafka_environment_is_taken() -> None:
    """What testcontainers-python's KafkaContainer sets on confluentinc/cp-kafka (ZooKeeper mode)."""
    kenv = read_env({"KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092",
                     "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                     "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER", "KAFKA_BROKER_ID": "1",
                     "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1", "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "1",
                     "KAFKA_LOG_FLUSH_INTERVAL_MESSAGES": "10000000", "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
                     "KAFKA_ZOOKEEPER_CONNECT": "localhost:2181", "KAFKA_HEAP_OPTS": "-Xmx1G",
                     "KAFKA_JMX_PORT": "9101", "KAFKA_CONFLUENT_SUPPORT_METRICS_ENABLE": "false"})
    assert kenv.configs == {"offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1",
                            "group.initial.rebalance.delay.ms": "0"}
    listed = dict(kenv.not_needed)
    assert "no ZooKeeper" in listed["KAFKA_ZOOKEEPER_CONNECT"]
    assert "Confluent Server" in listed["KAFKA_CONFLUENT_SUPPORT_METRICS_ENABLE"]
    assert {"KAFKA_BROKER_ID", "KAFKA_LOG_FLUSH_INTERVAL_MESSAGES"} <= set(listed)
    assert "KAFKA_HEAP_OPTS" not in listed and "KAFKA_JMX_PORT" not in listed  # the JVM's: not configs at all


@pytest.mark.parametrize(("env", "line"), [
    ({"KAFKA_NUM_PARTITONS": "3"},
     "KAFKA_NUM_PARTITONS: unknown broker config 'num.partitons': did you mean KAFKA_NUM_PARTITIONS (num.partitions)?"),
    ({"KAFKA_NUM_PARTITIONS": "three"}, "KAFKA_NUM_PARTITIONS: invalid value 'three' for num.partitions"),
    ({"KAFKA_ADVERTISED_PORT": "9092"}, "KAFKA_ADVERTISED_PORT: advertised.port is gone from Kafka"),
    ({"SCHEMA_REGISTRY_PORT": "8081"}, "SCHEMA_REGISTRY_PORT: PORT is deprecated, use SCHEMA_REGISTRY_LISTENERS"),
    ({"SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVER": "b:9092"},
     "SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVER: unknown schema registry setting 'kafkastore.bootstrap.server': "
     "did you mean SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS"),
    ({"SCHEMA_REGISTRY_LISTENERS": "https://0.0.0.0:8081"}, "https is not served"),
    ({"SCHEMA_REGISTRY_SCHEMA_COMPATIBILITY_LEVEL": "sideways"}, "'sideways' is not a compatibility level"),
    ({"SCHEMA_REGISTRY_KAFKASTORE_TOPIC": "_my_schemas"}, "keeps its schemas in _schemas"),
])
def test_refused_in_one_line_naming_the_variable(env: dict[str, str], line: str) -> None:
    with pytest.raises(KafkaEnvError) as caught:
        read_env(env)
    assert line in str(caught.value) and "\n" not in str(caught.value)


def test_schema_registry_variables() -> None:
    kenv = read_env({"SCHEMA_REGISTRY_HOST_NAME": "schema-registry", "SCHEMA_REGISTRY_LISTENERS": "http://0.0.0.0:18081",
                     "SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS": "PLAINTEXT://broker:29092,broker2:29092",
                     "SCHEMA_REGISTRY_SCHEMA_COMPATIBILITY_LEVEL": "full", "SCHEMA_REGISTRY_HEAP_OPTS": "-Xmx512M"})
    assert kenv.registry is not None and not kenv.kafka_given
    assert (kenv.registry.host, kenv.registry.port) == ("0.0.0.0", 18081)
    assert kenv.registry.kafkastore == "broker:29092,broker2:29092"
    assert kenv.registry.compatibility == "FULL"
    assert [variable for variable, _why in kenv.not_needed] == ["SCHEMA_REGISTRY_HOST_NAME"]


def test_nothing_set_is_nothing_read() -> None:
    kenv = read_env({"PATH": "/usr/bin", "MOCKBROKER_PORT": "9092"})
    assert not kenv.kafka_given and kenv.registry is None and kenv.configs == {} and kenv.summary() == []


def test_secrets_are_hidden_in_the_log_line() -> None:
    kenv = read_env({"KAFKA_SSL_KEYSTORE_PASSWORD": "s3cret", "KAFKA_SSL_KEY_PASSWORD": "k3y",
                     "KAFKA_LISTENER_NAME_SASL__SSL_PLAIN_SASL_JAAS_CONFIG": "PlainLoginModule required user_a=\"pw\";",
                     "KAFKA_NUM_PARTITIONS": "3"})
    line = "\n".join(kenv.summary())
    assert "s3cret" not in line and "k3y" not in line and "pw" not in line
    assert "ssl.keystore.password=[hidden]" in line and "num.partitions=3" in line


def test_java_properties_as_kafka_reads_them(tmp_path: Path) -> None:
    from mockbroker.kafka_env import read_properties

    path = tmp_path / "server.properties"
    path.write_text("# a comment\n! another\n\nnum.partitions=3\nlog.dirs : /tmp/a\nbroker.rack eu-1\n"
                    "listeners=PLAINTEXT://:9092,\\\n    CONTROLLER://:9093\nescaped=tab\\there \\u0041\n")
    assert read_properties(path) == [(4, "num.partitions", "3"), (5, "log.dirs", "/tmp/a"), (6, "broker.rack", "eu-1"),
                                     (7, "listeners", "PLAINTEXT://:9092,CONTROLLER://:9093"),
                                     (9, "escaped", "tab\there A")]


def test_the_variables_win_over_a_mounted_file(tmp_path: Path) -> None:
    (tmp_path / "server.properties").write_text("num.partitions=2\nprocess.roles=controller\n")
    kenv = read_env({"KAFKA_NUM_PARTITIONS": "5"}, tmp_path)
    assert kenv.configs == {"num.partitions": "5"} and kenv.controller_only
    assert read_env({}, tmp_path / "absent").kafka_given is False  # no file there: nothing read


def test_plain_users_of_a_jaas_files_kafka_server_sections() -> None:
    from mockbroker.kafka_env import jaas_file_users

    text = ('KafkaServer {\n org.apache.kafka.common.security.plain.PlainLoginModule required\n username="admin"\n'
            ' password="admin-secret" user_admin="admin-secret"\n user_alice="alice-secret";\n};\n'
            'sasl_ssl.KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="b"; };\n'
            'Client { org.apache.zookeeper.server.auth.DigestLoginModule required user_zk="no"; };\n')
    assert jaas_file_users(text) == {"admin": "admin-secret", "alice": "alice-secret", "bob": "b"}


def test_one_plain_user_parser_serves_jaas_files_and_listener_configs() -> None:
    """mockbroker.server.security.plain_users reads both: names with dashes and dots, quoted or bare values."""
    from mockbroker.server.security import jaas_plain_users, plain_users

    entry = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="x" '
             'user_svc-orders.eu="s1" user_bob=b2;')
    assert plain_users(entry) == {"svc-orders.eu": "s1", "bob": "b2"}
    assert jaas_plain_users({"listener.name.sasl_plaintext.plain.sasl.jaas.config": entry,
                             "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": 'user_no="x";'}) == {
        "svc-orders.eu": "s1", "bob": "b2"}
