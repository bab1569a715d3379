"""Unit tests for the AVRO schema type (mockbroker.registry.avro): parse errors, canonical identity,
references, and schema evolutions checked in both directions."""

from __future__ import annotations

import inspect
import json
import sys
from typing import Any

import pytest

from mockbroker.registry import avro
from mockbroker.registry.kinds import ParsedSchema, SchemaError


def rec(*fields: dict[str, Any], name: Any = "User", **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields), **extra}


def fld(name: str, type_: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **extra}


def p(schema: Any, references: dict[str, str] | None = None) -> ParsedSchema:
    return avro.parse(json.dumps(schema), references or {})


def problems(reader: Any, writer: Any) -> list[str]:
    return avro.incompatibilities(p(reader), p(writer))


# ---------------------------------------------------------------------------------------------- parse errors

BAD_SCHEMAS = [
    ("invalid JSON", '{"type": "record",', "invalid JSON"),
    ("unknown primitive", '"strin"', "UnknownType"),
    ("unknown named type", json.dumps(rec(fld("a", "com.example.Nope"))), "UnknownType"),
    ("not a schema", "42", "JSON string, object or array"),
    ("null", "null", "JSON string, object or array"),
    ("bad record name", json.dumps(rec(name="1User")), 'invalid record name "1User"'),
    ("bad namespace", json.dumps(rec(namespace="com.1x")), "invalid record name"),
    ("named after a primitive", json.dumps(rec(name="int")), "primitive type 'int'"),
    ("name not a string", json.dumps(rec(name=5)), "needs a string 'name'"),
    ("bad field name", json.dumps(rec(fld("a-b", "int"))), 'invalid field name "a-b"'),
    ("bad field alias", json.dumps(rec(fld("a", "int", aliases=["x y"]))), 'invalid alias "x y"'),
    ("bad type alias", json.dumps(rec(aliases=["9x"])), 'invalid alias "9x"'),
    ("duplicate field", json.dumps(rec(fld("a", "int"), fld("a", "string"))), "duplicate field 'a'"),
    ("record without fields", '{"type": "record", "name": "R"}', "needs a list of 'fields'"),
    ("field without type", json.dumps(rec({"name": "a"})), "missing 'type'"),
    ("fixed without size", '{"type": "fixed", "name": "F"}', "'size'"),
    ("fixed bad size", '{"type": "fixed", "name": "F", "size": -1}', "invalid size"),
    ("array without items", '{"type": "array"}', "'items'"),
    ("duplicate enum symbol", '{"type": "enum", "name": "E", "symbols": ["A", "A"]}', "unique"),
    ("bad enum symbol", '{"type": "enum", "name": "E", "symbols": ["1A"]}', "symbol"),
    ("enum default not a symbol", '{"type": "enum", "name": "E", "symbols": ["A"], "default": "B"}', "default"),
    ("union duplicate", '["int", "int"]', "contains 'int' twice"),
    ("union in union", '["null", ["int"]]', "contains a union directly"),
    ("redefined type", json.dumps(rec(fld("a", rec(name="User")))), "redefined"),
    ("string default for int", json.dumps(rec(fld("a", "int", default="x"))), "must match"),
    ("null default for string", json.dumps(rec(fld("a", "string", default=None))), "must match"),
    ("int default out of range", json.dumps(rec(fld("a", "int", default=2**40))), "does not match its type"),
    ("array default item", json.dumps(rec(fld("a", {"type": "array", "items": "int"}, default=["x"]))), "default"),
    (
        "enum default not a symbol (field)",
        json.dumps(rec(fld("e", {"type": "enum", "name": "E", "symbols": ["A"]}, default="Z"))),
        "does not match its type",
    ),
    ("union default matches no branch", json.dumps(rec(fld("a", ["null", "int"], default="x"))), "union"),
    (
        "record default misses a field",
        json.dumps(rec(fld("r", rec(fld("x", "int"), name="Inner"), default={}))),
        "does not match its type",
    ),
    ("too deep for JSON", '{"type":"array","items":' * 3000 + '"int"' + "}" * 3000, "invalid JSON"),
]


