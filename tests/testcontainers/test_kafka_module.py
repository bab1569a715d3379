"""What testcontainers-python's own Kafka and Redpanda module tests check (tests/community/kafka/test_kafka.py and
test_redpanda.py in testcontainers-python), written here for mockbroker.testcontainers.

The module is written against testcontainers' public API only: its one import line from mockbroker names what a
user imports from ``testcontainers.community.kafka`` and ``testcontainers.core.network``; put those imports back
and it is a test module for a real Kafka in Docker (test_upstream_parity.py checks that every name and method it
uses is testcontainers').  The scenarios are theirs: a record produced and counted with kafka-python; the same in
KRaft mode and on a custom port; a container on a Docker network with ``limit_broker_to_first_host``; Redpanda's
records after creating the topic, with two image versions; Redpanda's Schema Registry over HTTP.
"""

import json

import pytest
import requests
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from mockbroker.testcontainers import KafkaContainer, Network, RedpandaContainer, kafka_config

TOPIC = "test-topic"


def count_after_one_record(bootstrap: str, create_topic: bool = False) -> int:
    """Produce one record to TOPIC (creating it first if asked) and return the partition's end offset."""
    if create_topic:
        admin = KafkaAdminClient(bootstrap_servers=[bootstrap])
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
        admin.close()
    producer = KafkaProducer(bootstrap_servers=[bootstrap])
    producer.send(TOPIC, b"verification message").get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=[bootstrap])
    partition = TopicPartition(TOPIC, 0)
    consumer.assign([partition])
    consumer.seek_to_beginning()
    end = consumer.end_offsets([partition])[partition]
    consumer.close()
    return end


def test_a_record_round_trips_through_a_kafka_container():
    with KafkaContainer() as kafka:
        assert count_after_one_record(kafka.get_bootstrap_server()) == 1


def test_kraft_mode():
    with KafkaContainer().with_kraft() as kafka:
        assert kafka.kraft_enabled
        assert count_after_one_record(kafka.get_bootstrap_server()) == 1


def test_a_custom_container_port():
    with KafkaContainer(port=9888) as kafka:
        assert kafka.port == 9888
        assert count_after_one_record(kafka.get_bootstrap_server()) == 1


def test_a_container_on_a_network_limited_to_its_first_host(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(kafka_config, "limit_broker_to_first_host", True)
    with Network() as network:
        kafka = KafkaContainer()
        kafka.with_network(network)
        kafka.with_network_aliases("kafka")
        with kafka:
            admin = KafkaAdminClient(bootstrap_servers=[kafka.get_bootstrap_server()])
            assert admin.describe_cluster()["brokers"]
            admin.close()


def test_a_record_round_trips_through_redpanda():
    with RedpandaContainer() as redpanda:
        assert count_after_one_record(redpanda.get_bootstrap_server(), create_topic=True) == 1


@pytest.mark.parametrize("tag", ["v23.1.13", "v25.3.6"])
def test_redpanda_image_versions(tag: str):
    with RedpandaContainer(image=f"docker.redpanda.com/redpandadata/redpanda:{tag}") as redpanda:
        assert count_after_one_record(redpanda.get_bootstrap_server(), create_topic=True) == 1


def test_redpandas_schema_registry():
    with RedpandaContainer() as redpanda:
        subjects = f"{redpanda.get_schema_registry_address()}/subjects"
        registered = requests.post(f"{subjects}/test-subject-value/versions",
                                   data=json.dumps({"schema": json.dumps({"type": "string"})}),
                                   headers={"Content-Type": "application/vnd.schemaregistry.v1+json"}, timeout=10)
        assert registered.status_code == 200
        listed = requests.get(subjects, timeout=10)
        assert listed.status_code == 200 and "test-subject-value" in listed.json()
