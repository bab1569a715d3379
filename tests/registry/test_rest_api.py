"""The registry's REST API over real HTTP against MockCluster(schema_registry=True): register and look
up, ids shared across subjects, versions and latest, soft and hard deletes with Confluent's error codes,
config and mode, the compatibility endpoint, references, bad input (never a 500 or a traceback), and the
``_schemas`` topic holding what was registered in Confluent's key/value format."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from mockbroker.cluster import MockCluster

pytestmark = [pytest.mark.clients]
AVRO_V1 = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]})
AVRO_V2 = json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": "string", "default": ""}]})
AVRO_BAD_V2 = json.dumps({"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": "string"}]})  # no default: not BACKWARD


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(schema_registry=True) as running:
        yield running


class Api:
    def __init__(self, url: str) -> None:
        self.url = url

    def call(self, method: str, path: str, body: Any = None, **query: Any) -> tuple[int, Any]:
        reply = requests.request(method, self.url + path, json=body, params=query, timeout=10,
                                 headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
        try:
            return reply.status_code, reply.json()
        except ValueError:
            return reply.status_code, reply.text

    def register(self, subject: str, schema: str, kind: str | None = None, refs: list[Any] | None = None
                 ) -> tuple[int, Any]:
        body: dict[str, Any] = {"schema": schema}
        if kind:
            body["schemaType"] = kind
        if refs:
            body["references"] = refs
        return self.call("POST", f"/subjects/{subject}/versions", body)


@pytest.fixture(scope="module")
def api(cluster: MockCluster) -> Api:
    assert cluster.schema_registry_url is not None
    return Api(cluster.schema_registry_url)


def test_register_look_up_and_share_ids(api: Api) -> None:
    status, first = api.register("a-value", AVRO_V1)
    assert status == 200 and set(first) == {"id"}
    assert api.register("a-value", json.dumps(json.loads(AVRO_V1), indent=4)) == (200, first)  # same schema
    assert api.register("b-value", AVRO_V1) == (200, first)  # ids are shared across subjects
    status, found = api.call("POST", "/subjects/a-value", {"schema": AVRO_V1})
    assert status == 200 and (found["subject"], found["version"], found["id"]) == ("a-value", 1, first["id"])
    assert api.call("GET", f"/schemas/ids/{first['id']}")[1]["schema"] == json.dumps(
        json.loads(AVRO_V1), separators=(",", ":"))
    assert api.call("GET", f"/schemas/ids/{first['id']}/subjects") == (200, ["a-value", "b-value"])
    assert api.call("GET", f"/schemas/ids/{first['id']}/versions")[1] == [
        {"subject": "a-value", "version": 1}, {"subject": "b-value", "version": 1}]
    assert "a-value" in api.call("GET", "/subjects")[1]
    assert api.call("GET", "/schemas/types")[1] == ["AVRO", "JSON", "PROTOBUF"]
    guid = api.call("GET", f"/schemas/ids/{first['id']}")[1]["guid"]
    assert api.call("GET", f"/schemas/guids/{guid}")[1]["id"] == first["id"]
    assert api.call("GET", "/schemas/guids/nope")[1]["error_code"] == 40403


def test_versions_latest_and_compatibility(api: Api) -> None:
    api.register("c-value", AVRO_V1)
    status, refused = api.register("c-value", AVRO_BAD_V2)
    assert status == 409 and refused["error_code"] == 409 and "note" in refused["message"]
    status, check = api.call("POST", "/compatibility/subjects/c-value/versions/latest", {"schema": AVRO_BAD_V2},
                             verbose="true")
    assert status == 200 and check["is_compatible"] is False and check["messages"]
    assert api.call("POST", "/compatibility/subjects/c-value/versions/latest", {"schema": AVRO_V2})[1] == {
        "is_compatible": True}
    status, second = api.register("c-value", AVRO_V2)
    assert status == 200
    assert api.call("GET", "/subjects/c-value/versions") == (200, [1, 2])
    latest = api.call("GET", "/subjects/c-value/versions/latest")[1]
    assert (latest["version"], latest["id"]) == (2, second["id"])
    assert api.call("GET", "/subjects/c-value/versions/2/schema")[1] == json.loads(AVRO_V2)
    assert api.call("PUT", "/config/c-value", {"compatibility": "NONE"}) == (200, {"compatibility": "NONE"})
    assert api.register("c-value", AVRO_BAD_V2)[0] == 200  # NONE lets it through
    assert api.call("GET", "/config/c-value") == (200, {"compatibilityLevel": "NONE"})
    assert api.call("GET", "/config") == (200, {"compatibilityLevel": "BACKWARD"})


@pytest.mark.parametrize(("method", "path", "body", "status", "code"), [
    ("GET", "/subjects/nope/versions", None, 404, 40401),
    ("GET", "/subjects/d-value/versions/9", None, 404, 40402),
    ("GET", "/schemas/ids/999999", None, 404, 40403),
    ("GET", "/subjects/d-value/versions/zero", None, 422, 42202),
    ("POST", "/subjects/d-value/versions", {"schema": "{not json"}, 422, 42201),
    ("POST", "/subjects/d-value/versions", {"schema": "\"nosuchtype\""}, 422, 42201),
    ("POST", "/subjects/d-value/versions", {"schema": AVRO_V1, "schemaType": "XML"}, 422, 42201),
    ("POST", "/subjects/d-value/versions", {"schema": AVRO_V1, "references": [
        {"name": "x.avsc", "subject": "missing", "version": 1}]}, 422, 42201),
    ("POST", "/subjects/d-value/versions", {"nothing": 1}, 422, 42201),
    ("PUT", "/config", {"compatibility": "SIDEWAYS"}, 422, 42203),
    ("PUT", "/mode", {"mode": "SOMETIMES"}, 422, 42204),
    ("GET", "/config/d-value", None, 404, 40408),
    ("DELETE", "/config/d-value", None, 404, 40408),
    ("GET", "/mode/d-value", None, 404, 40409),
    ("DELETE", "/mode/d-value", None, 404, 40409),
    ("GET", "/no/such/route", None, 404, 404),
])
def test_errors_carry_confluents_codes(api: Api, method: str, path: str, body: Any, status: int, code: int) -> None:
    api.register("d-value", AVRO_V1)
    got, answer = api.call(method, path, body)
    assert (got, answer["error_code"]) == (status, code), answer
    assert isinstance(answer["message"], str) and "Traceback" not in answer["message"]


def test_malformed_and_oversized_bodies(api: Api) -> None:
    reply = requests.post(api.url + "/subjects/e-value/versions", data=b"{oops", timeout=10)
    assert reply.status_code == 400 and reply.json()["error_code"] == 400
    reply = requests.post(api.url + "/subjects/e-value/versions", data=b"x" * (9 << 20), timeout=30)
    assert reply.status_code == 413 and reply.json()["error_code"] == 413


def test_soft_and_hard_deletes(api: Api) -> None:
    api.register("f-value", AVRO_V1)
    api.register("f-value", AVRO_V2)
    assert api.call("DELETE", "/subjects/f-value", permanent="true")[1]["error_code"] == 40405
    assert api.call("DELETE", "/subjects/f-value/versions/1") == (200, 1)
    assert api.call("DELETE", "/subjects/f-value/versions/1")[1]["error_code"] == 40406
    assert api.call("GET", "/subjects/f-value/versions") == (200, [2])
    assert api.call("GET", "/subjects/f-value/versions", deleted="true") == (200, [1, 2])
    assert api.call("DELETE", "/subjects/f-value/versions/2", permanent="true")[1]["error_code"] == 40407
    assert api.call("DELETE", "/subjects/f-value") == (200, [2])
    assert api.call("DELETE", "/subjects/f-value")[1]["error_code"] == 40404
    assert "f-value" not in api.call("GET", "/subjects")[1]
    assert "f-value" in api.call("GET", "/subjects", deleted="true")[1]
    assert api.call("DELETE", "/subjects/f-value", permanent="true") == (200, [1, 2])
    assert api.call("GET", "/subjects/f-value/versions", deleted="true")[1]["error_code"] == 40401


def test_references_and_referenced_by(api: Api) -> None:
    address = json.dumps({"type": "record", "name": "Address", "namespace": "shop",
                          "fields": [{"name": "city", "type": "string"}]})
    customer = json.dumps({"type": "record", "name": "Customer", "namespace": "shop",
                           "fields": [{"name": "home", "type": "shop.Address"}]})
    assert api.register("address", address)[0] == 200
    refs = [{"name": "shop.Address", "subject": "address", "version": 1}]
    status, registered = api.register("customer-value", customer, refs=refs)
    assert status == 200, registered
    assert api.call("GET", "/subjects/address/versions/1/referencedby") == (200, [registered["id"]])
    assert api.call("DELETE", "/subjects/address")[1]["error_code"] == 42206  # still referenced
    by_id = api.call("GET", f"/schemas/ids/{registered['id']}")[1]
    assert by_id["references"] == refs


def test_mode_read_only_refuses_writes(api: Api) -> None:
    assert api.call("PUT", "/mode/g-value", {"mode": "READONLY"}) == (200, {"mode": "READONLY"})
    status, refused = api.register("g-value", AVRO_V1)
    assert (status, refused["error_code"]) == (422, 42205)
    assert api.call("DELETE", "/mode/g-value") == (200, {"mode": "READONLY"})
    assert api.register("g-value", AVRO_V1)[0] == 200


def test_subject_settings_fall_back_to_the_global_ones(api: Api) -> None:
    assert api.call("GET", "/config/k-value?defaultToGlobal=true") == (200, {"compatibilityLevel": "BACKWARD"})
    assert api.call("GET", "/mode/k-value?defaultToGlobal=true") == (200, {"mode": "READWRITE"})
    assert api.call("PUT", "/config", {"compatibility": "full"}) == (200, {"compatibility": "FULL"})
    assert api.call("PUT", "/config/k-value", {"compatibility": "NONE"}) == (200, {"compatibility": "NONE"})
    assert api.call("GET", "/config/k-value") == (200, {"compatibilityLevel": "NONE"})
    assert api.call("DELETE", "/config/k-value") == (200, {"compatibilityLevel": "NONE"})
    assert api.call("GET", "/config/k-value?defaultToGlobal=true") == (200, {"compatibilityLevel": "FULL"})
    assert api.call("DELETE", "/config") == (200, {"compatibilityLevel": "FULL"})  # back to the default
    assert api.call("GET", "/config") == (200, {"compatibilityLevel": "BACKWARD"})


def test_what_was_registered_is_in_the_schemas_topic(cluster: MockCluster, api: Api) -> None:
    from confluent_kafka import Consumer, TopicPartition

    api.register("h-value", AVRO_V1)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "registry-check",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("_schemas", 0, 0)])
    keys: list[dict[str, Any]] = []
    values: list[Any] = []
    while True:
        msg = consumer.poll(2)
        if msg is None:
            break
        keys.append(json.loads(msg.key()))
        values.append(json.loads(msg.value()) if msg.value() is not None else None)
    consumer.close()
    entry = keys.index({"keytype": "SCHEMA", "subject": "h-value", "version": 1, "magic": 1})
    assert values[entry]["subject"] == "h-value" and values[entry]["deleted"] is False
    assert json.loads(values[entry]["schema"]) == json.loads(AVRO_V1)
    assert cluster.state.topics["_schemas"].config.overrides["cleanup.policy"] == "compact"