@pytest.mark.parametrize(("label", "text", "expected"), BAD_SCHEMAS, ids=[b[0] for b in BAD_SCHEMAS])
def test_parse_errors_are_one_line_schema_errors(label: str, text: str, expected: str) -> None:
    with pytest.raises(SchemaError) as info:
        avro.parse(text, {})
    message = str(info.value)
    assert "\n" not in message
    assert expected.lower() in message.lower(), message


def test_bad_reference_is_a_schema_error_naming_it() -> None:
    with pytest.raises(SchemaError, match=r"reference 'addr\.avsc'"):
        avro.parse(json.dumps(rec(fld("a", "Addr"))), {"addr.avsc": "{not json"})


def test_main_schema_may_not_redefine_a_referenced_type() -> None:
    addr = json.dumps(rec(fld("street", "string"), name="Addr"))
    with pytest.raises(SchemaError, match="redefines"):
        avro.parse(json.dumps(rec(fld("a", rec(fld("zip", "int"), name="Addr")))), {"addr.avsc": addr})


GOOD_SCHEMAS = [
    '"string"',
    '{"type": "string"}',
    '["null", "string"]',
    '{"type": "int", "logicalType": "date"}',
    '{"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}',
    json.dumps(rec(fld("a", ["null", "int"], default=None), fld("b", ["null", "int"], default=3))),
    json.dumps(rec(fld("next", ["null", "User"], default=None))),
    json.dumps(rec(fld("r", rec(fld("x", "int", default=3), name="Inner"), default={}))),
    json.dumps(rec(fld("b", "bytes", default="\u00ff"), fld("d", "double", default=1), fld("f", "float", default=0.5))),
    json.dumps(rec(fld("m", {"type": "map", "values": "long"}, default={"a": 1}))),
    json.dumps(rec(fld("e", {"type": "enum", "name": "E", "symbols": ["A", "B"], "default": "A"}, default="B"))),
]


@pytest.mark.parametrize("text", GOOD_SCHEMAS)
def test_valid_schemas_parse(text: str) -> None:
    parsed = avro.parse(text, {})
    assert parsed.kind == "AVRO"
    assert json.loads(parsed.canonical) == json.loads(text)
    assert parsed.references == ()


# ----------------------------------------------------------------------------------------------- canonical


def test_canonical_is_compact_and_whitespace_insensitive() -> None:
    spaced = '{\n  "type" : "record",\n  "name": "User",\n  "fields": [ {"name": "a", "type": "int"} ]\n}'
    compact = '{"type":"record","name":"User","fields":[{"name":"a","type":"int"}]}'
    assert avro.parse(spaced, {}).canonical == compact
    assert avro.parse(spaced, {}) == avro.parse(compact, {})
    assert avro.canonical(spaced) == compact


def test_canonical_keeps_defaults_docs_aliases_and_logical_types() -> None:
    base = rec(fld("a", "int"))
    with_default = rec(fld("a", "int", default=1))
    assert p(base).canonical != p(with_default).canonical
    assert p(with_default).canonical != p(rec(fld("a", "int", default=2))).canonical
    rich = rec(fld("a", {"type": "int", "logicalType": "date"}, doc="day", aliases=["b"]), doc="a user")
    assert json.loads(p(rich).canonical) == rich


def test_canonical_preserves_field_order() -> None:
    ab = p(rec(fld("a", "int"), fld("b", "int")))
    ba = p(rec(fld("b", "int"), fld("a", "int")))
    assert ab.canonical != ba.canonical
    assert ab.canonical.index('"a"') < ab.canonical.index('"b"')


# ---------------------------------------------------------------------------------------------- references


ADDR = rec(fld("street", "string"), name="Address", namespace="com.example")
USER_WITH_ADDR = rec(fld("name", "string"), fld("address", "com.example.Address"), namespace="com.example")


