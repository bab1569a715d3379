"""testcontainers-python's Kafka module tests, run against mockbroker.testcontainers (no Docker).

The bodies are testcontainers-python's own (Apache-2.0), tests/community/kafka/test_kafka.py (git blob
4bec6950f4ac05d1717f63fa4d5000f19237b178) and tests/community/kafka/test_redpanda.py (git blob
385f98713e29e422a59ba9942dd75735d5192505), in one module; the ONLY difference is the import lines:

    from testcontainers.community.kafka import KafkaContainer, kafka_config
    from testcontainers.core.network import Network
    from testcontainers.community.kafka import RedpandaContainer

became the one ``from mockbroker.testcontainers import ...`` below.  test_upstream_parity.py checks that
against those blobs in the mirror of testcontainers-python.
"""

from json import dumps

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from requests import get, post

from mockbroker.testcontainers import KafkaContainer, Network, RedpandaContainer, kafka_config


def test_kafka_producer_consumer():
    with KafkaContainer() as container:
        produce_and_consume_kafka_message(container)


def test_kafka_with_kraft_producer_consumer():
    with KafkaContainer().with_kraft() as container:
        assert container.kraft_enabled
        produce_and_consume_kafka_message(container)


def test_kafka_producer_consumer_custom_port():
    with KafkaContainer(port=9888) as container:
        assert container.port == 9888
        produce_and_consume_kafka_message(container)


def test_kafka_on_networks(monkeypatch: pytest.MonkeyPatch):
    """
    this test case comes from testcontainers/testcontainers-python#637
    """
    monkeypatch.setattr(kafka_config, "limit_broker_to_first_host", True)

    with Network() as network:
        kafka_ctr = KafkaContainer()
        kafka_ctr.with_network(network)
        kafka_ctr.with_network_aliases("kafka")

        with kafka_ctr:
            print("started")  # Will not reach here and timeout
            admin_client = KafkaAdminClient(bootstrap_servers=[kafka_ctr.get_bootstrap_server()])
            print(admin_client.describe_cluster())


def produce_and_consume_kafka_message(container):
    topic = "test-topic"
    bootstrap_server = container.get_bootstrap_server()

    producer = KafkaProducer(bootstrap_servers=[bootstrap_server])
    producer.send(topic, b"verification message")
    producer.flush()
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=[bootstrap_server])
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning()
    assert consumer.end_offsets([tp])[tp] == 1, "Expected exactly one test message to be present on test topic !"


def test_redpanda_producer_consumer():
    with RedpandaContainer() as container:
        produce_and_consume_message(container)


@pytest.mark.parametrize("version", ["v23.1.13", "v25.3.6"])
def test_redpanda_confluent_version(version):
    with RedpandaContainer(image=f"docker.redpanda.com/redpandadata/redpanda:{version}") as container:
        produce_and_consume_message(container)


def test_schema_registry():
    with RedpandaContainer() as container:
        address = container.get_schema_registry_address()
        subject_name = "test-subject-value"
        url = f"{address}/subjects"

        payload = {"schema": dumps({"type": "string"})}
        headers = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
        create_result = post(f"{url}/{subject_name}/versions", data=dumps(payload), headers=headers)
        assert create_result.status_code == 200

        result = get(url)
        assert result.status_code == 200
        assert subject_name in result.json()


def produce_and_consume_message(container):
    topic = "test-topic"
    bootstrap_server = container.get_bootstrap_server()

    admin = KafkaAdminClient(bootstrap_servers=[bootstrap_server])
    admin.create_topics([NewTopic(topic, 1, 1)])

    producer = KafkaProducer(bootstrap_servers=[bootstrap_server])
    future = producer.send(topic, b"verification message")
    future.get(timeout=10)
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=[bootstrap_server])
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning()
    assert consumer.end_offsets([tp])[tp] == 1, "Expected exactly one test message to be present on test topic !"
