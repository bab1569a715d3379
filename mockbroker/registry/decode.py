"""Decode record bytes written by Confluent's serializers with the schemas of the cluster's own registry.

Confluent's framing is a magic byte 0 and the schema id (4 bytes, big-endian), then the payload: Avro binary
(schemaless; a schema that is just ``bytes`` is the bytes themselves), JSON text for JSON Schema, or for
Protobuf the message-index array (zigzag varints: a count, then the path to the message type in the file; a
single 0 byte is ``[0]``, the first message) and the message's protobuf bytes.

    decoded = decode_framed(registry_state, record_value)   # None: not framed, or an id the registry lacks
    decoded.value    # plain JSON-able data (bytes and fixed as hex, decimals, dates and uuids as strings)
    decoded.error    # or one line saying why the payload does not decode under its schema

A payload is data a client chose: a corrupt one never hangs, recurses without end or allocates what its
lengths claim (an Avro payload is walked against its schema first, every length and count checked against
the bytes there are, before fastavro reads it), and every failure is one line in ``error``.  The decoder
built for a schema (fastavro's reader schema, a Protobuf descriptor pool and message classes) is kept while
the registry keeps that schema: a registry never changes the schema under an id.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import io
import json
import struct
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastavro import parse_schema, schemaless_reader
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory  # type: ignore[import-untyped]

from mockbroker.registry.kinds import one_line
from mockbroker.registry.state import RegistryState, StoredSchema

MAGIC = 0
HEADER = 5  # magic byte + 4-byte schema id
MAX_DEPTH = 200  # levels an Avro payload may nest (a union, a record and its field are three)
MIN_VALUE_BUDGET = 100_000  # values an Avro payload may hold beyond two per byte (items of zero bytes: null, {})
_WRAPPER = "mockbroker_decode_wrapper__"


@dataclass(frozen=True)
class Decoded:
    """A framed payload and what it holds: ``value`` when it decodes, else ``error`` (one line)."""

    schema_id: int
    kind: str  # "AVRO", "JSON" or "PROTOBUF"
    subject: str | None  # the first subject using the schema
    value: Any
    error: str | None = None
    version: int | None = None  # that subject's version


class PayloadError(ValueError):
    """The payload does not decode under its schema (the message is one line)."""


def schema_id_of(data: bytes) -> int | None:
    """The schema id in Confluent's framing, or None when ``data`` is not framed."""
    if len(data) < HEADER or data[0] != MAGIC:
        return None
    return int(struct.unpack_from(">I", data, 1)[0])


