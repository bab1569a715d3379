"""The HTTP control API against its OpenAPI document, with confluent-kafka reacting to what it does:
every documented operation is called and every answer is validated; every route is documented."""

from __future__ import annotations

import base64
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer

from mockbroker.cluster import MockCluster
from mockbroker.control.app import ROUTES
from mockbroker.protocol import api as wire_api
from tests.broker.wire import WireClient
from tests.control.openapi_check import Client, operations

pytestmark = pytest.mark.clients


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, topics={"seed": 1}, control_port=0) as running:
        yield running


def produce(cluster: MockCluster, topic: str, values: list[bytes], **conf: object) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 1, "retry.backoff.ms": 20, **conf})
    for v in values:
        p.produce(topic, v, partition=0)
    assert p.flush(15) == 0


def consume(cluster: MockCluster, topic: str, count: int, group: str = "reader") -> list[bytes]:
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 15
    while len(got) < count and time.monotonic() < deadline:
        m = c.poll(0.1)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.close()
    return got


def join_share_group(cluster: MockCluster, group_id: str, member_id: str, topics: list[str]) -> None:
    """A share group member, joined with ShareGroupHeartbeat v1 over the wire and holding its assignment."""
    m = wire_api.request_module(76)
    with WireClient(cluster.brokers[cluster.state.coordinator_for(group_id).node_id].port) as c:
        first = c.call(76, 1, m.ShareGroupHeartbeatRequest(group_id=group_id, member_id=member_id, member_epoch=0,
                                                           subscribed_topic_names=topics))
        again = c.call(76, 1, m.ShareGroupHeartbeatRequest(group_id=group_id, member_id=member_id,
                                                           member_epoch=first.member_epoch))
        assert first.error_code == again.error_code == 0


def test_every_route_is_documented() -> None:
    routes = {(method, path) for method, path, _ in ROUTES}
    assert routes == operations()


