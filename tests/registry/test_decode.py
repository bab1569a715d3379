"""mockbroker.registry.decode against what confluent-kafka's own serializers write through a real MockCluster's
Schema Registry (Avro with a nested record, an enum, bytes, unions, logical types and a referenced schema; JSON
Schema; Protobuf with a nested message, the file's second message and repeated fields), and against payloads a
serializer never writes: not framed, an unknown id, truncated, or garbage claiming huge lengths, counts or
depths, which give a one-line error and never hang."""

from __future__ import annotations

import datetime
import gc
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

from mockbroker.cluster import MockCluster
from mockbroker.registry import decode
from mockbroker.registry.decode import Decoded, decode_framed
from mockbroker.registry.state import RegistryState

pytestmark = [pytest.mark.clients]

ADDRESS = {"type": "record", "name": "Address", "namespace": "shop",
           "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": "string"}]}
ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
        {"name": "name", "type": "string"}, {"name": "vip", "type": "boolean"}]}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SENT"]}},
    {"name": "blob", "type": "bytes"},
    {"name": "note", "type": ["null", "string"]},
    {"name": "ship_to", "type": "shop.Address"},
    {"name": "bill_to", "type": ["null", "shop.Address"]},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "checksum", "type": {"type": "fixed", "name": "Sum", "size": 4}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "counts", "type": {"type": "map", "values": "int"}},
]}

PROTO = """syntax = "proto3";
package decodetest;

message Order {
  message Line {
    string sku = 1;
    int32 quantity = 2;
  }
  enum Status {
    NEW = 0;
    PAID = 1;
  }
  int64 id = 1;
  repeated Line lines = 2;
  repeated string tags = 3;
  Status status = 4;
  bytes blob = 5;
}

message Refund {
  int64 order_id = 1;
  string reason = 2;
}
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(schema_registry=True) as running:
        yield running


@pytest.fixture(scope="module")
def registry(cluster: MockCluster) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": cluster.schema_registry_url})


def state_of(cluster: MockCluster) -> RegistryState:
    assert cluster.schema_registry is not None
    return cluster.schema_registry.state


def decoded_value(state: RegistryState, data: bytes) -> Any:
    """The value of framed ``data`` that decodes."""
    got = decode_framed(state, data)
    assert got is not None and got.error is None, got
    return got.value


def ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def compile_proto(folder: Path, name: str, text: str) -> Any:
    """The module protoc (grpcio-tools) generates for ``text``, saved as ``folder/name.proto``."""
    (folder / f"{name}.proto").write_text(text)
    done = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{folder}", f"--python_out={folder}",
                           str(folder / f"{name}.proto")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    sys.path.insert(0, str(folder))
    try:
        return __import__(f"{name}_pb2")
    finally:
        sys.path.remove(str(folder))


@pytest.fixture(scope="module")
def avro_order(registry: SchemaRegistryClient) -> Any:
    """An AvroSerializer for shop.Order, whose ship_to and bill_to are the referenced shop.Address."""
    from confluent_kafka.schema_registry.avro import AvroSerializer

    registry.register_schema("shop-address", Schema(json.dumps(ADDRESS), "AVRO"))
    schema = Schema(json.dumps(ORDER), "AVRO", [SchemaReference("shop.Address", "shop-address", 1)])
    return AvroSerializer(registry, schema)


ORDER_VALUE = {
    "id": 7, "customer": {"name": "Ada <script>", "vip": True}, "status": "PAID", "blob": b"\x00\xffab",
    "note": "leave at the door", "ship_to": {"city": "Lyon", "zip": "69001"}, "bill_to": None,
    "price": Decimal("12.50"), "day": datetime.date(2026, 11, 29), "checksum": b"\xde\xad\xbe\xef",
    "tags": ["a", "b"], "counts": {"x": 1, "y": -2},
}


def test_avro_record_with_nested_enum_bytes_union_logical_and_reference(cluster: MockCluster,
                                                                       avro_order: Any) -> None:
    data = avro_order(ORDER_VALUE, ctx("orders"))
    decoded = decode_framed(state_of(cluster), data)
    assert decoded is not None and decoded.error is None, decoded
    assert (decoded.kind, decoded.subject, decoded.version) == ("AVRO", "orders-value", 1)
    assert decoded.schema_id == int.from_bytes(data[1:5], "big")
    assert decoded.value == {
        "id": 7, "customer": {"name": "Ada <script>", "vip": True}, "status": "PAID", "blob": "00ff6162",
        "note": "leave at the door", "ship_to": {"city": "Lyon", "zip": "69001"}, "bill_to": None,
        "price": "12.50", "day": "2026-11-29", "checksum": "deadbeef", "tags": ["a", "b"],
        "counts": {"x": 1, "y": -2},
    }
    json.dumps(decoded.value)  # plain data
    other = dict(ORDER_VALUE, note=None, bill_to={"city": "Oslo", "zip": "0150"})
    again = decode_framed(state_of(cluster), avro_order(other, ctx("orders")))
    assert again is not None and again.value["note"] is None and again.value["bill_to"] == {"city": "Oslo",
                                                                                              "zip": "0150"}


def test_avro_roots_that_are_not_records(cluster: MockCluster, registry: SchemaRegistryClient) -> None:
    """A primitive, a union and a bare reference as the whole schema; a bytes schema's value is written as it
    is (AvroSerializer's own rule) and shown as hex."""
    from confluent_kafka.schema_registry.avro import AvroSerializer

    state = state_of(cluster)
    text = AvroSerializer(registry, '"string"')("héllo", ctx("plain-string"))
    assert decode_framed(state, text) == Decoded(int.from_bytes(text[1:5], "big"), "AVRO", "plain-string-value",
                                                 "héllo", None, 1)
    union = AvroSerializer(registry, '["null", "long", "string"]')
    assert [decoded_value(state, union(v, ctx("plain-union"))) for v in (5, "x")] == [5, "x"]  # None: no bytes
    raw = AvroSerializer(registry, '"bytes"')(b"\x01\x02", ctx("plain-bytes"))
    assert raw.endswith(b"\x01\x02") and len(raw) == 7
    assert decoded_value(state, raw) == "0102"
    # a bare reference as the schema (confluent-kafka's AvroSerializer cannot load one: written with fastavro)
    registry.register_schema("address-alone-ref", Schema(json.dumps(ADDRESS), "AVRO"))
    alone = registry.register_schema("address-alone", Schema('"shop.Address"', "AVRO", [
        SchemaReference("shop.Address", "address-alone-ref", 1)]))
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(ADDRESS), {"city": "Rome", "zip": "00100"})
    got = decode_framed(state, b"\x00" + alone.to_bytes(4, "big") + body.getvalue())
    assert got is not None and got.value == {"city": "Rome", "zip": "00100"}


