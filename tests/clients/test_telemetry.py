"""KIP-714 client telemetry with real clients: a CLIENT_METRICS subscription made through kafka-python's
admin client (confluent-kafka 2.16's ResourceType has no CLIENT_METRICS), a confluent-kafka producer
whose librdkafka then pushes its metrics, read back through MockCluster.telemetry(), GET /telemetry
and the journal; without a subscription, no pushes (Kafka's default); and without a telemetry receiver
(mock.telemetry.receiver, off by default, as Kafka without a ClientTelemetry reporter) the telemetry APIs
are not offered, so librdkafka neither asks nor prints its GETSUBSCRIPTIONS line."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from mockbroker.cluster import MockCluster
from mockbroker.protocol import api
from mockbroker.telemetry.otlp import encode_gauges
from tests.broker.wire import WireClient

pytestmark = pytest.mark.clients
QUEUE_TIME = "org.apache.kafka.producer.record.queue.time.avg"
RECEIVER = {"mock.telemetry.receiver": True}
# a confluent-kafka producer in its own process, so its librdkafka's stderr is the test's to read
PRODUCE_ONE = """
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1]})
p.produce("t", b"v")
assert p.flush(15) == 0
p.poll(0.5)  # GetTelemetrySubscriptions goes out right after the first ApiVersions, if it is offered
"""


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(topics={"t": 1}, control_port=0, config=RECEIVER) as c:
        yield c


@pytest.fixture
def admin(cluster: MockCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    yield client
    client.close()


def wait_for(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"condition not met within {timeout} s")


def subscribe(admin: KafkaAdminClient, name: str, **configs: str) -> Any:
    resource = ConfigResource(ConfigResourceType.CLIENT_METRICS, name, configs=configs)
    return admin.alter_configs([resource], raise_on_unknown=False)["client_metrics"][name]


def producing(cluster: MockCluster, client_id: str) -> Producer:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": client_id, "linger.ms": 5})
    for _ in range(20):
        p.produce("t", b"v", partition=0)
    assert p.flush(15) == 0
    return p


def pushed(cluster: MockCluster, client_id: str, metric: str) -> dict[str, Any] | None:
    for client in cluster.telemetry().values():
        if client["client_id"] == client_id and metric in client["metrics"]:
            return client
    return None


def test_subscription_made_by_admin_client_and_librdkafka_pushes(cluster: MockCluster, admin: KafkaAdminClient) -> None:
    assert subscribe(admin, "producers", metrics="org.apache.kafka.producer.", **{"interval.ms": "200"}) == "OK"
    described = admin.describe_configs([ConfigResource(ConfigResourceType.CLIENT_METRICS, "producers")])
    configs = described["client_metrics"]["producers"]
    assert configs["interval.ms"]["value"] == "200" and configs["metrics"]["value"] == "org.apache.kafka.producer."
    assert configs["interval.ms"]["config_source"] == "DYNAMIC_CLIENT_METRICS_CONFIG"
    assert admin.list_config_resources(["CLIENT_METRICS"]) == {"client_metrics": ["producers"]}

    p = producing(cluster, "metered")
    client = wait_for(lambda: pushed(cluster, "metered", QUEUE_TIME))
    p.poll(0)
    assert client["requested_metrics"] == ["org.apache.kafka.producer."]
    assert client["push_interval_ms"] == 200 and client["client_software_name"] == "confluent-kafka-python"
    assert all(name.startswith("org.apache.kafka.producer.") for name in client["metrics"])
    queue_time = client["metrics"][QUEUE_TIME]
    assert queue_time["type"] == "gauge" and isinstance(queue_time["value"], (int, float))

    with urllib.request.urlopen(f"{cluster.control_url}/telemetry", timeout=10) as reply:
        served = json.load(reply)["clients"]
    assert QUEUE_TIME in next(c for c in served if c["client_id"] == "metered")["metrics"]
    pushes = cluster.journal.entries(api="PushTelemetry", client_id="metered")
    assert any(QUEUE_TIME in e.about.get("telemetry", {}).get("metrics", []) for e in pushes)
    assert not [e for e in pushes if e.errors]


def test_match_limits_the_subscription_to_matching_clients(cluster: MockCluster, admin: KafkaAdminClient) -> None:
    assert subscribe(admin, "only-a", metrics="*", match="client_id=app-a.*", **{"interval.ms": "200"}) == "OK"
    a, b = producing(cluster, "app-a-1"), producing(cluster, "app-b-1")
    wait_for(lambda: pushed(cluster, "app-a-1", QUEUE_TIME))
    a.poll(0)
    b.poll(0)
    others = [c for c in cluster.telemetry().values() if c["client_id"] == "app-b-1"]
    assert others and all(c["requested_metrics"] == [] and c["pushes"] == 0 for c in others)


def test_without_subscription_clients_push_nothing(cluster: MockCluster) -> None:
    p = producing(cluster, "quiet")
    wait_for(lambda: any(c["client_id"] == "quiet" for c in cluster.telemetry().values()))
    p.poll(0)
    assert all(c["pushes"] == 0 for c in cluster.telemetry().values())
    assert cluster.journal.entries(api="PushTelemetry") == []


def librdkafka_stderr(cluster: MockCluster) -> str:
    done = subprocess.run([sys.executable, "-c", PRODUCE_ONE, cluster.bootstrap_servers], capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stderr


@pytest.mark.parametrize("receiver", [False, True])
def test_telemetry_apis_only_with_a_receiver(receiver: bool) -> None:
    """Kafka's ApiVersionsResponse leaves out GetTelemetrySubscriptions and PushTelemetry unless a telemetry
    receiver is configured; librdkafka then never asks, and prints nothing about telemetry on stderr."""
    config = RECEIVER if receiver else {}
    with MockCluster(topics={"t": 1}, control_port=0, config=config) as c:
        stderr = librdkafka_stderr(c)
        asked = c.journal.entries(api="GetTelemetrySubscriptions")
        with urllib.request.urlopen(f"{c.control_url}/telemetry", timeout=10) as reply:
            served = json.load(reply)
    assert ("GETSUBSCRIPTIONS" in stderr) is receiver, stderr
    assert bool(asked) is receiver
    assert served["receiver"] is receiver and bool(served["clients"]) is receiver


def test_pushes_without_a_receiver_are_answered_and_go_nowhere() -> None:
    """A client that pushes although it was not offered the API (an old connection, a client ignoring
    ApiVersions) is answered as Kafka answers it with no receiver plugin: NONE, metrics exported nowhere."""
    with MockCluster(topics={"t": 1}) as c:
        c.subscribe_client_metrics("all", metrics="*", interval_ms=200)
        with WireClient(int(c.bootstrap_servers.rsplit(":", 1)[1])) as w:
            sub = w.call(71, 0, api.request_module(71).GetTelemetrySubscriptionsRequest(client_instance_id=bytes(16)))
            assert sub.error_code == 0 and sub.requested_metrics == ["*"]
            push = api.request_module(72).PushTelemetryRequest(
                client_instance_id=sub.client_instance_id, subscription_id=sub.subscription_id, terminating=False,
                compression_type=0, metrics=encode_gauges({}, {"m": 1.0}))
            assert w.call(72, 0, push).error_code == 0
        [client] = c.telemetry().values()
        assert client["metrics"] == {} and client["pushes"] == 0


def test_bad_client_metrics_configs_are_refused(cluster: MockCluster, admin: KafkaAdminClient) -> None:
    assert subscribe(admin, "s", **{"interval.ms": "50"}) == ("[Error 42] InvalidRequestError: Invalid value 50 for "
                                                             "interval.ms, interval must be between 100 and 3600000 "
                                                             "(1 hour)")
    assert subscribe(admin, "s", **{"interval.ms": "abc"}) == ("[Error 40] InvalidConfigurationError: Invalid value "
                                                              "abc for configuration interval.ms: Not a number of "
                                                              "type INT")
    assert subscribe(admin, "s", match="client_colour=red") == ("[Error 40] InvalidConfigurationError: Illegal client "
                                                               "matching pattern: client_colour=red")
    assert subscribe(admin, "s", match="client_id=[unclosed").startswith("[Error 40] InvalidConfigurationError")
    assert subscribe(admin, "s", frequency="1") == ("[Error 42] InvalidRequestError: Unknown client metrics "
                                                    "configuration: frequency")
    assert admin.list_config_resources(["CLIENT_METRICS"]) == {}  # none was made
