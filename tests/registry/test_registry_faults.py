"""Faults for the Schema Registry, met by confluent-kafka's own client and serializer: latency, an HTTP
5xx until cleared (the client retries, then raises 503), a 409 or 422 for one call, the registry down and
back up on the same port, a Produce fault on ``_schemas`` (50001, nothing registered), and the same
faults through the control API's actions and a scenario; bad fault fields get one line each."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from mockbroker.cluster import MockCluster

pytestmark = [pytest.mark.clients]
SCHEMA = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]})


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(schema_registry=True, control_port=0) as running:
        yield running


def serialize(cluster: MockCluster, topic: str = "orders") -> bytes:
    """What an application does: a fresh client (no cache) and the Avro serializer, auto-registering."""
    registry = SchemaRegistryClient({"url": cluster.schema_registry_url, "max.retries": 2,
                                     "retries.wait.ms": 10, "retries.max.wait.ms": 50})
    return AvroSerializer(registry, SCHEMA)({"id": 1}, SerializationContext(topic, MessageField.VALUE))


def test_latency_delays_without_failing(cluster: MockCluster) -> None:
    fault = cluster.registry_fault(latency_ms=200, times=1)
    assert serialize(cluster)[:1] == b"\x00"  # Confluent's wire format: magic byte, then the id
    assert fault.hits == 1


def test_a_5xx_until_cleared_reaches_the_serializer_after_the_retries(cluster: MockCluster) -> None:
    fault = cluster.registry_fault(status=503, times=None)
    with pytest.raises(SchemaRegistryError) as refused:
        serialize(cluster)
    assert refused.value.http_status_code == 503 and refused.value.error_code == 503
    assert fault.hits == 3  # the first call and max.retries=2 retries
    cluster.registry_clear_faults()
    assert serialize(cluster)[:1] == b"\x00"


def test_one_503_is_absorbed_by_the_clients_retry(cluster: MockCluster) -> None:
    fault = cluster.registry_fault(status=503, times=1)
    assert serialize(cluster)[:1] == b"\x00"
    assert fault.hits == 1


@pytest.mark.parametrize(("status", "code"), [(409, 409), (422, 42201)])
def test_a_4xx_for_one_call_is_raised_at_once(cluster: MockCluster, status: int, code: int) -> None:
    fault = cluster.registry_fault(status=status, error_code=code, method="POST", path="^/subjects/")
    with pytest.raises(SchemaRegistryError) as refused:
        serialize(cluster)
    assert (refused.value.http_status_code, refused.value.error_code) == (status, code)
    assert fault.hits == 1 and not fault.active
    assert serialize(cluster)[:1] == b"\x00"  # times=1: the next call goes through


def test_unreachable_then_back_on_the_same_port(cluster: MockCluster) -> None:
    url = cluster.schema_registry_url
    cluster.registry_down()
    with pytest.raises(Exception) as refused:
        serialize(cluster)
    assert "connect" in f"{type(refused.value).__name__} {refused.value}".lower()
    cluster.registry_up()
    assert cluster.schema_registry_url == url
    assert serialize(cluster)[:1] == b"\x00"


def test_a_produce_fault_on_the_schemas_topic_is_a_store_error(cluster: MockCluster) -> None:
    with cluster.fault(api="Produce", topic="_schemas", error="POLICY_VIOLATION", times=None) as rule:
        with pytest.raises(SchemaRegistryError) as refused:
            serialize(cluster)
    assert (refused.value.http_status_code, refused.value.error_code) == (500, 50001)
    assert rule.hits >= 1
    registry = SchemaRegistryClient({"url": cluster.schema_registry_url})
    assert registry.get_subjects() == []  # nothing was registered: the write comes first
    writes = cluster.journal.entries(api="Produce")
    assert writes and {e.client_id for e in writes} == {"mockbroker-schema-registry"}
    assert serialize(cluster)[:1] == b"\x00"  # the fault is gone: the registry writes and answers again


def test_faults_through_the_control_api(cluster: MockCluster) -> None:
    control = cluster.control_url
    done = requests.post(f"{control}/actions", json={"action": "registry_fault",
                                                     "rule": {"name": "slow", "status": 500, "times": 5}}, timeout=10)
    assert done.status_code == 200, done.text
    with pytest.raises(SchemaRegistryError):
        serialize(cluster)
    shown = requests.get(f"{control}/schema-registry", timeout=10).json()
    assert shown["reachable"] is True and shown["faults"][0]["name"] == "slow" and shown["faults"][0]["hits"] == 3
    assert requests.post(f"{control}/actions", json={"action": "registry_clear_faults"}, timeout=10).ok
    assert requests.post(f"{control}/actions", json={"action": "registry_down"}, timeout=10).ok
    assert requests.get(f"{control}/schema-registry", timeout=10).json()["reachable"] is False
    assert requests.post(f"{control}/actions", json={"action": "registry_up"}, timeout=10).ok
    assert serialize(cluster)[:1] == b"\x00"


@pytest.mark.parametrize(("rule", "says"), [
    ({"status": 200}, "status must be an HTTP error status 400-599"),
    ({}, "needs status (an HTTP error to answer) or latency_ms"),
    ({"status": 503, "tims": 3}, "unknown schema registry fault field 'tims'"),
    ({"status": 503, "path": "("}, "path is not a regular expression"),
    ({"status": 503, "method": "PATCH"}, "method must be GET, POST, PUT or DELETE"),
])
def test_bad_fault_fields_get_one_line(cluster: MockCluster, rule: dict[str, object], says: str) -> None:
    done = requests.post(f"{cluster.control_url}/actions", json={"action": "registry_fault", "rule": rule}, timeout=10)
    assert done.status_code == 400 and says in done.text and "Traceback" not in done.text


def test_a_cluster_without_a_registry_says_so() -> None:
    with MockCluster(control_port=0) as plain:
        done = requests.post(f"{plain.control_url}/actions", json={"action": "registry_down"}, timeout=10)
        assert done.status_code == 400 and "runs no schema registry" in done.text
        assert requests.get(f"{plain.control_url}/schema-registry", timeout=10).status_code == 404
        assert plain.schema_registry_url is None


SCENARIO = """name: registry-outage
cluster: {schema_registry: true, topics: [{name: orders, partitions: 1}]}
timeout: 60s
app: ["{python}", "{here}/app.py"]
steps:
  - {name: the registry goes away, at: 0s, action: registry_down}
  - name: it comes back once the app has met it down (the app says so with a record)
    when: {records: {topic: orders, at_least: 1}}
    action: registry_up
  - {name: then it is slow, after: 0s, action: registry_fault, rule: {latency_ms: 100, times: 2}}