def test_references_define_named_types() -> None:
    parsed = avro.parse(json.dumps(USER_WITH_ADDR), {"address.avsc": json.dumps(ADDR)})
    assert parsed.references == ("address.avsc",)
    assert json.loads(parsed.canonical) == USER_WITH_ADDR


def test_reference_missing_is_an_unknown_type() -> None:
    with pytest.raises(SchemaError, match="UnknownType"):
        avro.parse(json.dumps(USER_WITH_ADDR), {})


def test_references_may_use_each_other_in_any_order() -> None:
    street = {"type": "enum", "name": "Kind", "namespace": "com.example", "symbols": ["ROAD", "LANE"]}
    addr = rec(fld("kind", "com.example.Kind"), name="Address", namespace="com.example")
    refs = {"address.avsc": json.dumps(addr), "kind.avsc": json.dumps(street)}
    parsed = avro.parse(json.dumps(USER_WITH_ADDR), refs)
    assert parsed.references == ("address.avsc", "kind.avsc")


def test_compatibility_follows_referenced_types() -> None:
    addr_v2 = rec(fld("street", "string"), fld("zip", "string"), name="Address", namespace="com.example")
    addr_v3 = rec(fld("street", "string"), fld("zip", "string", default=""), name="Address", namespace="com.example")
    v1 = avro.parse(json.dumps(USER_WITH_ADDR), {"a": json.dumps(ADDR)})
    v2 = avro.parse(json.dumps(USER_WITH_ADDR), {"a": json.dumps(addr_v2)})
    v3 = avro.parse(json.dumps(USER_WITH_ADDR), {"a": json.dumps(addr_v3)})
    assert v1.canonical == v2.canonical  # same text: identity also needs the references (the registry's part)
    reasons = avro.incompatibilities(v2, v1)
    assert len(reasons) == 1 and "'zip'" in reasons[0] and "/fields/1/type/fields/1" in reasons[0]
    assert avro.incompatibilities(v3, v1) == []
    assert avro.incompatibilities(v1, v2) == []


# ---------------------------------------------------------------------------------------------- evolutions

FIXED4 = {"type": "fixed", "name": "F", "size": 4}
ENUM_AB = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}
ENUM_ABC = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}
ENUM_AB_DEFAULT = {**ENUM_AB, "default": "RED"}
ENUM_ABC_DEFAULT = {**ENUM_ABC, "default": "RED"}
INNER_V1 = rec(fld("x", "int"), name="Inner")
INNER_V2_DEFAULT = rec(fld("x", "int"), fld("y", "string", default="?"), name="Inner")
INNER_V2 = rec(fld("x", "int"), fld("y", "string"), name="Inner")
NODE_V1 = rec(fld("value", "int"), fld("next", ["null", "Node"], default=None), name="Node")
NODE_V2 = rec(fld("value", "long"), fld("next", ["null", "Node"], default=None), name="Node")
NODE_V3 = rec(fld("value", "int"), fld("label", "string"), fld("next", ["null", "Node"], default=None), name="Node")

