"""What the Schema Registry needs from each schema type (AVRO, JSON, PROTOBUF): parse a schema text with
its resolved references into a ParsedSchema (or raise SchemaError: Confluent's 42201), a canonical text
(identical schemas share one id), and the list of reasons data written with one schema cannot be read
with another.  The compatibility levels (BACKWARD, FORWARD, FULL, transitive or not) are built from
``incompatibilities`` in mockbroker.registry.compatibility; each type module knows only its own rules.

    parsed = avro.parse(text, references)               # references: import name -> referenced schema text
    problems = avro.incompatibilities(reader, writer)   # [] when reader can read what writer wrote
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


class SchemaError(ValueError):
    """The schema text is not a valid schema of its type (the registry answers 422 with error code 42201).
    The message is one line, naming what is wrong and where."""


@dataclass(frozen=True)
class ParsedSchema:
    """A parsed schema.  ``canonical`` is the text the registry stores and returns, and what two schemas are
    compared by for identity; ``parsed`` is the type module's own representation (compatibility checks use
    it); ``references`` are the import names it was parsed with, in order."""

    kind: str  # "AVRO", "JSON" or "PROTOBUF"
    canonical: str
    parsed: Any = field(compare=False, repr=False)
    references: tuple[str, ...] = ()


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut at ``limit`` characters: how the type modules quote a parser's message."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def load_json(text: Any, where: str) -> Any:
    """The JSON of an AVRO or JSON schema text, or SchemaError naming ``where`` (the schema or a reference)."""
    if not isinstance(text, str):
        raise SchemaError(f"{where}: the schema must be a string, not {type(text).__name__}")
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise SchemaError(f"{where}: invalid JSON: {one_line(str(exc))}") from None
