"""The JSON Schema type of the Schema Registry: parse errors, canonical text, $ref through references, and a table
of schema evolutions with the verdict expected in each direction (Confluent's difference type names)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mockbroker.registry import json_schema
from mockbroker.registry.kinds import ParsedSchema, SchemaError

STR = {"type": "string"}
INT = {"type": "integer"}


def _parse(schema: Any, references: dict[str, Any] | None = None) -> ParsedSchema:
    refs = {name: json.dumps(text) for name, text in (references or {}).items()}
    return json_schema.parse(json.dumps(schema), refs)


def _obj(props: dict[str, Any], required: list[str] | None = None, extra: Any = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required is not None:
        schema["required"] = required
    if extra is not None:
        schema["additionalProperties"] = extra
    return schema


# -- parse errors --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "references", "fragment"),
    [
        ("{not json", {}, "invalid JSON"),
        ("42", {}, "object or a boolean"),
        ('"string"', {}, "object or a boolean"),
        ('{"type": 5}', {}, "invalid JSON Schema at #/type"),
        ('{"type": "strnig"}', {}, "invalid JSON Schema"),
        ('{"minimum": "x"}', {}, "invalid JSON Schema at #/minimum"),
        ('{"properties": {"a": {"maxLength": -1}}}', {}, "#/properties/a/maxLength"),
        ('{"required": "a"}', {}, "invalid JSON Schema"),
        ('{"$schema": "http://example.com/my-dialect"}', {}, "unknown $schema"),
        ('{"$schema": 7}', {}, "$schema must be a string"),
        ('{"$ref": "#/definitions/missing"}', {}, "does not resolve"),
        ('{"properties": {"a": {"$ref": "other.json"}}}', {}, "$ref \"other.json\" at #/properties/a"),
        ('{"$ref": "address.json"}', {"address.json": "{bad"}, "reference 'address.json': invalid JSON"),
        ('{"$ref": "address.json"}', {"address.json": '{"type": 1}'}, "reference 'address.json': invalid JSON"),
        ('{"$ref": "a.json"}', {"a.json": '{"$ref": "#/nope"}'}, "reference 'a.json': $ref"),
        ("[" * 100_000 + "]" * 100_000, {}, "schema"),
    ],
)
def test_parse_errors_are_one_line_schema_errors(text: str, references: dict[str, str], fragment: str) -> None:
    with pytest.raises(SchemaError) as info:
        json_schema.parse(text, references)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_parse_rejects_non_string_text_and_bad_references() -> None:
    with pytest.raises(SchemaError, match="must be a string"):
        json_schema.parse(None, {})  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="references must map"):
        json_schema.parse("{}", ["a.json"])  # type: ignore[arg-type]


def test_a_ref_inside_enum_or_default_is_data_not_a_reference() -> None:
    parsed = _parse({"enum": [{"$ref": "nowhere"}], "default": {"$ref": "nowhere"}})
    assert parsed.kind == "JSON"


@pytest.mark.parametrize("dialect", [
    "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
])
def test_every_dialect_confluent_supports_parses(dialect: str) -> None:
    parsed = _parse({"$schema": dialect, "type": "object", "properties": {"a": STR}})
    assert parsed.canonical.startswith('{"$schema":')


def test_the_dialect_decides_what_is_valid() -> None:
    # draft-04 wants exclusiveMinimum to be a boolean, draft-07 a number
    with pytest.raises(SchemaError):
        _parse({"$schema": "http://json-schema.org/draft-04/schema#", "exclusiveMinimum": 3})
    assert _parse({"exclusiveMinimum": 3}).kind == "JSON"


# -- canonical -----------------------------------------------------------------------------------------------------

def test_canonical_is_compact_and_keeps_key_order() -> None:
    spaced = '{ "type" : "object",\n  "properties" : { "b" : {"type": "string"}, "a": {"type": "integer"} } }'
    compact = '{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}}}'
    assert json_schema.parse(spaced, {}).canonical == compact
    assert json_schema.canonical(spaced) == compact
    assert json_schema.parse(spaced, {}) == json_schema.parse(compact, {})
    reordered = '{"properties":{"b":{"type":"string"},"a":{"type":"integer"}},"type":"object"}'
    assert json_schema.parse(reordered, {}) != json_schema.parse(compact, {})


def test_boolean_schemas_and_references_are_kept() -> None:
    assert json_schema.parse("true", {}).canonical == "true"
    parsed = _parse({"$ref": "b.json"}, {"a.json": STR, "b.json": INT})
    assert parsed.references == ("a.json", "b.json")


# -- $ref via references -------------------------------------------------------------------------------------------

ADDRESS = {"type": "object", "properties": {"street": STR, "zip": STR}, "definitions": {"code": INT}}


def test_refs_resolve_through_references_by_import_name() -> None:
    person = _obj({"home": {"$ref": "address.json"}, "code": {"$ref": "address.json#/definitions/code"}})
    parsed = _parse(person, {"address.json": ADDRESS})
    assert json_schema.incompatibilities(parsed, parsed) == []


def test_a_ref_to_a_meta_schema_resolves() -> None:
    assert _parse({"$ref": "http://json-schema.org/draft-07/schema#"}).kind == "JSON"


def test_refs_resolve_when_the_schema_has_an_absolute_id() -> None:
    person = {"$id": "https://example.com/schemas/person.json", **_obj({"home": {"$ref": "address.json"}})}
    assert _parse(person, {"address.json": ADDRESS}).kind == "JSON"


def test_a_change_inside_a_referenced_schema_is_found() -> None:
    person = _obj({"home": {"$ref": "address.json"}})
    old = _parse(person, {"address.json": ADDRESS})
    new_address = {**ADDRESS, "properties": {"street": STR, "zip": INT}}
    new = _parse(person, {"address.json": new_address})
    problems = json_schema.incompatibilities(new, old)
    assert problems == [
        "TYPE_CHANGED at #/properties/home/properties/zip: writer type(s) ['string'] became ['integer']"]


def test_other_kinds_are_refused() -> None:
    parsed = _parse(STR)
    avro = ParsedSchema("AVRO", '"string"', None)
    assert json_schema.incompatibilities(parsed, avro) == ["the writer schema is of type AVRO, not JSON"]
    assert json_schema.incompatibilities(avro, parsed) == ["the reader schema is of type AVRO, not JSON"]


# -- evolutions: (old, new, backward: reader=new/writer=old, forward: reader=old/writer=new) -------------------------

TREE = {"definitions": {"node": {"type": "object", "properties": {"value": INT, "children": {
    "type": "array", "items": {"$ref": "#/definitions/node"}}}}}, "$ref": "#/definitions/node"}
TREE_STR = json.loads(json.dumps(TREE).replace('"integer"', '"string"'))
D2020 = "https://json-schema.org/draft/2020-12/schema"
D4 = "http://json-schema.org/draft-04/schema#"

EVOLUTIONS: list[tuple[str, Any, Any, str | None, str | None]] = [
    ("same", _obj({"a": STR}), _obj({"a": STR}), None, None),
    ("annotations only", _obj({"a": STR}), {**_obj({"a": {**STR, "description": "x"}}), "title": "T"}, None, None),
    ("string to integer", STR, INT, "TYPE_CHANGED at #", "TYPE_CHANGED at #"),
    ("integer to number", INT, {"type": "number"}, None, "TYPE_NARROWED at #"),
    ("type array extended", STR, {"type": ["string", "null"]}, None, "TYPE_NARROWED at #"),
    ("type array changed", {"type": ["string", "null"]}, {"type": ["integer", "boolean"]},
     "TYPE_CHANGED", "TYPE_CHANGED"),
    ("type removed", STR, {}, None, "SCHEMA_ADDED at #"),
    ("enum gives the type", {"enum": ["a", "b"]}, {"type": "string", "enum": ["a", "b"]}, None, None),
    ("open: property added", _obj({"a": STR}), _obj({"a": STR, "b": INT}),
     "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at #/properties/b", None),
    ("open: empty property added", _obj({"a": STR}), _obj({"a": STR, "b": {}}), None, None),
    ("closed: property added", _obj({"a": STR}, extra=False), _obj({"a": STR, "b": INT}, extra=False),
     None, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL at #/properties/b"),
    ("partial: covered property added", _obj({"a": STR}, extra=STR), _obj({"a": STR, "b": STR}, extra=STR),
     None, None),
    ("partial: uncovered property added", _obj({"a": STR}, extra=STR), _obj({"a": STR, "b": INT}, extra=STR),
     "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL at #/properties/b",
     "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL at #/properties/b"),
    ("patternProperties cover a property", {**_obj({}), "patternProperties": {"^x_": INT}},
     {**_obj({"x_b": INT}), "patternProperties": {"^x_": INT}}, None, None),
    ("patternProperties added to open model", _obj({}), {**_obj({}), "patternProperties": {"^x_": INT}},
     "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL at #/patternProperties/^x_", None),
    ("patternProperties dropped from closed model", {**_obj({}, extra=False), "patternProperties": {"^x_": INT}},
     _obj({}, extra=False), "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL at #/patternProperties/^x_", None),
    ("required added", _obj({"a": STR}), _obj({"a": STR}, ["a"]), "REQUIRED_ATTRIBUTE_ADDED at #/required", None),
    ("required added with default", _obj({"a": STR}), _obj({"a": {**STR, "default": "x"}}, ["a"]), None, None),
    ("additionalProperties removed", _obj({}), _obj({}, extra=False), "ADDITIONAL_PROPERTIES_REMOVED", None),
    ("additionalProperties narrowed", _obj({}), _obj({}, extra=STR), "ADDITIONAL_PROPERTIES_NARROWED", None),
    ("additionalProperties schema changed", _obj({}, extra=STR), _obj({}, extra=INT),
     "TYPE_CHANGED at #/additionalProperties", "TYPE_CHANGED at #/additionalProperties"),
    ("dependency array added", _obj({"a": STR, "b": STR}), {**_obj({"a": STR, "b": STR}), "dependencies": {"a": ["b"]}},
     "DEPENDENCY_ARRAY_ADDED at #/dependencies/a", None),
    ("dependency implied by required", _obj({"a": STR, "b": STR}, ["b"]),
     {**_obj({"a": STR, "b": STR}, ["b"]), "dependencies": {"a": ["b"]}}, None, None),
    ("dependentSchemas changed", {"$schema": D2020, **_obj({}), "dependentSchemas": {"a": {"required": ["b"]}}},
     {"$schema": D2020, **_obj({}), "dependentSchemas": {"a": {"required": ["b", "c"]}}},
     "REQUIRED_ATTRIBUTE_ADDED at #/dependentSchemas/a/required", None),
    ("maxProperties added", _obj({}), {**_obj({}), "maxProperties": 3}, "MAX_PROPERTIES_ADDED", None),
    ("enum extended", {"enum": ["a", "b"]}, {"enum": ["a", "b", "c"]}, None, "ENUM_ARRAY_NARROWED at #"),
    ("enum changed", {"enum": ["a", "b"]}, {"enum": ["a", "c"]}, "ENUM_ARRAY_CHANGED", "ENUM_ARRAY_CHANGED"),
    ("enum added", STR, {**STR, "enum": ["a"]}, "ENUM_ARRAY_NARROWED", None),
    ("const to enum", {"const": "x"}, {"enum": ["x", "y"]}, None, "ENUM_ARRAY_NARROWED"),
    ("const 1 equals 1.0", {"const": 1}, {"const": 1.0}, None, None),
    ("maxLength decreased", {**STR, "maxLength": 10}, {**STR, "maxLength": 5}, "MAX_LENGTH_DECREASED", None),
    ("minLength added", STR, {**STR, "minLength": 2}, "MIN_LENGTH_ADDED", None),
    ("pattern changed", {**STR, "pattern": "^a"}, {**STR, "pattern": "^b"}, "PATTERN_CHANGED", "PATTERN_CHANGED"),
    ("pattern added", STR, {**STR, "pattern": "^a"}, "PATTERN_ADDED", None),
    ("string bounds ignored for integers", INT, {**INT, "maxLength": 1}, None, None),
    ("minimum increased", {**INT, "minimum": 0}, {**INT, "minimum": 5}, "MINIMUM_INCREASED", None),
    ("maximum increased", {**INT, "maximum": 10}, {**INT, "maximum": 100}, None, "MAXIMUM_DECREASED"),
    ("exclusiveMinimum added", INT, {**INT, "exclusiveMinimum": 0}, "EXCLUSIVE_MINIMUM_ADDED", None),
    ("exclusiveMaximum decreased", {"type": "number", "exclusiveMaximum": 2.5},
     {"type": "number", "exclusiveMaximum": 1.5}, "EXCLUSIVE_MAXIMUM_DECREASED", None),
    ("draft-04 exclusiveMinimum added", {"$schema": D4, **INT, "minimum": 0},
     {"$schema": D4, **INT, "minimum": 0, "exclusiveMinimum": True}, "EXCLUSIVE_MINIMUM_ADDED", None),
    ("draft-04 exclusive maximum raised", {"$schema": D4, **INT, "maximum": 5, "exclusiveMaximum": True},
     {"$schema": D4, **INT, "maximum": 6, "exclusiveMaximum": True}, None, "EXCLUSIVE_MAXIMUM_DECREASED"),
    ("multipleOf reduced", {**INT, "multipleOf": 10}, {**INT, "multipleOf": 5}, None, "MULTIPLE_OF_EXPANDED"),
    ("multipleOf changed", {**INT, "multipleOf": 4}, {**INT, "multipleOf": 6}, "MULTIPLE_OF_CHANGED",
     "MULTIPLE_OF_CHANGED"),
    ("multipleOf decimal", {"type": "number", "multipleOf": 0.1}, {"type": "number", "multipleOf": 0.05},
     None, "MULTIPLE_OF_EXPANDED"),
    ("multipleOf added", INT, {**INT, "multipleOf": 2}, "MULTIPLE_OF_ADDED", None),
    ("items type changed", {"type": "array", "items": STR}, {"type": "array", "items": INT},
     "TYPE_CHANGED at #/items", "TYPE_CHANGED at #/items"),
    ("items added", {"type": "array"}, {"type": "array", "items": STR}, "SCHEMA_ADDED at #/items", None),
    ("closed tuple extended", {"type": "array", "items": [STR], "additionalItems": False},
     {"type": "array", "items": [STR, INT], "additionalItems": False},
     None, "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL at #/items/1"),
    ("open tuple extended", {"type": "array", "items": [STR]}, {"type": "array", "items": [STR, INT]},
     "ITEM_ADDED_TO_OPEN_CONTENT_MODEL at #/items/1", None),
    ("partial tuple extended", {"type": "array", "items": [STR], "additionalItems": INT},
     {"type": "array", "items": [STR, INT], "additionalItems": INT}, None, None),
    ("tuple item changed", {"type": "array", "items": [STR, STR]}, {"type": "array", "items": [STR, INT]},
     "TYPE_CHANGED at #/items/1", "TYPE_CHANGED at #/items/1"),
    ("additionalItems removed", {"type": "array", "items": [STR]},
     {"type": "array", "items": [STR], "additionalItems": False}, "ADDITIONAL_ITEMS_REMOVED", None),
    ("2020-12 prefixItems extended", {"$schema": D2020, "type": "array", "prefixItems": [STR], "items": False},
     {"$schema": D2020, "type": "array", "prefixItems": [STR, INT], "items": False},
     None, "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL at #/prefixItems/1"),
    ("minItems increased", {"type": "array", "minItems": 1}, {"type": "array", "minItems": 2},
     "MIN_ITEMS_INCREASED", None),
    ("maxItems added", {"type": "array"}, {"type": "array", "maxItems": 2}, "MAX_ITEMS_ADDED", None),
    ("uniqueItems added", {"type": "array"}, {"type": "array", "uniqueItems": True}, "UNIQUE_ITEMS_ADDED", None),
    ("oneOf extended", {"oneOf": [STR, INT]}, {"oneOf": [STR, INT, {"type": "null"}]}, None, "SUM_TYPE_NARROWED"),
    ("anyOf branch changed", {"anyOf": [STR, INT]}, {"anyOf": [STR, {"type": "boolean"}]},
     "COMBINED_TYPE_SUBSCHEMAS_CHANGED at #/anyOf/1", "COMBINED_TYPE_SUBSCHEMAS_CHANGED at #/anyOf/1"),
    ("oneOf to anyOf", {"oneOf": [STR, INT]}, {"anyOf": [STR, INT]}, None, "COMBINED_TYPE_CHANGED"),
    ("type to oneOf", STR, {"oneOf": [STR, {"type": "null"}]}, None, "TYPE_CHANGED at #/oneOf/1"),
    ("allOf extended", {"allOf": [_obj({"a": STR})]}, {"allOf": [_obj({"a": STR}), {"required": ["a"]}]},
     "PRODUCT_TYPE_EXTENDED at #/allOf/1", None),
    ("oneOf beside type", {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
     {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, None, None),
    ("not added", STR, {**STR, "not": {"enum": ["x"]}}, "NOT_TYPE_EXTENDED at #/not", None),
    ("local ref followed", {"definitions": {"n": STR}, **_obj({"a": {"$ref": "#/definitions/n"}})},
     {"definitions": {"n": INT}, **_obj({"a": {"$ref": "#/definitions/n"}})},
     "TYPE_CHANGED at #/properties/a", "TYPE_CHANGED at #/properties/a"),
    ("ref against inline", _obj({"a": STR}), {"definitions": {"n": STR}, **_obj({"a": {"$ref": "#/definitions/n"}})},
     None, None),
    ("recursive identical", TREE, TREE, None, None),
    ("recursive changed", TREE, TREE_STR, "TYPE_CHANGED at #/properties/value", "TYPE_CHANGED at #/properties/value"),
    ("nested property", _obj({"a": _obj({"b": {**STR, "maxLength": 9}})}),
     _obj({"a": _obj({"b": {**STR, "maxLength": 3}})}),
     "MAX_LENGTH_DECREASED at #/properties/a/properties/b", None),
    ("false reader", STR, False, "TYPE_NARROWED at #", None),
]


@pytest.mark.parametrize(("old", "new", "backward", "forward"), [case[1:] for case in EVOLUTIONS],
                         ids=[case[0] for case in EVOLUTIONS])
def test_evolution_verdicts(old: Any, new: Any, backward: str | None, forward: str | None) -> None:
    old_parsed, new_parsed = _parse(old), _parse(new)
    for expected, problems in ((backward, json_schema.incompatibilities(new_parsed, old_parsed)),
                               (forward, json_schema.incompatibilities(old_parsed, new_parsed))):
        if expected is None:
            assert problems == []
        else:
            assert any(expected in problem for problem in problems), problems
            assert all("\n" not in problem for problem in problems)


def test_a_shared_definition_is_reported_wherever_it_is_used() -> None:
    def person(kind: dict[str, Any]) -> dict[str, Any]:
        ref = {"$ref": "#/definitions/n"}
        return {"definitions": {"n": kind}, **_obj({"a": ref, "b": ref})}

    problems = json_schema.incompatibilities(_parse(person(INT)), _parse(person(STR)))
    assert len(problems) == 2
    assert problems[0].startswith("TYPE_CHANGED at #/properties/a:")
    assert problems[1].endswith("(the same subschemas again at #/properties/b)")


def test_reasons_name_the_path_and_the_rule() -> None:
    old, new = _parse(_obj({"age": INT})), _parse(_obj({"age": INT}, ["age"]))
    assert json_schema.incompatibilities(new, old) == [
        "REQUIRED_ATTRIBUTE_ADDED at #/required: the reader requires 'age' (no default), the writer does not"]


# -- soundness: "compatible" must mean every writer-valid instance is reader-valid -----------------------------------

INSTANCES: list[Any] = [
    None, True, False, 0, 1, 2.5, -3, 4, 5, 6, 10, 12, 20, 30, 0.15, 0.1, 100, "", "a", "b", "c", "x", "y", "ab",
    "abcdefghijk", [], ["a"], ["a", 1], ["a", "a"], ["a", "b", "c"], [1, 2], ["a", True], {}, {"a": "s"}, {"a": 1},
    {"b": 1}, {"b": "s"}, {"a": "s", "b": 1}, {"a": "s", "b": "t"}, {"x_b": 1}, {"x_b": "s"}, {"a": "s", "c": True},
    {"value": 1, "children": [{"value": "s"}]}, {"value": 1, "children": [{"value": 2, "children": []}]},
    {"a": {"b": "abcdefg"}}, {"a": {"b": "ab"}},
]


def _exempt(reader: Any) -> bool:
    """Readers whose verdict is knowingly looser than validation, as Confluent's: a required property with a
    default (REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED) and oneOf (exclusivity is not checked)."""
    text = json.dumps(reader)
    return '"oneOf"' in text or '"default"' in text


def test_compatible_verdicts_hold_on_sample_instances() -> None:
    from jsonschema.validators import Draft7Validator, validator_for

    schemas: list[Any] = []
    for case in EVOLUTIONS:
        for schema in case[1:3]:
            if schema not in schemas:
                schemas.append(schema)
    parsed = [(schema, _parse(schema), validator_for(schema, default=Draft7Validator)(schema)) for schema in schemas]
    compatible_pairs = 0
    for writer, writer_parsed, writer_validator in parsed:
        for reader, reader_parsed, reader_validator in parsed:
            if _exempt(reader) or json_schema.incompatibilities(reader_parsed, writer_parsed):
                continue
            compatible_pairs += 1
            for instance in INSTANCES:
                if writer_validator.is_valid(instance):
                    assert reader_validator.is_valid(instance), (writer, reader, instance)
    assert compatible_pairs > 100


@pytest.mark.parametrize("schema", [
    {"type": "object", "anyOf": [{"$ref": "#"}]},
    {"type": "object", "anyOf": [{"$ref": "#"}, {"$ref": "#"}, {"$ref": "#"}]},
    {"type": "object", "allOf": [{"$ref": "#"}, {"$ref": "#"}]},
    {"type": "object", "oneOf": [{"$ref": "#"}, {"required": ["a"]}]},
])
def test_self_referencing_combinators_end(schema: Any) -> None:
    parsed = _parse(schema)
    assert json_schema.incompatibilities(parsed, parsed) == []
    changed = _parse({**schema, "maxProperties": 2})
    assert any("MAX_PROPERTIES_ADDED" in problem for problem in json_schema.incompatibilities(changed, parsed))


@pytest.mark.parametrize(("writer", "reader", "compatible"), [
    ({"exclusiveMinimum": 0}, {"minimum": 0}, True),
    ({"minimum": 1}, {"exclusiveMinimum": 0}, True),
    ({"minimum": 0}, {"exclusiveMinimum": 0}, False),
    ({"exclusiveMaximum": 10}, {"maximum": 10}, True),
    ({"maximum": 10}, {"exclusiveMaximum": 10}, False),
])
def test_exclusive_and_inclusive_bounds_imply_each_other(writer: Any, reader: Any, compatible: bool) -> None:
    problems = json_schema.incompatibilities(_parse({**INT, **reader}), _parse({**INT, **writer}))
    assert (problems == []) is compatible, problems
