"""mock_kafka around an application that hard-codes its production cluster (tests/mock_kafka/app_orders.py):
each client library's records round-trip through the mock cluster, which saw them (topics, journal,
registry); faults injected on the cluster act on the redirected clients."""

from __future__ import annotations

import gc

import pytest
import requests

from mockbroker import mock_kafka
from mockbroker.cluster import MockCluster
from tests.mock_kafka import app_orders

pytestmark = pytest.mark.clients

ORDERS = mock_kafka(topics={"orders": 1, "orders-avro": 1, "orders-py": 1})


def records(cluster: MockCluster, topic: str) -> int:
    return cluster.call(lambda: sum(p.high_watermark for p in cluster.state.topics[topic].partitions))


@ORDERS
def test_confluent_kafka_round_trip() -> None:
    values = [b"order-1", b"order-2", b"order-3"]
    app_orders.produce_confluent("orders", values)
    assert app_orders.consume_confluent("orders", "billing", 3) == values
    cluster = ORDERS.cluster
    assert records(cluster, "orders") == 3
    produces = cluster.journal.entries(api="Produce", client_id="orders-app")
    assert produces and all(not entry.errors for entry in produces)


@ORDERS
def test_avro_through_the_registry() -> None:
    orders = [{"id": 1, "item": "book"}, {"id": 2, "item": "pen"}]
    app_orders.produce_avro("orders-avro", orders)
    assert app_orders.consume_avro("orders-avro", "shipping", 2) == orders
    cluster = ORDERS.cluster
    assert records(cluster, "orders-avro") == 2
    subjects = requests.get(f"{cluster.schema_registry_url}/subjects", timeout=10).json()
    assert subjects == ["orders-avro-value"]
    gc.collect()  # a SerializingProducer with an AvroSerializer is in a reference cycle: gone before the cluster


@ORDERS
def test_kafka_python_round_trip() -> None:
    values = [b"py-1", b"py-2"]
    app_orders.produce_kafka_python("orders-py", values)
    assert app_orders.consume_kafka_python("orders-py", "audit", 2) == values
    cluster = ORDERS.cluster
    assert records(cluster, "orders-py") == 2
    assert cluster.journal.entries(api="Produce", client_id="orders-kafka-python")


@mock_kafka
def test_bare_decorator_and_auto_created_topic() -> None:
    app_orders.produce_confluent("created-on-produce", [b"x"])
    assert records(mock_kafka.cluster, "created-on-produce") == 1


@ORDERS
def test_a_fault_acts_on_the_redirected_client() -> None:
    cluster = ORDERS.cluster
    with cluster.fault(api="Produce", error="NOT_LEADER_OR_FOLLOWER", times=1) as rule:
        app_orders.produce_confluent("orders", [b"retried"])  # librdkafka retries and succeeds
    assert rule.hits == 1
    assert records(cluster, "orders") == 1
    produces = cluster.journal.entries(api="Produce", client_id="orders-app")
    assert [entry.errors for entry in produces][:2] == [["NOT_LEADER_OR_FOLLOWER"], []]


def test_the_console_shows_what_the_redirected_clients_wrote() -> None:
    """mock_kafka(control_port=0): the console of the cluster the application's clients were sent to shows the
    topic and the record they wrote (the application named kafka.prod.internal:9092)."""
    with mock_kafka(control_port=0, schema_registry=False) as cluster:
        app_orders.produce_confluent("console-orders", [b"seen-in-the-console"])
        page = requests.get(f"{cluster.console_url.split('?')[0]}topics/console-orders", timeout=10)
    assert page.status_code == 200 and "seen-in-the-console" in page.text


def test_the_decorated_function_keeps_its_name_and_arguments() -> None:
    @mock_kafka
    def place(order: int, *, express: bool = False) -> tuple[int, bool]:
        return order, express

    assert place.__name__ == "place" and place(7, express=True) == (7, True)


def test_pytest_fixtures_pass_through_the_decorator(tmp_path) -> None:
    @mock_kafka
    def uses(tmp_path) -> bool:
        return tmp_path.is_dir()

    assert uses(tmp_path)


ADMIN = mock_kafka(topics={"stock": 2}, schema_registry=False)


@ADMIN
def test_admin_clients_see_the_mock_cluster() -> None:
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaAdminClient

    confluent_admin = AdminClient({"bootstrap.servers": app_orders.BOOTSTRAP, **app_orders.SECURITY})
    assert "stock" in confluent_admin.list_topics(timeout=10).topics
    python_admin = KafkaAdminClient(bootstrap_servers=app_orders.BOOTSTRAP, security_protocol="SSL")
    try:
        assert "stock" in python_admin.list_topics()
    finally:
        python_admin.close()


@mock_kafka(topics={"tasks": 1}, schema_registry=False)
def test_a_share_consumer_is_redirected() -> None:
    from confluent_kafka import ShareConsumer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": app_orders.BOOTSTRAP})  # the group reads from the start
    resource = ConfigResource(ResourceType.GROUP, "workers", incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(10)
    app_orders.produce_confluent("tasks", [b"task-1"])
    consumer = ShareConsumer({"bootstrap.servers": app_orders.BOOTSTRAP, "group.id": "workers",
                              **app_orders.SECURITY})
    consumer.subscribe(["tasks"])
    try:
        got = None
        for _ in range(40):  # bounded: 40 polls of at most 0.5 s
            got = next((m for m in consumer.poll(0.5) if not m.error()), None)
            if got is not None:
                break
        assert got is not None and got.value() == b"task-1"
    finally:
        consumer.close()
