"""Unit tests of the PROTOBUF schema type: parsing (text, base64 descriptor, references, well-known imports),
canonical identity, the serialized form and Confluent's compatibility rules."""

from __future__ import annotations

import base64
from importlib import resources

import pytest
from google.protobuf import descriptor_pb2, timestamp_pb2

from mockbroker.registry import protobuf
from mockbroker.registry.kinds import ParsedSchema, SchemaError

USER = """
syntax = "proto3";
package shop;
// a comment that does not change the schema
message User {
  string name = 1;
  int32 age = 2;
  map<string, int64> scores = 3;
  Address address = 4;
  oneof contact { string email = 5; string phone = 6; }
  Kind kind = 7;
}
message Address { string city = 1; }
enum Kind { KIND_UNKNOWN = 0; KIND_ADMIN = 1; }
"""


def proto3(body: str, package: str = "shop") -> ParsedSchema:
    return protobuf.parse(f'syntax = "proto3";\npackage {package};\n{body}', {})


def proto2(body: str) -> ParsedSchema:
    return protobuf.parse(f'syntax = "proto2";\npackage shop;\n{body}', {})


@pytest.mark.parametrize("text, fragment", [
    ('syntax = "proto3"; message A { int32 x = 1 }', 'Expected ";"'),
    ('syntax = "proto3"; message A { Missing x = 1; }', "Missing"),
    ('syntax = "proto3"; message A { int32 x = 1; int32 y = 1; }', "already been used"),
    ('syntax = "proto3"; import "nowhere.proto"; message A {}', "nowhere.proto"),
    ("", "empty"),
    ("   ", "empty"),
])
def test_parse_errors_are_one_line_schema_errors(text: str, fragment: str, capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SchemaError) as info:
        protobuf.parse(text, {})
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)
    assert capfd.readouterr().err == ""  # protoc's messages go into the error, never to this process's stderr


def test_a_well_known_file_is_a_schema_itself() -> None:
    """google/protobuf/timestamp.proto registered as a subject (its base64 descriptor, as confluent-kafka's
    ProtobufSerializer sends it with skip.known.types=False, or its text) is a schema like any other: the
    built-in twin is given to protoc only when a schema imports it."""
    raw = base64.b64encode(timestamp_pb2.DESCRIPTOR.serialized_pb).decode()
    parsed = protobuf.parse(raw, {})
    assert "package google.protobuf;" in parsed.canonical and "message Timestamp {" in parsed.canonical
    assert protobuf.parse(parsed.canonical, {}).canonical == parsed.canonical
    # a schema importing it, with the subject as its reference or resolved by the registry alone
    user = ('syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\n'
            "message U { google.protobuf.Timestamp at = 1; }")
    by_reference = protobuf.parse(user, {"google/protobuf/timestamp.proto": raw})
    assert by_reference.canonical == protobuf.parse(user, {}).canonical


def test_every_well_known_file_is_a_schema_itself() -> None:
    """Each built-in file (google/protobuf, google/type, confluent), given as the base64 descriptor a
    serializer registers, parses, its own imports resolved from the others."""
    builtins = protobuf._builtin_files()
    assert {"google/protobuf/timestamp.proto", "google/type/date.proto", "confluent/meta.proto"} <= set(builtins)
    for name, raw in builtins.items():
        parsed = protobuf.parse(base64.b64encode(raw).decode(), {})
        fdp = descriptor_pb2.FileDescriptorProto.FromString(raw)
        assert f"package {fdp.package};" in parsed.canonical if fdp.package else "package" not in parsed.canonical, name
        assert [m.name for m in parsed.parsed.main.message_type] == [m.name for m in fdp.message_type], name


def test_a_symbol_defined_twice_names_it(capfd: pytest.CaptureFixture[str]) -> None:
    """Two given files defining one symbol: protoc's message (an absl log line) is the error, not the
    'WARNING: All log messages before absl::InitializeLog()' preamble before it."""
    raw = base64.b64encode(timestamp_pb2.DESCRIPTOR.serialized_pb).decode()
    with pytest.raises(SchemaError) as info:
        protobuf.parse(raw, {"other.proto": raw})
    assert str(info.value) == ('invalid Protobuf schema: Symbol name "google.protobuf.Timestamp" conflicts with the '
                               'existing symbol "google.protobuf.Timestamp".')
    assert capfd.readouterr().err == ""


