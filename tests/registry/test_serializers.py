"""confluent-kafka's own Schema Registry client and serializers against mockbroker's registry: Avro, JSON
Schema and Protobuf records round-trip through a topic (serializer -> Producer -> broker -> Consumer ->
deserializer), the subject name strategies work unchanged, and evolutions are refused with 409 or accepted
as each compatibility level says, for each schema type."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from mockbroker.cluster import MockCluster

pytestmark = [pytest.mark.clients]


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(schema_registry=True, topics={"avro-orders": 1, "json-orders": 1, "proto-orders": 1}) as running:
        yield running


@pytest.fixture(scope="module")
def registry(cluster: MockCluster) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": cluster.schema_registry_url})


def round_trip(cluster: MockCluster, topic: str, serialize: Any, deserialize: Any, items: list[Any]) -> list[Any]:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for item in items:
        producer.produce(topic, value=serialize(item, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"{topic}-reader",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    out: list[Any] = []
    for _ in range(100):
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            out.append(deserialize(msg.value(), SerializationContext(topic, MessageField.VALUE)))
        if len(out) == len(items):
            break
    consumer.close()
    return out


def test_avro_round_trip(cluster: MockCluster, registry: SchemaRegistryClient) -> None:
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

    schema = json.dumps({"type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"}, {"name": "item", "type": "string"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}}]})
    from decimal import Decimal

    items = [{"id": i, "item": f"thing {i}", "price": Decimal(f"{i}.25")} for i in range(5)]
    got = round_trip(cluster, "avro-orders", AvroSerializer(registry, schema), AvroDeserializer(registry), items)
    assert got == items
    latest = registry.get_latest_version("avro-orders-value")
    assert latest.version == 1 and latest.schema.schema_type == "AVRO"


def test_avro_record_name_strategy(cluster: MockCluster, registry: SchemaRegistryClient) -> None:
    from confluent_kafka.schema_registry import record_subject_name_strategy
    from confluent_kafka.schema_registry.avro import AvroSerializer

    schema = json.dumps({"type": "record", "name": "Payment", "namespace": "shop",
                         "fields": [{"name": "amount", "type": "int"}]})
    serializer = AvroSerializer(registry, schema, conf={"subject.name.strategy": record_subject_name_strategy})
    serializer({"amount": 3}, SerializationContext("anything", MessageField.VALUE))
    assert "shop.Payment" in registry.get_subjects()


def test_json_schema_round_trip(cluster: MockCluster, registry: SchemaRegistryClient) -> None:
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

    schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
                         "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
                         "required": ["id"]})
    items = [{"id": i, "item": f"thing {i}"} for i in range(5)]
    got = round_trip(cluster, "json-orders", JSONSerializer(schema, registry), JSONDeserializer(schema), items)
    assert got == items
    assert registry.get_latest_version("json-orders-value").schema.schema_type == "JSON"


PROTO = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  string item = 2;
  google.protobuf.Timestamp at = 3;
}
"""


@pytest.fixture(scope="module")
def order_pb2(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("proto")
    (folder / "order.proto").write_text(PROTO)
    done = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{folder}", f"--python_out={folder}",
                           str(folder / "order.proto")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    sys.path.insert(0, str(folder))
    try:
        import order_pb2  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(folder))
    return order_pb2


def test_protobuf_round_trip(cluster: MockCluster, registry: SchemaRegistryClient, order_pb2: Any) -> None:
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

    serializer = ProtobufSerializer(order_pb2.Order, registry, {"use.deprecated.format": False})
    deserializer = ProtobufDeserializer(order_pb2.Order, {"use.deprecated.format": False})
    items = [order_pb2.Order(id=i, item=f"thing {i}") for i in range(5)]
    for i, item in enumerate(items):
        item.at.seconds = 1_790_000_000 + i
    got = round_trip(cluster, "proto-orders", serializer, deserializer, items)
    assert got == items
    assert registry.get_latest_version("proto-orders-value").schema.schema_type == "PROTOBUF"


@pytest.mark.parametrize("skip_known", [False, True])
def test_protobuf_well_known_types_as_subjects(cluster: MockCluster, registry: SchemaRegistryClient, order_pb2: Any,
                                               skip_known: bool) -> None:
    """confluent-kafka's ProtobufSerializer with skip.known.types=False registers the imported
    google/protobuf/timestamp.proto itself, as a subject holding its base64 descriptor, and the value schema
    references it (Confluent's registry accepts both); with True it registers only the value schema, whose
    import the registry resolves by itself."""
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

    topic = f"proto-known-{str(skip_known).lower()}"
    serializer = ProtobufSerializer(order_pb2.Order, registry, {"use.deprecated.format": False,
                                                                "skip.known.types": skip_known})
    deserializer = ProtobufDeserializer(order_pb2.Order, {"use.deprecated.format": False})
    items = [order_pb2.Order(id=i, item=f"thing {i}") for i in range(3)]
    for i, item in enumerate(items):
        item.at.seconds = 1_790_000_000 + i
    assert round_trip(cluster, topic, serializer, deserializer, items) == items
    references = registry.get_latest_version(f"{topic}-value").schema.references
    timestamp = "google/protobuf/timestamp.proto"
    if skip_known:
        assert references == []
        return
    assert [(r.name, r.subject) for r in references] == [(timestamp, timestamp)]
    known = registry.get_latest_version(timestamp).schema
    assert known.schema_type == "PROTOBUF" and "message Timestamp" in known.schema_str
    assert "package google.protobuf;" in known.schema_str