def test_json_schema(cluster: MockCluster, registry: SchemaRegistryClient) -> None:
    from confluent_kafka.schema_registry.json_schema import JSONSerializer

    schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
                         "properties": {"id": {"type": "integer"}, "items": {"type": "array"},
                                        "ship": {"type": "object"}}, "required": ["id"]})
    value = {"id": 3, "items": [{"sku": "A-1", "qty": 2}], "ship": {"city": "Lyon", "express": False}}
    data = JSONSerializer(schema, registry)(value, ctx("json-orders"))
    decoded = decode_framed(state_of(cluster), data)
    assert decoded is not None and (decoded.kind, decoded.subject, decoded.error) == ("JSON", "json-orders-value",
                                                                                      None)
    assert decoded.value == value
    broken = decode_framed(state_of(cluster), data[:-3])
    assert broken is not None and broken.value is None
    assert broken.error is not None and broken.error.startswith("JSON Schema payload is not JSON")


@pytest.fixture(scope="module")
def shop_pb2(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return compile_proto(tmp_path_factory.mktemp("proto"), "decodetest_shop", PROTO)


def test_protobuf_nested_second_message_and_repeated(cluster: MockCluster, registry: SchemaRegistryClient,
                                                     shop_pb2: Any) -> None:
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    conf = {"use.deprecated.format": False}
    order = shop_pb2.Order(id=42, tags=["x", "<b>"], status=shop_pb2.Order.PAID, blob=b"\x00\x01",
                           lines=[shop_pb2.Order.Line(sku="A-1", quantity=2), shop_pb2.Order.Line(sku="B-2")])
    data = ProtobufSerializer(shop_pb2.Order, registry, conf)(order, ctx("proto-orders"))
    assert data[5] == 0  # message index [0], written as one 0 byte
    decoded = decode_framed(state_of(cluster), data)
    assert decoded is not None and (decoded.kind, decoded.subject, decoded.error) == ("PROTOBUF",
                                                                                      "proto-orders-value", None)
    # protobuf's JSON mapping: int64 as a string, bytes as base64, enums by name, fields without presence shown
    assert decoded.value == {"id": "42", "tags": ["x", "<b>"], "status": "PAID", "blob": "AAE=",
                             "lines": [{"sku": "A-1", "quantity": 2}, {"sku": "B-2", "quantity": 0}]}

    refund = ProtobufSerializer(shop_pb2.Refund, registry, conf)(shop_pb2.Refund(order_id=42, reason="late"),
                                                                 ctx("proto-refunds"))
    assert refund[5:7] == b"\x02\x02"  # one index, 1: the file's second message
    got = decode_framed(state_of(cluster), refund)
    assert got is not None and got.error is None and got.value == {"order_id": "42", "reason": "late"}

    line = ProtobufSerializer(shop_pb2.Order.Line, registry, conf)(shop_pb2.Order.Line(sku="C", quantity=-1),
                                                                   ctx("proto-lines"))
    assert line[5:8] == b"\x04\x00\x00"  # [0, 0]: Order's first nested message
    nested = decode_framed(state_of(cluster), line)
    assert nested is not None and nested.value == {"sku": "C", "quantity": -1}


def test_protobuf_bad_payloads_are_one_line_errors(cluster: MockCluster, registry: SchemaRegistryClient,
                                                   shop_pb2: Any) -> None:
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    data = ProtobufSerializer(shop_pb2.Order, registry, {"use.deprecated.format": False})(
        shop_pb2.Order(id=1, tags=["a" * 50]), ctx("proto-bad"))
    state = state_of(cluster)
    header = data[:5]
    cases = {
        "index past the file": header + b"\x02\x0a" + data[6:],  # [5]
        "nested index past": header + b"\x04\x00\x14" + data[6:],  # [0, 10]
        "index array cut": header + b"\x06\x00",
        "huge index array": header + b"\xfe\xff\xff\xff\x0f",
        "no index at all": header,
        "truncated message": data[:-10],
        "garbage message": header + b"\x00\xff\xff\xff\xff",
    }
    for label, payload in cases.items():
        got = decode_framed(state, payload)
        assert got is not None and got.value is None, label
        assert got.error is not None and got.error.startswith("Protobuf payload") and "\n" not in got.error, label


def zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def register(registry: SchemaRegistryClient, subject: str, schema: Any) -> bytes:
    """The framing header of an Avro schema registered under ``subject``."""
    schema_id = registry.register_schema(subject, Schema(json.dumps(schema), "AVRO"))
    return b"\x00" + schema_id.to_bytes(4, "big")


def test_avro_garbage_is_bounded(cluster: MockCluster, registry: SchemaRegistryClient, avro_order: Any) -> None:
    """Lengths, counts and depths a payload claims are checked against the bytes there are before fastavro
    reads it: 2^60-byte strings, 2^60 nulls in an array, 10^5 levels of recursion, branches and symbols that
    do not exist all give one line, quickly."""
    state = state_of(cluster)
    data = avro_order(ORDER_VALUE, ctx("orders"))
    header = data[:5]
    nulls = register(registry, "garbage-nulls", {"type": "array", "items": "null"})
    empty = register(registry, "garbage-empty", {"type": "map", "values": {"type": "record", "name": "E",
                                                                           "fields": []}})
    node = register(registry, "garbage-list", {"type": "record", "name": "Node", "fields": [
        {"name": "next", "type": ["null", "Node"]}]})
    cases = {
        "huge string": (header + zigzag(1) + zigzag(2**60), "string of 1152921504606846976 bytes"),
        "huge negative length": (header + zigzag(1) + zigzag(-5), "-5"),
        "truncated": (data[:-3], "at byte"),
        "enum symbol": (header + zigzag(1) + zigzag(1) + b"x\x01" + zigzag(7), "Status symbol index 7"),
        "union branch": (header + zigzag(1) + zigzag(1) + b"x\x01" + zigzag(0) + zigzag(0) + zigzag(9),
                         "union branch index 9"),
        "endless number": (header + b"\xff" * 20, "longer than 10 bytes"),
        "2^60 nulls": (nulls + zigzag(2**60), "1152921504606846976 array items"),
        "2^60 empty records": (empty + zigzag(-(2**60)) + zigzag(3), "1152921504606846976 map items"),
        "deep recursion": (node + b"\x02" * 100_000 + b"\x00", "nests more than"),
    }
    for label, (payload, fragment) in cases.items():
        got = decode_framed(state, payload)
        assert got is not None and got.value is None, label
        assert got.error is not None and got.error.startswith("Avro payload") and "\n" not in got.error, label
        assert fragment in got.error, (label, got.error)
    assert decode_framed(state, nulls + zigzag(3) + zigzag(0)) == Decoded(
        int.from_bytes(nulls[1:], "big"), "AVRO", "garbage-nulls", [None, None, None], None, 1)
    assert decoded_value(state, node + b"\x02\x02\x00") == {"next": {"next": {"next": None}}}
    text = register(registry, "garbage-text", "string")
    bad_text = decode_framed(state, text + zigzag(2) + b"\xff\xfe")
    assert bad_text is not None and bad_text.error is not None and "UnicodeDecodeError" in bad_text.error


def test_not_framed_or_unknown_id_is_none(cluster: MockCluster, avro_order: Any) -> None:
    state = state_of(cluster)
    data = avro_order(ORDER_VALUE, ctx("orders"))
    assert decode_framed(state, b"hello world") is None
    assert decode_framed(state, b"") is None
    assert decode_framed(state, data[:4]) is None  # shorter than the framing
    assert decode_framed(state, b"\x01" + data[1:]) is None  # magic byte 1 (a GUID) is not decoded
    assert decode_framed(state, b"\x00\x00\x0f\x42\x40" + data[5:]) is None  # id 1000000: not registered
    assert decode_framed(state, memoryview(data)) == decode_framed(state, data)


def test_a_decoder_is_built_once_and_forgotten_with_its_schema() -> None:
    state = RegistryState()
    schema_id = state.plan_register("s-value", "AVRO", '"long"', []).apply()
    stored = state.schemas[schema_id]
    assert decoded_value(state, b"\x00" + schema_id.to_bytes(4, "big") + zigzag(-3)) == -3
    built = decode._decoders[id(stored)]
    assert decoded_value(state, b"\x00" + schema_id.to_bytes(4, "big") + zigzag(5)) == 5
    assert decode._decoders[id(stored)] is built
    key = id(stored)
    del state, stored, built
    gc.collect()
    assert key not in decode._decoders