def test_garbage_base64_is_a_schema_error() -> None:
    with pytest.raises(SchemaError):
        protobuf.parse("bm90IGEgZGVzY3JpcHRvcg==", {})


def test_kind_and_canonical_ignore_comments_and_layout() -> None:
    parsed = protobuf.parse(USER, {})
    assert parsed.kind == "PROTOBUF"
    assert "comment" not in parsed.canonical
    compact = " ".join(line for line in USER.splitlines() if not line.strip().startswith("//"))
    assert protobuf.parse(compact, {}).canonical == parsed.canonical
    assert "map<string, int64> scores = 3;" in parsed.canonical


def test_canonical_text_reparses_to_itself() -> None:
    parsed = protobuf.parse(USER, {})
    assert protobuf.parse(parsed.canonical, {}).canonical == parsed.canonical


def test_text_and_base64_descriptor_are_the_same_schema() -> None:
    parsed = protobuf.parse(USER, {})
    again = protobuf.parse(protobuf.serialized(parsed), {})
    assert again.canonical == parsed.canonical
    assert again == parsed


def test_generated_code_descriptor_matches_its_proto_text() -> None:
    # generated code's descriptor (no json names, no source info) against protoc's parse of the same text,
    # moved out of package google.protobuf so that it does not clash with the built-in file
    source = (resources.files("grpc_tools") / "_proto" / "google" / "protobuf" / "timestamp.proto").read_text()
    as_text = protobuf.parse(source.replace("package google.protobuf;", "package wk;"), {})
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.ParseFromString(timestamp_pb2.DESCRIPTOR.serialized_pb)
    fdp.package = "wk"
    as_descriptor = protobuf.parse(base64.b64encode(fdp.SerializeToString()).decode(), {})
    assert as_text.canonical == as_descriptor.canonical


def test_serialized_round_trip() -> None:
    parsed = protobuf.parse(USER, {})
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.ParseFromString(base64.b64decode(protobuf.serialized(parsed)))
    assert fdp.package == "shop"
    assert [m.name for m in fdp.message_type] == ["User", "Address"]
    user = fdp.message_type[0]
    assert [f.name for f in user.field] == ["name", "age", "scores", "address", "email", "phone", "kind"]
    assert user.field[3].type_name == ".shop.Address"


def test_well_known_import_needs_no_reference() -> None:
    parsed = protobuf.parse('syntax = "proto3"; import "google/protobuf/timestamp.proto";'
                            "message E { google.protobuf.Timestamp at = 1; }", {})
    assert 'import "google/protobuf/timestamp.proto";' in parsed.canonical
    assert ".google.protobuf.Timestamp at = 1;" in parsed.canonical
    assert parsed.references == ()


OTHER = 'syntax = "proto3"; package common; message Money { int64 cents = 1; string currency = 2; }'
ORDER = 'syntax = "proto3"; package shop; import "common/money.proto"; message Order { common.Money total = 1; }'


def test_references_as_text_or_descriptor() -> None:
    by_text = protobuf.parse(ORDER, {"common/money.proto": OTHER})
    other_b64 = protobuf.serialized(protobuf.parse(OTHER, {}))
    by_b64 = protobuf.parse(ORDER, {"common/money.proto": other_b64})
    assert by_text.references == ("common/money.proto",)
    assert by_text.canonical == by_b64.canonical
    assert ".common.Money total = 1;" in by_text.canonical


def test_missing_reference_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match=r"common/money\.proto"):
        protobuf.parse(ORDER, {})


def test_nested_reference_types_are_compared() -> None:
    old = protobuf.parse(ORDER, {"common/money.proto": OTHER})
    changed = OTHER.replace("int64 cents", "string cents")
    new = protobuf.parse(ORDER, {"common/money.proto": changed})
    reasons = protobuf.incompatibilities(new, old)
    assert len(reasons) == 1 and "FIELD_SCALAR_KIND_CHANGED" in reasons[0] and "'cents'" in reasons[0]