@pytest.mark.parametrize(("kind", "text", "message"), [
    # protoc's own error line, not the absl logging preamble it may print first
    ("PROTOBUF", 'syntax = "proto3";\nmessage A {\n  strin x = 1;\n}\n', 'schema.proto:3:3: "strin" is not defined.'),
    # fastavro's message
    ("AVRO", '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "intt"}]}',
     "invalid Avro schema: UnknownType: intt"),
    # jsonschema's message
    ("JSON", '{"type": "strnig"}', "'strnig' is not valid under any of the given schemas"),
], ids=["protobuf", "avro", "json"])
def test_invalid_schemas_carry_the_parsers_message(registry: SchemaRegistryClient, kind: str, text: str,
                                                   message: str) -> None:
    with pytest.raises(SchemaRegistryError) as refused:
        registry.register_schema(f"invalid-{kind.lower()}", Schema(text, kind))
    assert (refused.value.http_status_code, refused.value.error_code) == (422, 42201)
    assert message in refused.value.error_message and "absl" not in refused.value.error_message


# -- evolution under each compatibility level, for each schema type -----------------------------------------
# NARROW data can be read with WIDE, WIDE data cannot be read with NARROW; the *_ALT texts mean the same as
# their twin and differ in text only (a new version, not the same schema again).
KINDS: dict[str, dict[str, str]] = {
    "AVRO": {
        "N": json.dumps({"type": "record", "name": "R", "fields": [{"name": "n", "type": "int"}]}),
        "N'": json.dumps({"type": "record", "name": "R", "doc": "alt", "fields": [{"name": "n", "type": "int"}]}),
        "W": json.dumps({"type": "record", "name": "R", "fields": [{"name": "n", "type": "long"}]}),
        "W'": json.dumps({"type": "record", "name": "R", "doc": "alt", "fields": [{"name": "n", "type": "long"}]}),
    },
    "JSON": {
        "N": json.dumps({"type": "object", "properties": {"n": {"type": "string", "maxLength": 5}}}),
        "N'": json.dumps({"type": "object", "description": "alt",
                          "properties": {"n": {"type": "string", "maxLength": 5}}}),
        "W": json.dumps({"type": "object", "properties": {"n": {"type": "string", "maxLength": 10}}}),
        "W'": json.dumps({"type": "object", "description": "alt",
                          "properties": {"n": {"type": "string", "maxLength": 10}}}),
    },
    "PROTOBUF": {  # fields moved into a oneof: a plain reader reads them, a oneof reader refuses plain data
        "N": 'syntax = "proto3";\nmessage R {\n  oneof o {\n    int32 a = 1;\n    int32 b = 2;\n  }\n}\n',
        "N'": 'syntax = "proto3";\nmessage R {\n  oneof o {\n    int32 a = 1;\n    int32 b = 2;\n  }\n'
              '  int32 c = 3;\n}\n',
        "W": 'syntax = "proto3";\nmessage R {\n  int32 a = 1;\n  int32 b = 2;\n}\n',
        "W'": 'syntax = "proto3";\nmessage R {\n  int32 a = 1;\n  int32 b = 2;\n  int32 c = 3;\n}\n',
    },
}
# level -> (history registered under NONE, the new schema, accepted?)
CASES: list[tuple[str, list[str], str, bool]] = [
    ("BACKWARD", ["N"], "W", True), ("BACKWARD", ["W"], "N'", False), ("BACKWARD", ["W", "N"], "N'", True),
    ("FORWARD", ["W"], "N'", True), ("FORWARD", ["N"], "W", False), ("FORWARD", ["N", "W"], "W'", True),
    ("FULL", ["N"], "N'", True), ("FULL", ["N"], "W", False), ("FULL", ["W"], "N'", False),
    ("BACKWARD_TRANSITIVE", ["N"], "W", True), ("BACKWARD_TRANSITIVE", ["W", "N"], "N'", False),
    ("FORWARD_TRANSITIVE", ["W"], "N'", True), ("FORWARD_TRANSITIVE", ["N", "W"], "W'", False),
    ("FULL_TRANSITIVE", ["N"], "N'", True), ("FULL_TRANSITIVE", ["W", "N"], "N'", False),
    ("NONE", ["W"], "N'", True), ("NONE", ["N"], "W", True),
]


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize(("level", "history", "new", "accepted"), CASES)
def test_evolution(registry: SchemaRegistryClient, kind: str, level: str, history: list[str], new: str,
                   accepted: bool) -> None:
    texts = KINDS[kind]
    subject = f"evolve-{kind}-{level}-{'-'.join(history)}-{new}-{accepted}".replace("'", "alt").lower()
    registry.set_compatibility(subject, "NONE")
    for name in history:
        registry.register_schema(subject, Schema(texts[name], kind))
    registry.set_compatibility(subject, level)
    if accepted:
        registry.register_schema(subject, Schema(texts[new], kind))
        assert len(registry.get_versions(subject)) == len(history) + 1
        return
    with pytest.raises(SchemaRegistryError) as refused:
        registry.register_schema(subject, Schema(texts[new], kind))
    assert (refused.value.http_status_code, refused.value.error_code) == (409, 409)
    assert len(registry.get_versions(subject)) == len(history)
