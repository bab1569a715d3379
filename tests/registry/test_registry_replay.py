"""The Schema Registry rebuilds its state from ``_schemas`` at start, as Confluent's does: schemas registered
through confluent-kafka's SchemaRegistryClient on one cluster (Avro, JSON Schema, a soft and a permanent
delete, compatibility levels, a mode), ``_schemas``' batches copied into a new cluster's log, a registry
started there serves the same ids, versions, levels and modes, gives the next schema the next id, and
confluent-kafka's AvroDeserializer reads a record serialized against the first cluster.  Plus the record
replay alone (mockbroker.registry.replay) on hand-made records, a bad one skipped; and the registry-only
service's registry (``_schemas`` on a cluster it reaches over the wire) reads it back too."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

from mockbroker.cluster import MockCluster
from mockbroker.registry.replay import apply_records
from mockbroker.registry.server import SchemaRegistry, ensure_topic
from mockbroker.registry.state import RegistryState
from mockbroker.registry.store import TOPIC
from mockbroker.state.cluster import ClusterState
from mockbroker.state.log import StoredBatch

pytestmark = [pytest.mark.clients]

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [{"name": "id", "type": "long"}]}
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "note", "type": "string", "default": ""}]}
EVENT = {"type": "object", "properties": {"kind": {"type": "string"}}, "required": ["kind"]}
PATHS = ["/subjects", "/subjects?deleted=true", "/config", "/mode", "/schemas/ids/1", "/schemas/ids/2",
         "/schemas/ids/3", "/subjects/orders-value/versions", "/subjects/orders-value/versions/2",
         "/subjects/orders-value/versions?deleted=true", "/config/orders-value", "/mode/events-value",
         "/subjects/events-value/versions/1", "/subjects/old-value/versions?deleted=true"]


def _get(url: str, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url + path, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _copy_schemas(source: ClusterState, target: ClusterState) -> int:
    """``_schemas``' batches, as stored, into the target's log (made empty first): what a data directory keeps."""
    ensure_topic(target)
    log = target.topics[TOPIC].partitions[0]
    for b in source.topics[TOPIC].partitions[0].batches:
        log.append(StoredBatch(b.base_offset, b.last_offset, b.max_timestamp, b.size, b.buffers, b.producer_id,
                               b.is_transactional, b.is_control))
    return log.next_offset


async def _registry_only(bootstrap: str) -> dict[str, tuple[int, Any]]:
    """The registry-only service's registry (mockbroker.registry.remote: ``_schemas`` on another process's
    cluster; here the same process's, reached over the wire alone): its answers once started."""
    registry = SchemaRegistry(lambda: None, bootstrap)
    await registry.start()
    try:
        return await asyncio.get_running_loop().run_in_executor(
            None, lambda: {path: _get(registry.url, path) for path in PATHS})
    finally:
        await registry.stop()


def test_a_new_registry_reads_schemas_back() -> None:
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

    with MockCluster(schema_registry=True) as first:
        client = SchemaRegistryClient({"url": first.schema_registry_url})
        v1 = client.register_schema("orders-value", Schema(json.dumps(ORDER_V1), "AVRO"))
        v2 = client.register_schema("orders-value", Schema(json.dumps(ORDER_V2), "AVRO"))
        event = client.register_schema("events-value", Schema(json.dumps(EVENT), "JSON"))
        client.register_schema("old-value", Schema(json.dumps(ORDER_V1), "AVRO"))  # (shares v1's id)
        assert client.delete_subject("old-value") == [1]  # soft
        gone = client.register_schema("gone-value", Schema('"string"', "AVRO"))
        client.delete_subject("gone-value")
        client.delete_subject("gone-value", permanent=True)  # a tombstone
        client.set_compatibility("orders-value", "FULL")
        client.set_compatibility(level="NONE")
        client.update_mode("events-value", "READONLY")
        assert (v1, v2, event, gone) == (1, 2, 3, 4)
        serialize = AvroSerializer(client, json.dumps(ORDER_V2))
        data = serialize({"id": 7, "note": "rush"}, SerializationContext("orders", MessageField.VALUE))
        before = {path: _get(first.schema_registry_url or "", path) for path in PATHS}
        assert asyncio.run(_registry_only(first.bootstrap_servers)) == before
        state = first.state
        with MockCluster() as second:
            assert second.call(_copy_schemas, state, second.state) > 0
            url = second.enable_schema_registry()
            after = {path: _get(url, path) for path in PATHS}
            assert after == before
            assert before["/subjects?deleted=true"] == (200, ["events-value", "old-value", "orders-value"])
            assert before["/config/orders-value"][1]["compatibilityLevel"] == "FULL"
            assert _get(url, "/schemas/ids/4")[0] == 404  # gone for good, and its id not given again
            again = SchemaRegistryClient({"url": url})
            assert again.register_schema("fresh-value", Schema('{"type": "map", "values": "long"}', "AVRO")) == 5
            deserialize = AvroDeserializer(again)
            assert deserialize(data, SerializationContext("orders", MessageField.VALUE)) == {"id": 7, "note": "rush"}


def _record(key: dict[str, Any], value: dict[str, Any] | None) -> tuple[bytes, bytes | None]:
    return json.dumps(key).encode(), None if value is None else json.dumps(value).encode()


def test_replay_of_records_alone() -> None:
    state = RegistryState()
    schema = {"keytype": "SCHEMA", "subject": "s", "magic": 1}
    records = [
        _record({**schema, "version": 2}, {"subject": "s", "version": 2, "id": 41, "schema": '"long"',
                                           "deleted": False}),
        _record({**schema, "version": 1}, {"subject": "s", "version": 1, "id": 40, "schema": '"string"',
                                           "deleted": False}),
        (b"not json", b"{}"),
        _record({**schema, "version": 3}, {"subject": "s", "version": 3, "id": 42, "schema": "{nope",
                                           "deleted": False}),
        _record({"keytype": "NOOP", "magic": 0}, None),
        _record({"keytype": "CONFIG", "subject": None, "magic": 0}, {"compatibilityLevel": "FORWARD"}),
        _record({"keytype": "CONFIG", "subject": "s", "magic": 0}, {"compatibilityLevel": "NONE"}),
        _record({"keytype": "CONFIG", "subject": "s", "magic": 0}, None),
        _record({"keytype": "DELETE_SUBJECT", "subject": "s", "magic": 0}, {"subject": "s", "version": 1}),
        _record({**schema, "version": 1}, None),
    ]
    assert apply_records(state, records) == 7  # the bad JSON and the bad schema skipped, NOOP ignored
    assert [(v.version, v.schema_id, v.deleted) for v in state.subjects["s"]] == [(2, 41, False)]
    assert sorted(state.schemas) == [41] and state.next_id == 43
    assert state.levels.of(None) == "FORWARD" and state.levels.of("s") == "FORWARD"