"""
APP = """import json, os, time
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
schema = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]})
failures = 0
for attempt in range(100):
    try:
        client = SchemaRegistryClient({"url": os.environ["SCHEMA_REGISTRY_URL"]})
        AvroSerializer(client, schema)({"id": 1}, SerializationContext("orders", MessageField.VALUE))
        break
    except Exception:
        failures += 1
        if failures == 1:  # tell the scenario: it brings the registry back when it sees this record
            producer = Producer({"bootstrap.servers": os.environ["KAFKA_BOOTSTRAP_SERVERS"]})
            producer.produce("orders", b"met the registry down")
            producer.flush(10)
        time.sleep(0.1)
print("failures before success:", failures, file=open("app.out", "w"))
raise SystemExit(0 if failures else 3)
"""


def test_a_scenario_takes_the_registry_down_and_back(tmp_path: Path) -> None:
    (tmp_path / "registry.yaml").write_text(SCENARIO)
    (tmp_path / "app.py").write_text(APP)
    done = subprocess.run([sys.executable, "-m", "mockbroker", "scenario", "run", "--app",
                           str(tmp_path / "registry.yaml")], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "scenario registry-outage: PASSED" in done.stdout + done.stderr
    assert "schema.registry.url=http://127.0.0.1:" in done.stdout + done.stderr
    failures = int((tmp_path / "app.out").read_text().split(":")[1])
    assert failures >= 1  # the app met the registry down, then got through once it was back


def test_a_scenario_without_a_registry_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(SCENARIO.replace("schema_registry: true, ", ""))
    done = subprocess.run([sys.executable, "-m", "mockbroker", "scenario", "check", str(tmp_path / "bad.yaml")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "needs a schema registry: set cluster.schema_registry: true" in (
        done.stdout + done.stderr)