# (label, old, new, BACKWARD ok: new reads old, FORWARD ok: old reads new)
EVOLUTIONS = [
    ("identical", rec(fld("a", "int")), rec(fld("a", "int")), True, True),
    ("add field with default", rec(fld("a", "int")), rec(fld("a", "int"), fld("b", "string", default="")), True, True),
    ("add field without default", rec(fld("a", "int")), rec(fld("a", "int"), fld("b", "string")), False, True),
    ("remove field with default", rec(fld("a", "int"), fld("b", "int", default=0)), rec(fld("a", "int")), True, True),
    ("remove field without default", rec(fld("a", "int"), fld("b", "int")), rec(fld("a", "int")), True, False),
    ("rename field via alias", rec(fld("a", "int")), rec(fld("b", "int", aliases=["a"])), True, False),
    ("rename field without alias", rec(fld("a", "int")), rec(fld("b", "int")), False, False),
    ("rename record via alias", rec(fld("a", "int")), rec(fld("a", "int"), name="P", aliases=["User"]), True, False),
    ("rename record", rec(fld("a", "int")), rec(fld("a", "int"), name="Person"), False, False),
    ("namespace change", rec(fld("a", "int"), namespace="x"), rec(fld("a", "int"), namespace="y"), True, True),
    ("int to long", rec(fld("a", "int")), rec(fld("a", "long")), True, False),
    ("int to double", rec(fld("a", "int")), rec(fld("a", "double")), True, False),
    ("long to float", rec(fld("a", "long")), rec(fld("a", "float")), True, False),
    ("float to double", rec(fld("a", "float")), rec(fld("a", "double")), True, False),
    ("long to int", rec(fld("a", "long")), rec(fld("a", "int")), False, True),
    ("string to bytes", rec(fld("a", "string")), rec(fld("a", "bytes")), True, True),
    ("string to int", rec(fld("a", "string")), rec(fld("a", "int")), False, False),
    ("logical type as underlying", "int", {"type": "int", "logicalType": "date"}, True, True),
    ("enum symbol added", ENUM_AB, ENUM_ABC, True, False),
    ("enum symbol removed", ENUM_ABC, ENUM_AB, False, True),
    ("enum symbol added, old has default", ENUM_AB_DEFAULT, ENUM_ABC_DEFAULT, True, True),
    ("enum symbol removed, new has default", ENUM_ABC, ENUM_AB_DEFAULT, True, True),
    ("enum renamed", ENUM_AB, {**ENUM_AB, "name": "Colour"}, False, False),
    ("union branch added", ["null", "int"], ["null", "int", "string"], True, False),
    ("union branch removed", ["null", "int", "string"], ["null", "int"], False, True),
    ("type to union", "int", ["null", "int"], True, False),
    ("union to union reordered", ["null", "int", "string"], ["string", "null", "int"], True, True),
    (
        "record into union via alias",
        rec(fld("a", "int")),
        ["null", {**rec(fld("a", "int")), "name": "P", "aliases": ["User"]}],
        True,
        False,
    ),
    ("union with promotion", ["null", "int"], ["null", "long"], True, False),
    ("field made optional", rec(fld("a", "int")), rec(fld("a", ["null", "int"], default=None)), True, False),
    ("array items widened", {"type": "array", "items": "int"}, {"type": "array", "items": "long"}, True, False),
    ("map values narrowed", {"type": "map", "values": "double"}, {"type": "map", "values": "float"}, False, True),
    ("array to map", {"type": "array", "items": "int"}, {"type": "map", "values": "int"}, False, False),
    ("fixed same", FIXED4, {**FIXED4}, True, True),
    ("fixed resized", FIXED4, {**FIXED4, "size": 8}, False, False),
    ("fixed renamed", FIXED4, {**FIXED4, "name": "G"}, False, False),
    ("fixed renamed via alias", FIXED4, {**FIXED4, "name": "G", "aliases": ["F"]}, True, False),
    ("nested field added with default", rec(fld("i", INNER_V1)), rec(fld("i", INNER_V2_DEFAULT)), True, True),
    ("nested field added without default", rec(fld("i", INNER_V1)), rec(fld("i", INNER_V2)), False, True),
    ("nested in optional union", rec(fld("i", ["null", INNER_V1])), rec(fld("i", ["null", INNER_V2])), False, True),
    ("recursive record promotion", NODE_V1, NODE_V2, True, False),
    ("recursive record field without default", NODE_V1, NODE_V3, False, True),
]


@pytest.mark.parametrize(("label", "old", "new", "backward", "forward"), EVOLUTIONS, ids=[e[0] for e in EVOLUTIONS])
def test_evolution_in_both_directions(label: str, old: Any, new: Any, backward: bool, forward: bool) -> None:
    back = problems(reader=new, writer=old)
    fwd = problems(reader=old, writer=new)
    assert (back == []) is backward, back
    assert (fwd == []) is forward, fwd
    for reason in back + fwd:
        assert isinstance(reason, str) and reason and "\n" not in reason


# ------------------------------------------------------------------------------------------- reason texts


