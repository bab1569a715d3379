"""The JSON Schema type ("JSON") of the Schema Registry: parse a schema (its dialect from ``$schema``, draft-07 when
absent, as Confluent does; checked against its meta-schema with jsonschema), resolve every ``$ref`` against the
schema itself and its references (import name -> schema text, as Confluent's clients register them), a compact
canonical text for identity, and the compatibility rules (``incompatibilities``, in json_schema_compat).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jsonschema.exceptions
from jsonschema.validators import SPECIFICATIONS as META_SCHEMAS  # the dialects' meta-schemas, as jsonschema uses them
from jsonschema.validators import validator_for
from referencing import Registry, Resource, Specification
from referencing._core import Resolver  # the class of Registry.resolver(); referencing exports no other name
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT7, UnknownDialect, specification_with

from mockbroker.registry.json_schema_compat import JsonSchema, check
from mockbroker.registry.kinds import ParsedSchema, SchemaError, load_json, one_line

KIND = "JSON"
# keywords whose values are data, not subschemas (a "$ref" in them is not a reference)
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})


def _pointer(parts: Any) -> str:
    return "#" + "".join(f"/{part}" for part in parts)


def _specification(data: Any, where: str) -> Specification[Any]:
    """The schema's dialect, after checking it against the dialect's meta-schema."""
    if not isinstance(data, (dict, bool)):
        raise SchemaError(f"{where}: a JSON Schema is an object or a boolean, not {type(data).__name__}")
    dialect = data.get("$schema") if isinstance(data, dict) else None
    if dialect is None:
        spec: Specification[Any] = DRAFT7
    elif not isinstance(dialect, str):
        raise SchemaError(f"{where}: $schema must be a string")
    else:
        try:
            spec = specification_with(dialect)
        except UnknownDialect:
            raise SchemaError(f"{where}: unknown $schema {json.dumps(dialect)}") from None
    validator = validator_for(data, default=jsonschema.validators.Draft7Validator)
    try:
        validator.check_schema(data)
    except jsonschema.exceptions.SchemaError as exc:
        raise SchemaError(
            f"{where}: invalid JSON Schema at {_pointer(exc.absolute_path)}: {one_line(exc.message)}") from None
    except Exception as exc:  # e.g. a pattern the regex engine rejects in an unexpected way
        raise SchemaError(f"{where}: invalid JSON Schema: {type(exc).__name__}: {one_line(str(exc))}") from None
    return spec


def _retriever(resources: dict[str, Resource[Any]]) -> Callable[[str], Resource[Any]]:
    """Find a reference by its import name also when a ``$ref`` was made absolute by the schema's ``$id``
    (``address.json`` read as ``https://example.com/schemas/address.json``)."""

    def retrieve(uri: str) -> Resource[Any]:
        for name, resource in resources.items():
            if uri == name or uri.endswith("/" + name):
                return resource
        raise NoSuchResource(ref=uri)  # type: ignore[call-arg]

    return retrieve


def _check_refs(node: Any, resolver: Resolver[Any], spec: Specification[Any], where: str, path: str) -> None:
    """Every ``$ref`` in the schema resolves (a SchemaError names the first that does not)."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            _check_refs(item, resolver, spec, where, f"{path}/{i}")
        return
    if not isinstance(node, dict):
        return
    if isinstance(spec.id_of(node), str) and path != "#":
        resolver = resolver.in_subresource(spec.create_resource(node))
    ref = node.get("$ref")
    if isinstance(ref, str):
        try:
            resolver.lookup(ref)
        except Unresolvable:
            raise SchemaError(f"{where}: $ref {json.dumps(ref)} at {path} does not resolve") from None
    for key, value in node.items():
        if key not in _DATA_KEYWORDS:
            _check_refs(value, resolver, spec, where, f"{path}/{key}")


def parse(text: str, references: dict[str, str]) -> ParsedSchema:
    """Parse a JSON Schema text whose ``$ref`` may point into ``references`` (import name -> schema text);
    raise SchemaError (one line) when it is not valid JSON, not a valid JSON Schema, or a ``$ref`` dangles."""
    if not isinstance(references, dict):
        raise SchemaError("references must map import names to schema texts")
    try:
        return _parse(text, references)
    except RecursionError:
        raise SchemaError("schema: nested too deeply") from None


def _parse(text: str, references: dict[str, str]) -> ParsedSchema:
    loaded: dict[str, tuple[Any, Specification[Any]]] = {}
    resources: dict[str, Resource[Any]] = {}
    for name, ref_text in references.items():
        where = f"reference '{name}'"
        ref_data = load_json(ref_text, where)
        ref_spec = _specification(ref_data, where)
        loaded[name] = (ref_data, ref_spec)
        resources[name] = ref_spec.create_resource(ref_data)
    registry: Registry[Any] = Registry(retrieve=_retriever(resources))  # type: ignore[call-arg]
    registry = registry.combine(META_SCHEMAS)  # a $ref to a dialect's meta-schema resolves, as in jsonschema
    for name, resource in resources.items():
        registry = registry.with_resource(name, resource)
        own_id = resource.id()
        if own_id and own_id != name:
            registry = registry.with_resource(own_id, resource)
    data = load_json(text, "schema")
    spec = _specification(data, "schema")
    resolver = registry.resolver_with_root(spec.create_resource(data))
    for name, (ref_data, ref_spec) in loaded.items():
        ref_resolver = registry.resolver_with_root(resources[name])
        _check_refs(ref_data, ref_resolver, ref_spec, f"reference '{name}'", "#")
    _check_refs(data, resolver, spec, "schema", "#")
    return ParsedSchema(KIND, canonical_of(data), JsonSchema(data, resolver, spec), tuple(references))


def canonical_of(data: Any) -> str:
    """Compact JSON, the keys in their order."""
    return json.dumps(data, separators=(",", ":"))


def canonical(text: str) -> str:
    """The canonical text of a JSON Schema text (compact, key order kept)."""
    return canonical_of(load_json(text, "schema"))


def incompatibilities(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    """Why data valid under ``writer`` may be invalid under ``reader`` (one line each; empty: it is valid)."""
    for role, schema in (("reader", reader), ("writer", writer)):
        if schema.kind != KIND or not isinstance(schema.parsed, JsonSchema):
            return [f"the {role} schema is of type {schema.kind}, not {KIND}"]
    try:
        return check(reader.parsed, writer.parsed)
    except RecursionError:
        return ["SCHEMA_TOO_COMPLEX at #: the schemas are nested too deeply to compare"]