BASE = "message User { string name = 1; int32 age = 2; Address address = 3; } message Address { string city = 1; }"

# (writer, reader, rule expected in incompatibilities(reader, writer) or None, same for the other direction)
EVOLUTIONS = [
    ("identical", BASE, BASE, None, None),
    ("field added", BASE, BASE.replace("Address address = 3;", "Address address = 3; string email = 4;"),
     None, None),
    ("field renamed", BASE, BASE.replace("int32 age", "int32 years"), None, None),
    ("field number changed", BASE, BASE.replace("int32 age = 2", "int32 age = 5"), None, None),
    ("int32 to int64", BASE, BASE.replace("int32 age", "int64 age"), None, None),
    ("int32 to bool", BASE, BASE.replace("int32 age", "bool age"), None, None),
    ("int32 to sint32", BASE, BASE.replace("int32 age", "sint32 age"),
     "FIELD_SCALAR_KIND_CHANGED", "FIELD_SCALAR_KIND_CHANGED"),
    ("string to bytes", BASE, BASE.replace("string name", "bytes name"), None, None),
    ("string to int32", BASE, BASE.replace("string name", "int32 name"),
     "FIELD_SCALAR_KIND_CHANGED", "FIELD_SCALAR_KIND_CHANGED"),
    ("message to scalar", BASE, BASE.replace("Address address", "string address"),
     "FIELD_KIND_CHANGED", "FIELD_KIND_CHANGED"),
    ("message added", BASE, BASE + " message Place { string city = 1; }", None, None),
    ("field removed", BASE, BASE.replace("int32 age = 2;", ""), None, None),
    ("nested message field changed", BASE, BASE.replace("string city", "int64 city"),
     "FIELD_SCALAR_KIND_CHANGED", "FIELD_SCALAR_KIND_CHANGED"),
    ("two fields moved to a oneof", BASE, BASE.replace("string name = 1; int32 age = 2;",
                                                       "oneof who { string name = 1; int32 age = 2; }"),
     "MULTIPLE_FIELDS_MOVED_TO_ONEOF", None),
    ("one field moved to a new oneof", BASE, BASE.replace("string name = 1;", "oneof who { string name = 1; }"),
     None, None),
]


@pytest.mark.parametrize("name, writer, reader, forward, backward", EVOLUTIONS, ids=[e[0] for e in EVOLUTIONS])
def test_evolutions(name: str, writer: str, reader: str, forward: str | None, backward: str | None) -> None:
    w, r = proto3(writer), proto3(reader)
    for reasons, rule in ((protobuf.incompatibilities(r, w), forward), (protobuf.incompatibilities(w, r), backward)):
        if rule is None:
            assert reasons == []
        else:
            assert reasons and all(rule in reason for reason in reasons), reasons


def test_named_type_changed_names_message_and_field() -> None:
    w = proto3(BASE + " message Place { string city = 1; }")
    r = proto3(BASE.replace("Address address", "Place address") + " message Place { string city = 1; }")
    reasons = protobuf.incompatibilities(r, w)
    assert len(reasons) == 1
    assert reasons[0].startswith("FIELD_NAMED_TYPE_CHANGED") and "'address'" in reasons[0] and "'User'" in reasons[0]


def test_message_removed_and_package_changed() -> None:
    w = proto3(BASE)
    r = proto3("message Other { string name = 1; }")
    assert any(reason.startswith("MESSAGE_REMOVED") for reason in protobuf.incompatibilities(r, w))
    moved = proto3(BASE, package="store")  # a package change alone is compatible in Confluent's examples
    assert protobuf.incompatibilities(moved, w) == [] and protobuf.incompatibilities(w, moved) == []


