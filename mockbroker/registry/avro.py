"""The AVRO schema type of the Schema Registry: parse (with fastavro, references first), a compact canonical
text for identity, and the Avro specification's schema resolution rules as Confluent's
AvroCompatibilityChecker applies them (``incompatibilities(reader, writer)``).

Names of records, enums and fixed types match when their unqualified names are equal or when the writer's
full name is one of the reader's aliases (the Avro specification and Avro's Java SchemaCompatibility,
which Confluent uses, ignore the namespace).  Logical types are compared as their underlying types.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from fastavro.schema import parse_schema

from mockbroker.registry.avro_compat import NAMED, PRIMITIVES, check
from mockbroker.registry.kinds import ParsedSchema, SchemaError, load_json, one_line

KIND = "AVRO"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class AvroSchema:
    """fastavro's parsed form of the main schema (full names everywhere) and every named type it can use
    (its own and its references'), by full name."""

    root: Any
    named: dict[str, Any]


def _fastavro(data: Any, named: dict[str, Any], where: str) -> Any:
    """fastavro's parse_schema, every failure turned into a one-line SchemaError."""
    if not isinstance(data, (str, list, dict)):
        raise SchemaError(f"{where}: an Avro schema is a JSON string, object or array, not {json.dumps(data)}")
    try:
        return parse_schema(data, named_schemas=named)
    except KeyError as exc:
        raise SchemaError(f"{where}: invalid Avro schema: missing attribute {exc}") from None
    except RecursionError:
        raise  # reported once, by _parse_one
    except Exception as exc:  # fastavro raises several types (SchemaParseException, UnknownType, TypeError)
        raise SchemaError(f"{where}: invalid Avro schema: {type(exc).__name__}: {one_line(str(exc))}") from None


def _check_name(name: Any, what: str, where: str, path: str) -> str:
    """A full name: dot-separated parts, each [A-Za-z_][A-Za-z0-9_]*."""
    if not isinstance(name, str) or not all(_NAME.match(part) for part in name.split(".")):
        raise SchemaError(
            f"{where}: invalid {what} {json.dumps(name)} at {path or '/'} (names are [A-Za-z_][A-Za-z0-9_]*)"
        )
    return name


def _is_int(bounds: tuple[int, int]) -> Any:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and bounds[0] <= v <= bounds[1]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


# primitive (and fixed) type -> whether a JSON value is a valid default for it
_SCALAR_DEFAULTS: dict[str, Any] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "int": _is_int(_INT_RANGE),
    "long": _is_int(_LONG_RANGE),
    "float": _is_number,
    "double": _is_number,
    "bytes": _is_text,
    "string": _is_text,
    "fixed": _is_text,
}


def _scalar(kind: str, value: Any) -> bool:
    return kind in _SCALAR_DEFAULTS and bool(_SCALAR_DEFAULTS[kind](value))


def _valid_default(schema: Any, value: Any, named: dict[str, Any]) -> bool:
    """Whether a JSON default value matches its schema (Avro's rules; a union default may match any branch)."""
    if isinstance(schema, list):
        return any(_valid_default(branch, value, named) for branch in schema)
    if isinstance(schema, str):
        return _valid_default(named[schema], value, named) if schema in named else _scalar(schema, value)
    kind = schema["type"]
    if not isinstance(kind, str) or kind in named:
        return _valid_default(kind, value, named)
    if kind in _SCALAR_DEFAULTS:
        return _scalar(kind, value)
    if kind == "enum":
        return isinstance(value, str) and value in schema["symbols"]
    if kind == "array":
        return isinstance(value, list) and all(_valid_default(schema["items"], v, named) for v in value)
    if kind == "map":
        return isinstance(value, dict) and all(_valid_default(schema["values"], v, named) for v in value.values())
    return isinstance(value, dict) and all(  # a record: every field given a valid value or having a default
        _valid_default(f["type"], value[f["name"]], named) if f["name"] in value else "default" in f
        for f in schema["fields"]
    )


def _branch_key(branch: Any) -> str:
    """What makes two union branches the same branch: the type, or the full name of a named type."""
    if isinstance(branch, str):
        return branch
    kind = branch.get("type")
    return str(branch.get("name")) if kind in NAMED else str(kind)


