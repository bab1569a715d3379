"""The pytest plugin's ``mock_kafka`` fixture: the test's ``mock_cluster`` (the marker's options apply), with
every client the test constructs redirected to it, and a Schema Registry beside it."""

from __future__ import annotations

import gc

import confluent_kafka
import pytest

from tests.mock_kafka import app_orders

pytestmark = pytest.mark.clients
ORIGINAL = {"Producer": confluent_kafka.Producer}


@pytest.mark.mockbroker(topics={"orders": 2})
def test_the_fixture_is_the_active_cluster(mock_kafka, mock_cluster) -> None:
    assert mock_kafka is mock_cluster and len(mock_kafka.state.topics["orders"].partitions) == 2
    app_orders.produce_avro("orders", [{"id": 9, "item": "lamp"}])
    assert app_orders.consume_avro("orders", "fixture-group", 1) == [{"id": 9, "item": "lamp"}]
    assert mock_kafka.schema_registry_url is not None
    gc.collect()  # a SerializingProducer with an AvroSerializer is in a reference cycle: gone before the cluster


def test_nothing_is_patched_without_the_fixture() -> None:
    assert confluent_kafka.Producer is ORIGINAL["Producer"]