def test_missing_default_reason_names_field_and_path() -> None:
    reasons = problems(rec(fld("a", "int"), fld("age", "int")), rec(fld("a", "int")))
    assert reasons == [
        "reader field 'age' (path /fields/1) of record 'User' has no default and is missing from the writer"
    ]


def test_type_mismatch_reason_names_path() -> None:
    reasons = problems(
        rec(fld("a", "int"), fld("b", {"type": "array", "items": "int"})),
        rec(fld("a", "int"), fld("b", {"type": "array", "items": "string"})),
    )
    assert len(reasons) == 1
    assert "/fields/1/type/items" in reasons[0] and "int" in reasons[0] and "string" in reasons[0]


def test_enum_reason_lists_missing_symbols() -> None:
    reasons = problems(ENUM_AB, ENUM_ABC)
    assert len(reasons) == 1 and "['BLUE']" in reasons[0] and "Color" in reasons[0]


def test_writer_union_branch_reason_names_branch() -> None:
    reasons = problems(["null", "int"], ["null", "int", "string"])
    assert len(reasons) == 1 and reasons[0].startswith("writer union branch 2 (string)")


def test_nested_union_reason_points_into_the_matching_branch() -> None:
    reasons = problems(rec(fld("i", ["null", INNER_V2])), rec(fld("i", ["null", INNER_V1])))
    assert len(reasons) == 1
    assert "'y'" in reasons[0] and "/fields/0/type/1/fields/1" in reasons[0]


def test_name_mismatch_and_fixed_size_reasons() -> None:
    assert "name mismatch" in problems(rec(fld("a", "int"), name="A"), rec(fld("a", "int"), name="B"))[0]
    sized = problems({"type": "fixed", "name": "F", "size": 4}, {"type": "fixed", "name": "F", "size": 8})
    assert "size" in sized[0] and "4" in sized[0] and "8" in sized[0]


def test_every_problem_is_reported() -> None:
    reader = rec(fld("a", "int"), fld("b", "string"), fld("c", "boolean"))
    writer = rec(fld("a", "string"), fld("c", "int"))
    assert len(problems(reader, writer)) == 3


def test_alias_with_namespace_matches_writer_full_name() -> None:
    writer = rec(fld("a", "int"), name="Old", namespace="com.a")
    reader = rec(fld("a", "int"), name="New", namespace="com.b", aliases=["com.a.Old"])
    assert problems(reader, writer) == []
    relative = rec(fld("a", "int"), name="New", namespace="com.b", aliases=["Old"])  # means com.b.Old
    assert problems(relative, writer) != []


def test_mutually_recursive_records_terminate() -> None:
    tree = rec(
        fld(
            "kids",
            {
                "type": "array",
                "items": rec(fld("parent", ["null", "Tree"], default=None), fld("n", "int"), name="Leaf"),
            },
        ),
        name="Tree",
    )
    wider = json.loads(json.dumps(tree).replace('"int"', '"long"'))
    assert problems(wider, tree) == []
    reasons = problems(tree, wider)
    assert len(reasons) == 1 and "/fields/0/type/items/fields/1/type" in reasons[0]


def test_incompatibilities_with_another_kind() -> None:
    other = ParsedSchema("JSON", "{}", {})
    assert avro.incompatibilities(p("int"), other) != []


def deep_array(levels: int) -> str:
    return '{"type":"array","items":' * levels + '"int"' + "}" * levels


def test_stack_overflow_while_parsing_is_a_schema_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def overflow(*args: Any, **kwargs: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(avro, "parse_schema", overflow)
    with pytest.raises(SchemaError, match="nested too deeply"):
        avro.parse('"int"', {})


def test_stack_overflow_while_comparing_is_a_reason() -> None:
    parsed = avro.parse(deep_array(150), {})
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(len(inspect.stack()) + 100)
        reasons = avro.incompatibilities(parsed, parsed)
    finally:
        sys.setrecursionlimit(limit)
    assert reasons == ["the schemas are nested too deeply to compare"]
    assert avro.incompatibilities(parsed, parsed) == []