def test_imported_types_are_compared_without_their_package() -> None:
    home = 'syntax = "proto3";\npackage {pkg};\nmessage Home {{ {kind} id = 1; bool on = 2; }}\n'
    user = 'syntax = "proto3";\nimport "{file}";\nmessage User {{ .{pkg}.Home home = 1; }}\n'

    def parse(pkg: str, kind: str) -> ParsedSchema:
        file = f"{pkg}.proto"
        return protobuf.parse(user.format(file=file, pkg=pkg), {file: home.format(pkg=pkg, kind=kind)})

    same, other_package, other_field = parse("a.b", "int32"), parse("a.c", "int32"), parse("a.c", "string")
    assert protobuf.incompatibilities(other_package, same) == []
    reasons = protobuf.incompatibilities(other_field, same)
    assert reasons and reasons[0].startswith("FIELD_SCALAR_KIND_CHANGED")


@pytest.mark.parametrize(("kind", "compatible"), [("string", True), ("bytes", True), ("Inner", True),
                                                  ("int32", False), ("double", False)])
def test_singular_to_repeated(kind: str, compatible: bool) -> None:
    body = "message A {{ {label} {kind} f = 1; message Inner {{ string s = 1; }} }}"
    single, many = proto3(body.format(label="optional", kind=kind)), proto3(body.format(label="repeated", kind=kind))
    for reasons in (protobuf.incompatibilities(many, single), protobuf.incompatibilities(single, many)):
        assert (reasons == []) is compatible, reasons
        assert compatible or reasons[0].startswith("FIELD_NUMERIC_LABEL_CHANGED")


def test_oneof_field_removed() -> None:
    w = proto3("message A { oneof k { string a = 1; int32 b = 2; } }")
    r = proto3("message A { oneof k { string a = 1; } }")
    reasons = protobuf.incompatibilities(r, w)
    assert len(reasons) == 1 and reasons[0].startswith("ONEOF_FIELD_REMOVED") and "'b'" in reasons[0]
    assert protobuf.incompatibilities(w, r) == []


def test_required_fields_proto2() -> None:
    w = proto2("message A { required string a = 1; }")
    r = proto2("message A { required string a = 1; required int32 b = 2; }")
    assert protobuf.incompatibilities(r, w)[0].startswith("REQUIRED_FIELD_ADDED")
    assert protobuf.incompatibilities(w, r)[0].startswith("REQUIRED_FIELD_REMOVED")
    assert protobuf.incompatibilities(w, w) == []


def test_a_syntax_change_alone_is_compatible() -> None:
    w = proto2("message A { optional string a = 1; }")
    r = proto3("message A { string a = 1; }")
    assert protobuf.incompatibilities(r, w) == [] and protobuf.incompatibilities(w, r) == []


def test_optional_to_required_is_refused_and_required_to_optional_is_not() -> None:
    optional, required = proto2("message A { optional int32 a = 1; }"), proto2("message A { required int32 a = 1; }")
    assert protobuf.incompatibilities(required, optional)[0].startswith("REQUIRED_FIELD_ADDED")
    assert protobuf.incompatibilities(optional, required) == []


def test_enum_changes_are_compatible() -> None:
    w = proto3("message A { E e = 1; } enum E { E0 = 0; E1 = 1; }")
    r = proto3("message A { E e = 1; } enum E { E0 = 0; E2 = 2; }")
    assert protobuf.incompatibilities(r, w) == [] and protobuf.incompatibilities(w, r) == []
    as_int = proto3("message A { int32 e = 1; }")  # an enum is a varint: Confluent accepts int32 <-> enum
    assert protobuf.incompatibilities(as_int, w) == [] and protobuf.incompatibilities(w, as_int) == []
    as_string = proto3("message A { string e = 1; }")
    assert protobuf.incompatibilities(as_string, w)[0].startswith("FIELD_KIND_CHANGED")


def test_serialized_loads_into_a_descriptor_pool_like_the_deserializer() -> None:
    from google.protobuf import descriptor_pool

    parsed = protobuf.parse('syntax = "proto3"; package ev; import "google/protobuf/timestamp.proto";'
                            "message Event { google.protobuf.Timestamp at = 1; string id = 2; }", {})
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.ParseFromString(base64.standard_b64decode(protobuf.serialized(parsed)))
    fdp.name = "default"
    pool.Add(fdp)
    event = pool.FindMessageTypeByName("ev.Event")
    assert [f.name for f in event.fields] == ["at", "id"]