def test_the_whole_api_with_a_real_client(cluster: MockCluster) -> None:
    assert cluster.control_url is not None
    api = Client(cluster.control_url)
    assert api.call("GET", "/health").json()["brokers"] == 3
    assert "openapi: 3.1.0" in api.call("GET", "/openapi.yaml").text
    assert [b["state"] for b in api.call("GET", "/cluster").json()["brokers"]] == ["up", "up", "up"]

    # topics
    created = api.call("POST", "/topics", {"name": "orders", "partitions": 3, "config": {"retention.ms": 60000}})
    assert created.status == 201 and len(created.json()["partitions"]) == 3
    assert created.json()["config"] == {"retention.ms": "60000"}
    again = api.call("POST", "/topics", {"name": "orders"})
    assert again.status == 409 and again.json()["name"] == "TOPIC_ALREADY_EXISTS"
    assert api.call("POST", "/topics", {"name": "bad name!"}).json()["name"] == "INVALID_TOPIC_EXCEPTION"
    assert {"name": "orders", "partitions": 3} in api.call("GET", "/topics").json()["topics"]
    assert api.call("GET", "/topics/nope").status == 404

    # records a client wrote, read over HTTP; records written over HTTP, read by a client
    produce(cluster, "orders", [b"one", b"two", b"\xff"])
    records = api.call("GET", "/topics/orders/records?partition=0&offset=1&limit=5").json()
    assert [r["value"] for r in records["records"]] == ["two", None] and records["high_watermark"] == 3
    assert base64.b64decode(records["records"][1]["value_b64"]) == b"\xff"
    written = api.call("POST", "/topics/seed/records", {"records": [
        {"key": "k", "value": "hello", "headers": [{"key": "h", "value": "v"}]},
        {"value_b64": base64.b64encode(b"\x00bin").decode()}]})
    assert written.status == 201 and written.json()["written"] == [{"partition": 0, "base_offset": 0, "count": 2}]
    assert consume(cluster, "seed", 2) == [b"hello", b"\x00bin"]
    assert api.call("GET", "/topics/orders/records?partition=7").status == 404
    assert api.call("GET", "/topics/orders/records?partition=x").status == 400
    assert api.call("POST", "/topics/seed/records", {"records": []}).status == 400

    # faults: the client retries through two NOT_LEADER_OR_FOLLOWER answers
    fault = api.call("POST", "/faults", {"api": "Produce", "topic": "orders", "error": "NOT_LEADER_OR_FOLLOWER",
                                         "times": 2, "name": "two refusals"})
    assert fault.status == 201
    rule = fault.json()["id"]
    produce(cluster, "orders", [b"three"])
    waited = api.call("POST", f"/faults/{rule}/wait", {"hits": 2, "timeout_s": 5}).json()
    assert waited["reached"] and waited["fault"]["hits"] == 2
    assert api.call("GET", f"/faults/{rule}").json()["active"] is False
    assert [f["name"] for f in api.call("GET", "/faults").json()["faults"]] == ["two refusals"]
    assert api.call("DELETE", f"/faults/{rule}").status == 204
    assert api.call("GET", f"/faults/{rule}").status == 404
    assert api.call("DELETE", f"/faults/{rule}").status == 404
    assert api.call("POST", f"/faults/{rule}/wait", {}).status == 404
    assert "unknown action" in api.call("POST", "/faults", {"action": "explode"}).json()["error"]
    assert api.call("POST", "/faults", raw=b"{not json").status == 400
    api.call("POST", "/faults", {"api": "Fetch", "action": "observe", "times": None})
    assert api.call("DELETE", "/faults").status == 204
    assert api.call("GET", "/faults").json()["faults"] == []

    # cluster actions
    moved = api.call("POST", "/actions", {"action": "move_leader", "topic": "orders", "partition": 0, "broker": 2})
    assert moved.json()["detail"] == "orders-0 now led by broker 2"
    assert api.call("GET", "/topics/orders").json()["partitions"][0]["leader_epoch"] == 1
    api.call("POST", "/actions", {"action": "broker_down", "broker": 2})
    assert [b["state"] for b in api.call("GET", "/cluster").json()["brokers"]] == ["up", "up", "down"]
    produce(cluster, "orders", [b"four"])  # the client follows the leader off the lost broker
    api.call("POST", "/actions", {"action": "broker_up", "broker": 2})
    assert api.call("POST", "/actions", {"action": "nope"}).status == 400
    assert api.call("POST", "/actions", {"action": "broker_down", "broker": 9}).json()["error"] == "no broker 9"
    assert api.call("POST", "/actions", {"action": "move_leader"}).status == 400

    # groups and the journal
    assert len(consume(cluster, "orders", 5, group="g1")) == 5
    assert api.call("GET", "/groups/g1").json()["type"] == "classic"
    assert [g["group_id"] for g in api.call("GET", "/groups").json()["groups"]] == ["g1", "reader"]
    assert api.call("GET", "/groups/none").status == 404
    assert api.call("GET", "/share-groups").json() == {"groups": []}
    join_share_group(cluster, "workers", "m-1", ["orders"])
    [share] = api.call("GET", "/share-groups").json()["groups"]
    assert share["group_id"] == "workers" and share["state"] == "Stable"
    assert share["members"][0]["assignment"] == {"orders": [0, 1, 2]}
    assert api.call("GET", "/share-groups/workers").json() == share
    assert api.call("GET", "/share-groups/g1").status == 404  # a classic group
    entries = api.call("GET", "/journal?api=Produce").json()["entries"]
    assert "NOT_LEADER_OR_FOLLOWER" in {e for entry in entries for e in entry["errors"]}
    lines = api.call("GET", "/journal?api=0&limit=2&format=jsonl")
    assert lines.content_type == "application/x-ndjson" and len(lines.text.splitlines()) == 2
    assert api.call("GET", "/journal?broker=x").status == 400
    assert api.call("DELETE", "/journal").status == 204

    # client quotas
    assert api.call("POST", "/quotas", {"entity": {"user": None}, "values": {"producer_byte_rate": 1048576}}).json() \
        == {"quotas": [{"entity": {"user": None}, "values": {"producer_byte_rate": 1048576.0}}]}
    assert api.call("POST", "/quotas", {"entity": {"user": "a"}, "values": {"producer_byte_rate": 0}}).status == 400
    assert api.call("POST", "/quotas", {"entity": {"user": None}, "values": {"producer_byte_rate": None}}).json() \
        == {"quotas": []}
    api.call("POST", "/quotas", {"entity": {"client-id": "c"}, "values": {"request_percentage": 50}})
    assert len(api.call("GET", "/quotas").json()["quotas"]) == 1
    assert api.call("DELETE", "/quotas").status == 204 and cluster.quotas() == []

    # client telemetry: without mock.telemetry.receiver the clients above were not offered the telemetry APIs
    # and asked nothing (tests/clients/test_telemetry.py has the pushes, with the receiver)
    assert api.call("GET", "/telemetry").json() == {"receiver": False, "clients": []}

    # the Schema Registry: none until one is started beside the cluster, then its URL, subjects and faults
    assert api.call("GET", "/schema-registry").status == 404
    url = cluster.enable_schema_registry()
    assert api.call("POST", "/actions", {"action": "registry_fault", "rule": {"name": "slow", "latency_ms": 1,
                                                                            "times": 2}}).status == 200
    registry = api.call("GET", "/schema-registry").json()
    assert registry["url"] == url and registry["reachable"] is True and registry["subjects"] == []
    assert [f["name"] for f in registry["faults"]] == ["slow"]

    # no OIDC provider here (tests/clients/test_oauthbearer_oidc.py drives one)
    assert [api.call(m, p, {}).status for m, p in (("GET", "/oidc"), ("POST", "/oidc"), ("POST", "/oidc/reset"))] \
        == [404, 404, 404]

    # reset, delete
    assert api.call("DELETE", "/topics/orders").status == 204
    assert api.call("DELETE", "/topics/orders").status == 404
    assert api.call("POST", "/reset").status == 204
    # (the registry started above keeps its _schemas topic across the reset, empty)
    assert api.call("GET", "/topics").json()["topics"] == [{"name": "_schemas", "partitions": 1},
                                                           {"name": "seed", "partitions": 1}]
    assert api.seen == operations()  # every documented operation was exercised and validated


def test_a_token_guards_everything_but_health() -> None:
    with MockCluster(control_port=0, control_token="s3cret") as cluster:
        assert cluster.control_url is not None
        anonymous = Client(cluster.control_url)
        assert anonymous.call("GET", "/health").status == 200
        denied = anonymous.call("GET", "/topics")
        assert denied.status == 401 and "token" in denied.json()["error"]
        assert Client(cluster.control_url, token="s3cret").call("GET", "/topics").status == 200


def test_serve_with_a_control_port() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--control-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("bootstrap.servers=127.0.0.1:")
        control = proc.stdout.readline().strip()
        assert control.startswith("control=http://127.0.0.1:")
        assert Client(control.split("=", 1)[1]).call("GET", "/health").json()["status"] == "ok"
        console = proc.stdout.readline().strip()
        assert console == control.replace("control=", "console=") + "/ui/"
        with urllib.request.urlopen(console.split("=", 1)[1], timeout=10) as page:
            assert page.status == 200 and "<h1>Cluster</h1>" in page.read().decode()
    finally:
        proc.terminate()
        assert proc.wait(10) == 0