class _Validator:
    """The checks fastavro leaves out: names, duplicate fields, unions, records without fields, defaults,
    and named types a schema redefines (``taken``: full name -> definition from the references)."""

    def __init__(self, named: dict[str, Any], taken: dict[str, Any], where: str) -> None:
        self.named = named
        self.taken = taken
        self.where = where

    def fail(self, message: str) -> SchemaError:
        return SchemaError(f"{self.where}: {message}")

    def walk(self, node: Any, path: str) -> None:
        if isinstance(node, str):
            return
        if isinstance(node, list):
            self.union(node, path)
            return
        kind = node.get("type")
        if not isinstance(kind, str):
            self.walk(kind, path + "/type")
        elif kind in NAMED:
            self.named_type(node, kind, path)
        elif kind == "array":
            self.walk(node["items"], path + "/items")
        elif kind == "map":
            self.walk(node["values"], path + "/values")

    def union(self, branches: list[Any], path: str) -> None:
        seen: set[str] = set()
        for i, branch in enumerate(branches):
            if isinstance(branch, list):
                raise self.fail(f"union at {path or '/'} contains a union directly (branch {i})")
            key = _branch_key(branch)
            if key in seen:
                raise self.fail(f"union at {path or '/'} contains '{key}' twice")
            seen.add(key)
            self.walk(branch, f"{path}/{i}")

    def named_type(self, node: dict[str, Any], kind: str, path: str) -> None:
        name = node.get("name")
        name = _check_name(name, f"{kind} name", self.where, path)
        if name in PRIMITIVES:
            raise self.fail(f"{kind} at {path or '/'} may not be named after the primitive type '{name}'")
        if name in self.taken and self.taken[name] != node:
            raise self.fail(f"{kind} '{name}' at {path or '/'} redefines a type of the same name from a reference")
        aliases = node.get("aliases", [])
        if not isinstance(aliases, list):
            raise self.fail(f"aliases of '{name}' must be a list")
        for alias in aliases:
            _check_name(alias, "alias", self.where, path)
        if kind == "enum":
            for symbol in node["symbols"]:
                if not isinstance(symbol, str) or not _NAME.match(symbol):
                    raise self.fail(f"enum '{name}' has an invalid symbol {json.dumps(symbol)}")
        elif kind == "fixed":
            size = node["size"]
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise self.fail(f"fixed '{name}' has an invalid size {json.dumps(size)}")
        else:
            self.record(node, name, path)

    def record(self, node: dict[str, Any], name: str, path: str) -> None:
        fields = node.get("fields")
        if not isinstance(fields, list):
            raise self.fail(f"record '{name}' at {path or '/'} has no 'fields' list")
        seen: set[str] = set()
        for i, fld in enumerate(fields):
            where = f"{path}/fields/{i}"
            if not isinstance(fld, dict) or "type" not in fld:
                raise self.fail(f"field at {where} of record '{name}' must be an object with a name and a type")
            fname = fld.get("name")
            if not isinstance(fname, str) or not _NAME.match(fname):
                raise self.fail(f"record '{name}' has an invalid field name {json.dumps(fname)} at {where}")
            if fname in seen:
                raise self.fail(f"record '{name}' has a duplicate field '{fname}' at {where}")
            seen.add(fname)
            for alias in fld.get("aliases", []):
                if not isinstance(alias, str) or not _NAME.match(alias):
                    raise self.fail(f"field '{fname}' at {where} has an invalid alias {json.dumps(alias)}")
            self.walk(fld["type"], where + "/type")
            if "default" in fld and not _valid_default(fld["type"], fld["default"], self.named):
                raise self.fail(
                    f"default {one_line(json.dumps(fld['default']), 80)} of field '{fname}' ({where}) "
                    f"does not match its type"
                )


def _raw_check(node: Any, where: str, path: str) -> None:
    """What fastavro fills in or trips over in the schema's own JSON: a named type needs a string name, a
    record a list of fields."""
    if isinstance(node, list):
        for i, branch in enumerate(node):
            _raw_check(branch, where, f"{path}/{i}")
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if not isinstance(kind, str):
        _raw_check(kind, where, path + "/type")
        return
    if kind in NAMED and not isinstance(node.get("name"), str):
        raise SchemaError(f"{where}: {kind} at {path or '/'} needs a string 'name'")
    if kind in ("record", "error"):
        fields = node.get("fields")
        if not isinstance(fields, list):
            raise SchemaError(f"{where}: record '{node['name']}' at {path or '/'} needs a list of 'fields'")
        for i, fld in enumerate(fields):
            if isinstance(fld, dict):
                _raw_check(fld.get("type"), where, f"{path}/fields/{i}/type")
    for key in ("items", "values"):
        _raw_check(node.get(key), where, f"{path}/{key}")


def _parse_one(data: Any, named: dict[str, Any], where: str) -> Any:
    """Parse one schema's JSON with the named types known so far, adding those it defines to ``named``."""
    taken = dict(named)
    trial = dict(named)
    try:
        _raw_check(data, where, "")
        parsed = _fastavro(data, trial, where)
        _Validator(trial, taken, where).walk(parsed, "")
    except RecursionError:
        raise SchemaError(f"{where}: the schema is nested too deeply") from None
    named.update(trial)
    return parsed


def _parse_references(references: dict[str, str]) -> dict[str, Any]:
    """Parse the references into one dict of named types.  A reference may use another's types, whatever
    the order they are given in: those that fail are retried while others succeed."""
    named: dict[str, Any] = {}
    pending = [(name, load_json(text, f"reference '{name}'")) for name, text in references.items()]
    while pending:
        failed: list[tuple[str, Any]] = []
        first_error: SchemaError | None = None
        for name, data in pending:
            try:
                _parse_one(data, named, f"reference '{name}'")
            except SchemaError as exc:
                failed.append((name, data))
                first_error = first_error or exc
        if first_error is not None and len(failed) == len(pending):
            raise first_error
        pending = failed
    return named


def parse(text: str, references: dict[str, str]) -> ParsedSchema:
    """Parse an Avro schema text whose named types may come from ``references`` (import name -> schema text);
    raise SchemaError (one line) when it is not a valid Avro schema."""
    if not isinstance(references, dict):
        raise SchemaError("references must map import names to schema texts")
    named = _parse_references(references)
    data = load_json(text, "schema")
    root = _parse_one(data, named, "schema")
    canonical = json.dumps(data, separators=(",", ":"))
    return ParsedSchema(KIND, canonical, AvroSchema(root, named), tuple(references))


def canonical(text: str) -> str:
    """The compact JSON text of a schema (field order, docs, defaults, aliases and logical types kept)."""
    return json.dumps(load_json(text, "schema"), separators=(",", ":"))


def incompatibilities(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader`` (one line each; empty: it can)."""
    for role, schema in (("reader", reader), ("writer", writer)):
        if schema.kind != KIND or not isinstance(schema.parsed, AvroSchema):
            return [f"the {role} schema is of type {schema.kind}, not {KIND}"]
    try:
        return check(reader.parsed.root, reader.parsed.named, writer.parsed.root, writer.parsed.named)
    except RecursionError:
        return ["the schemas are nested too deeply to compare"]