def decode_framed(state: RegistryState, data: bytes | bytearray | memoryview) -> Decoded | None:
    """Decode ``data`` with the registered schema its framing names; None when it is not framed or the
    registry has no schema under that id.  A payload that does not decode gives ``error``, never raises."""
    raw = bytes(data)
    schema_id = schema_id_of(raw)
    if schema_id is None or schema_id not in state.schemas:
        return None
    stored = state.schemas[schema_id]
    uses = state.uses_of(schema_id) or state.uses_of(schema_id, deleted=True)
    subject, version = (uses[0].subject, uses[0].version) if uses else (None, None)
    kind = stored.parsed.kind
    try:
        value = _decoder(stored)(raw[HEADER:])
    except PayloadError as exc:
        return Decoded(schema_id, kind, subject, None, one_line(str(exc)), version)
    except RecursionError:
        return Decoded(schema_id, kind, subject, None, f"{_NAMES.get(kind, kind)} payload nests too deeply",
                       version)
    except Exception as exc:  # whatever a decoder raises on a payload it cannot read
        message = one_line(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        return Decoded(schema_id, kind, subject, None, f"{_NAMES.get(kind, kind)} payload does not decode: "
                                                       f"{message}", version)
    return Decoded(schema_id, kind, subject, value, None, version)


_NAMES = {"AVRO": "Avro", "JSON": "JSON Schema", "PROTOBUF": "Protobuf"}
Decoder = Callable[[bytes], Any]
# built decoders by id(StoredSchema), each with a weak reference to its schema (StoredSchema is not hashable)
_decoders: dict[int, tuple[weakref.ref[StoredSchema], Decoder]] = {}


def _decoder(stored: StoredSchema) -> Decoder:
    key = id(stored)
    cached = _decoders.get(key)
    if cached is not None and cached[0]() is stored:
        return cached[1]
    built = _build(stored)
    _decoders[key] = (weakref.ref(stored, functools.partial(_forget, key)), built)
    return built


def _forget(key: int, ref: weakref.ref[StoredSchema]) -> None:
    entry = _decoders.get(key)
    if entry is not None and entry[0] is ref:
        del _decoders[key]


def _build(stored: StoredSchema) -> Decoder:
    kind = stored.parsed.kind
    if kind == "AVRO":
        return AvroDecoder(stored.parsed.parsed.root, stored.parsed.parsed.named).decode
    if kind == "JSON":
        return _decode_json
    if kind == "PROTOBUF":
        return ProtobufDecoder(stored.parsed.parsed.main, stored.parsed.parsed.files).decode
    raise PayloadError(f"schemas of type {kind} are not decoded")


# -- JSON Schema -----------------------------------------------------------------------------------------
def _decode_json(payload: bytes) -> Any:
    try:
        return json.loads(payload.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise PayloadError(f"JSON Schema payload is not UTF-8: {exc.reason} at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise PayloadError(f"JSON Schema payload is not JSON: {exc.msg} at character {exc.pos}") from None


# -- Avro ------------------------------------------------------------------------------------------------
def plain(value: Any) -> Any:
    """fastavro's value as plain JSON-able data: bytes and fixed as hex, decimals, dates, times and uuids as
    strings."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (datetime.date, datetime.time)):  # datetime.datetime is a date
        return value.isoformat()
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    return value


_PRIMITIVE_SIZES = {"null": 0, "boolean": 1, "float": 4, "double": 8}


@dataclass
class _Cursor:
    """Where the bounds walk is in the payload, and how many more values it may hold.  Errors give positions
    in the whole record (the framing counted), as its hex dump shows them."""

    data: bytes
    budget: int
    pos: int = 0

    @property
    def at(self) -> int:
        return HEADER + self.pos

    def varint(self) -> int:
        """An Avro int or long (zigzag varint, at most 10 bytes)."""
        start, shift, result = self.at, 0, 0
        for _ in range(10):
            if self.pos >= len(self.data):
                raise PayloadError(f"Avro payload ends inside the number at byte {start}")
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7
        raise PayloadError(f"Avro payload has a number longer than 10 bytes at byte {start}")

    def skip(self, size: int, what: str, start: int | None = None) -> None:
        left = len(self.data) - self.pos
        if size < 0 or size > left:
            raise PayloadError(f"Avro payload claims a {what} of {size} bytes at byte "
                               f"{self.at if start is None else start} but {left} are left")
        self.pos += size

    def sized(self, what: str) -> None:
        """Step over a length and that many bytes (bytes, string, a map key)."""
        start = self.at
        self.skip(self.varint(), what, start)

    def index(self, size: int, what: str) -> int:
        """An index into ``size`` things (a union's branches, an enum's symbols)."""
        start = self.at
        found = self.varint()
        if not 0 <= found < size:
            raise PayloadError(f"Avro payload has {what} index {found} at byte {start}; there are {size}")
        return found

    def spend(self, count: int, what: str, start: int) -> None:
        if count > self.budget:
            raise PayloadError(f"Avro payload claims {count} {what} at byte {start}, more than it can hold")
        self.budget -= count


@dataclass
class AvroDecoder:
    """Read a schemaless Avro payload as Confluent's AvroSerializer writes it, after checking its bounds."""

    root: Any
    named: dict[str, Any]
    reader: Any = field(init=False)
    raw_bytes: bool = field(init=False)

    def __post_init__(self) -> None:
        root = {k: v for k, v in self.root.items() if not k.startswith("__")} if isinstance(self.root, dict) \
            else self.root
        # a record of one field is written as that field alone: the wrapper reads any root, named or a union
        wrapper = {"type": "record", "name": _WRAPPER, "fields": [{"name": "value", "type": root}]}
        self.reader = parse_schema(wrapper, named_schemas=dict(self.named))
        resolved = self.named.get(self.root, self.root) if isinstance(self.root, str) else self.root
        self.raw_bytes = _type_of(resolved) == "bytes"  # AvroSerializer writes a bytes schema's value as it is

    def decode(self, payload: bytes) -> Any:
        if self.raw_bytes:
            return payload.hex()
        cursor = _Cursor(payload, MIN_VALUE_BUDGET + 2 * len(payload))
        self.walk(self.root, cursor, 0)
        record: Any = schemaless_reader(io.BytesIO(payload), self.reader)
        return plain(record["value"])

    def walk(self, node: Any, cur: _Cursor, depth: int) -> None:
        """Step over one value of schema ``node``, checking every length and count against what is left."""
        if depth > MAX_DEPTH:
            raise PayloadError(f"Avro payload nests more than {MAX_DEPTH} levels deep")
        cur.spend(1, "values", cur.at)
        if isinstance(node, list):
            self.walk(node[cur.index(len(node), "union branch")], cur, depth + 1)
            return
        kind = _type_of(node)
        if not isinstance(kind, str) or kind in self.named:  # {"type": {...}}, a union, a named type's name
            self.walk(self.named.get(kind, kind) if isinstance(kind, str) else kind, cur, depth + 1)
        elif kind in _PRIMITIVE_SIZES:
            cur.skip(_PRIMITIVE_SIZES[kind], kind)
        elif kind in ("int", "long"):
            cur.varint()
        elif kind in ("bytes", "string"):
            cur.sized(kind)
        elif kind == "fixed":
            cur.skip(int(node["size"]), "fixed")
        elif kind == "enum":
            cur.index(len(node["symbols"]), f"{node['name']} symbol")
        elif kind in ("record", "error"):
            for fld in node["fields"]:
                self.walk(fld["type"], cur, depth + 1)
        elif kind in ("array", "map"):
            self.blocks(node, kind, cur, depth)
        else:
            raise PayloadError(f"Avro schema has a type the decoder does not know: {kind}")

    def blocks(self, node: dict[str, Any], kind: str, cur: _Cursor, depth: int) -> None:
        items = node["items"] if kind == "array" else node["values"]
        while True:
            start = cur.at
            count = cur.varint()
            if count == 0:
                return
            if count < 0:  # a block with its size in bytes
                count = -count
                cur.varint()
            cur.spend(count, f"{kind} items", start)
            for _ in range(count):
                if kind == "map":
                    cur.sized("map key")
                self.walk(items, cur, depth + 1)


def _type_of(node: Any) -> Any:
    return node.get("type") if isinstance(node, dict) else node


# -- Protobuf --------------------------------------------------------------------------------------------
class ProtobufDecoder:
    """Message classes built from the schema's FileDescriptorProtos, one per message-index path."""

    def __init__(self, main: descriptor_pb2.FileDescriptorProto,
                 files: dict[str, descriptor_pb2.FileDescriptorProto]) -> None:
        self.main = main
        self.pool = descriptor_pool.DescriptorPool()
        added: set[str] = set()

        def add(name: str, fdp: descriptor_pb2.FileDescriptorProto) -> None:
            if name in added:
                return
            added.add(name)
            for dep in fdp.dependency:
                if dep in files:
                    add(dep, files[dep])
            self.pool.AddSerializedFile(fdp.SerializeToString())

        for name, fdp in files.items():
            add(name, fdp)
        self.classes: dict[tuple[int, ...], Any] = {}

    def message_class(self, indexes: tuple[int, ...]) -> Any:
        if indexes not in self.classes:
            names: list[str] = []
            messages = self.main.message_type
            for depth, index in enumerate(indexes):
                if not 0 <= index < len(messages):
                    where = "the file has" if depth == 0 else f"{names[-1]} has {len(messages)} nested"
                    if depth == 0:
                        where += f" {len(messages)}"
                    raise PayloadError(f"Protobuf payload names message index {list(indexes)}: {where} "
                                       f"message type(s), no index {index}")
                names.append(messages[index].name)
                messages = messages[index].nested_type
            full = ".".join(([self.main.package] if self.main.package else []) + names)
            self.classes[indexes] = message_factory.GetMessageClass(self.pool.FindMessageTypeByName(full))
        return self.classes[indexes]

    def decode(self, payload: bytes) -> Any:
        indexes, pos = _message_indexes(payload)
        message = self.message_class(indexes)()
        message.ParseFromString(payload[pos:])
        return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                         always_print_fields_with_no_presence=True, descriptor_pool=self.pool)


def _message_indexes(payload: bytes) -> tuple[tuple[int, ...], int]:
    """The message-index array at the start of a Protobuf payload, and where the message begins."""
    pos = 0

    def varint() -> int:
        nonlocal pos
        shift = result = 0
        for _ in range(10):
            if pos >= len(payload):
                raise PayloadError("Protobuf payload ends inside its message-index array")
            byte = payload[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7
        raise PayloadError("Protobuf payload has a message-index number longer than 10 bytes")

    count = varint()
    if count == 0:
        return (0,), pos
    if not 0 < count <= len(payload) - pos:
        raise PayloadError(f"Protobuf payload claims a message-index array of {count} numbers in "
                           f"{len(payload) - pos} bytes")
    return tuple(varint() for _ in range(count)), pos
