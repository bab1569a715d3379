"""The keyword-level helpers of the JSON Schema compatibility check (json_schema_compat): which instance types and
values a schema allows, the bounds keywords and their difference type names, tuple items in each dialect, the
schema an undeclared property must match, and the merge of a combinator branch with the keywords beside it.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from typing import Any

from referencing import Specification
from referencing.jsonschema import DRAFT4, DRAFT202012

COMBINATORS = ("allOf", "anyOf", "oneOf")
# keywords that never reject an instance
ANNOTATIONS = frozenset({"title", "description", "$comment", "examples", "default", "$id", "id", "$schema",
                         "definitions", "$defs", "readOnly", "writeOnly", "deprecated", "format", "$anchor"})
# (keyword, difference type prefix, True when a larger reader value is stricter)
NUMERIC_BOUNDS = (("minimum", "MINIMUM", True), ("maximum", "MAXIMUM", False),
                  ("exclusiveMinimum", "EXCLUSIVE_MINIMUM", True), ("exclusiveMaximum", "EXCLUSIVE_MAXIMUM", False))
STRING_BOUNDS = (("minLength", "MIN_LENGTH", True), ("maxLength", "MAX_LENGTH", False))
ARRAY_BOUNDS = (("minItems", "MIN_ITEMS", True), ("maxItems", "MAX_ITEMS", False))
OBJECT_BOUNDS = (("minProperties", "MIN_PROPERTIES", True), ("maxProperties", "MAX_PROPERTIES", False))


def trivial(schema: Any) -> bool:
    """True for a schema that accepts every instance (true, {} or annotations only)."""
    return schema is True or (isinstance(schema, dict) and all(key in ANNOTATIONS for key in schema))


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def value_type(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return "null" if value is None else "boolean"
    if is_number(value):
        return "integer" if float(value).is_integer() else "number"
    return "string" if isinstance(value, str) else "array" if isinstance(value, list) else "object"


def value_key(value: Any) -> str:
    """Equal JSON values (1 and 1.0 included) have equal keys."""
    if is_number(value) and float(value).is_integer():
        value = int(value)
    return json.dumps(value, sort_keys=True)


def allowed_values(schema: dict[str, Any]) -> list[Any] | None:
    if "const" in schema:
        return [schema["const"]]
    enum = schema.get("enum")
    return enum if isinstance(enum, list) else None


def types_of(schema: dict[str, Any]) -> set[str] | None:
    """The instance types a schema allows (None: any), narrowed by its enum or const."""
    declared = schema.get("type")
    types = {declared} if isinstance(declared, str) else set(declared) if isinstance(declared, list) else None
    values = allowed_values(schema)
    if values is not None:
        found = {value_type(value) for value in values}
        types = found if types is None else {t for t in found if t in types or (t == "integer" and "number" in types)}
    return types


def accepts(types: set[str] | None, kind: str) -> bool:
    return types is None or kind in types or (kind == "integer" and "number" in types)


def can_produce(types: set[str] | None, kind: str) -> bool:
    return types is None or kind in types or (kind == "number" and "integer" in types)


def fraction(value: int | float) -> Fraction:
    return Fraction(value) if isinstance(value, int) else Fraction(str(value))


def merge(rest: dict[str, Any], branch: Any) -> Any:
    """A combinator branch with the keywords beside the combinator (properties and required united)."""
    if not rest or not isinstance(branch, dict):
        return rest if branch is True and rest else branch
    merged = {**rest, **branch}
    if isinstance(rest.get("properties"), dict) and isinstance(branch.get("properties"), dict):
        merged["properties"] = {**rest["properties"], **branch["properties"]}
    if isinstance(rest.get("required"), list) and isinstance(branch.get("required"), list):
        merged["required"] = list(dict.fromkeys([*rest["required"], *branch["required"]]))
    return merged


def items_of(schema: dict[str, Any], spec: Specification[Any]) -> tuple[list[Any], Any, str, str]:
    """(tuple positions, the schema of the items after them, their keywords) in the schema's dialect."""
    if spec is DRAFT202012:
        prefix = schema.get("prefixItems")
        return (prefix if isinstance(prefix, list) else []), schema.get("items", True), "prefixItems", "items"
    items = schema.get("items", True)
    if isinstance(items, list):
        return items, schema.get("additionalItems", True), "items", "additionalItems"
    return [], items, "items", "items"


def required_of(schema: dict[str, Any]) -> set[str]:
    required = schema.get("required")
    return {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()


def extra_schema(schema: dict[str, Any], name: str) -> Any:
    """The schema a property that ``properties`` does not name must match (patternProperties, additionalProperties)."""
    patterns = schema.get("patternProperties")
    if isinstance(patterns, dict):
        for pattern, sub in patterns.items():
            try:
                if re.search(pattern, name):
                    return sub
            except re.error:
                continue
    return schema.get("additionalProperties", True)


def numeric_bounds(schema: dict[str, Any], spec: Specification[Any]) -> dict[str, Any]:
    """The numeric bounds in the draft-06-on form: draft-04's ``"exclusiveMinimum": true`` beside ``minimum`` becomes
    ``exclusiveMinimum`` with the minimum's value (the same for maximum)."""
    if spec is not DRAFT4:
        return schema
    bounds: dict[str, Any] = {key: schema[key] for key in ("minimum", "maximum", "multipleOf") if key in schema}
    for low, flag in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if schema.get(flag) is True and low in bounds:
            bounds[flag] = bounds.pop(low)
    return bounds


def bound_implied(writer: dict[str, Any], keyword: str, value: float) -> bool:
    """The writer's numeric bounds already keep its numbers within the reader's ``keyword`` ``value``
    (``exclusiveMinimum`` 0 implies ``minimum`` 0; ``minimum`` 1 implies ``exclusiveMinimum`` 0)."""
    inclusive, exclusive = ("minimum", "exclusiveMinimum") if "inimum" in keyword else ("maximum", "exclusiveMaximum")
    sign = 1 if inclusive == "minimum" else -1  # compare maxima as negated minima
    wincl: Any = writer.get(inclusive)
    wexcl: Any = writer.get(exclusive)
    if keyword == inclusive:
        return any(is_number(bound) and sign * bound >= sign * value for bound in (wincl, wexcl))
    return (is_number(wexcl) and sign * wexcl >= sign * value) or (is_number(wincl) and sign * wincl > sign * value)
