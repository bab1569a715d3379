"""Compatibility levels as Confluent defines them, over each schema type's ``incompatibilities(reader,
writer)``: BACKWARD (the default: the new schema reads what the latest wrote), FORWARD (the latest reads
what the new one writes), FULL (both), their _TRANSITIVE forms (against every earlier version, not only
the latest) and NONE; and the schema types themselves (AVRO, JSON, PROTOBUF), loaded when first used."""

from __future__ import annotations

import importlib
from types import ModuleType

from mockbroker.registry.errors import INVALID_SCHEMA, RegistryError
from mockbroker.registry.kinds import ParsedSchema, SchemaError

LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE")
DEFAULT_LEVEL = "BACKWARD"
KIND_MODULES = {"AVRO": "mockbroker.registry.avro", "JSON": "mockbroker.registry.json_schema",
                "PROTOBUF": "mockbroker.registry.protobuf"}


def kind_module(kind: str) -> ModuleType:
    """The module of a schema type (``parse``, ``incompatibilities``), or 42201 naming the known types."""
    name = KIND_MODULES.get(kind)
    if name is None:
        raise RegistryError(INVALID_SCHEMA, f"Unknown schema type {kind!r}: one of {', '.join(KIND_MODULES)}")
    return importlib.import_module(name)


def parse(kind: str, text: str, references: dict[str, str]) -> ParsedSchema:
    """Parse a schema of ``kind`` with its resolved references; 42201 with the type's one-line reason."""
    try:
        parsed: ParsedSchema = kind_module(kind).parse(text, references)
    except SchemaError as error:
        raise RegistryError(INVALID_SCHEMA, f"Invalid schema: {error}") from None
    return parsed


def incompatibilities(level: str, new: ParsedSchema, earlier: list[ParsedSchema]) -> list[str]:
    """Why ``new`` may not follow ``earlier`` (oldest first) under ``level``; [] when it may."""
    if level == "NONE" or not earlier:
        return []
    direction = level.removesuffix("_TRANSITIVE")
    against = earlier if level.endswith("_TRANSITIVE") else earlier[-1:]
    problems: list[str] = []
    for old in reversed(against):
        if old.kind != new.kind:
            problems.append(f"the schema type changed from {old.kind} to {new.kind}")
            continue
        rules = kind_module(new.kind)
        if direction in ("BACKWARD", "FULL"):
            problems += [f"{p} (the new schema cannot read data the old one wrote)"
                         for p in rules.incompatibilities(new, old)]
        if direction in ("FORWARD", "FULL"):
            problems += [f"{p} (the old schema cannot read data the new one writes)"
                         for p in rules.incompatibilities(old, new)]
    return problems
