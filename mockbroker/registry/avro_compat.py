"""Avro schema resolution as a list of reasons (the compatibility half of mockbroker.registry.avro).

Follows the Avro specification's "Schema Resolution" as Avro's Java SchemaCompatibility (used by
Confluent's AvroCompatibilityChecker) applies it: records, enums and fixed match by unqualified name or
by a reader alias naming the writer's full name; a reader field the writer lacks needs a default (found by
the reader field's name, then its aliases); writer fields the reader lacks are skipped; enum symbols the
reader lacks are fine only with a reader enum default; every writer union branch must be readable; a
reader union reads a writer type if any branch can; int->long/float/double, long->float/double,
float->double and string<->bytes promote; logical types count as their underlying types.  Schemas are
fastavro-parsed trees (full names everywhere, a named type defined once and then named by a string).
"""

from __future__ import annotations

from typing import Any

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED = frozenset({"record", "error", "enum", "fixed"})
# writer type -> reader types that can read it (besides the same type)
_PROMOTIONS: dict[str, frozenset[str]] = {
    "int": frozenset({"long", "float", "double"}),
    "long": frozenset({"float", "double"}),
    "float": frozenset({"double"}),
    "string": frozenset({"bytes"}),
    "bytes": frozenset({"string"}),
}


def _kind(node: Any) -> str:
    """The kind of a resolved schema: union, a primitive type name or a complex type name (error is record)."""
    if isinstance(node, list):
        return "union"
    kind = node if isinstance(node, str) else node["type"]
    return "record" if kind == "error" else str(kind)


def _namespace(fullname: str) -> str:
    return fullname.rpartition(".")[0]


def _simple(fullname: str) -> str:
    return fullname.rpartition(".")[2]


def _aliases(node: dict[str, Any]) -> set[str]:
    """A named type's aliases as full names (a bare alias is in the type's namespace)."""
    space = _namespace(node["name"])
    return {a if "." in a or not space else f"{space}.{a}" for a in node.get("aliases", [])}


def _describe(node: Any) -> str:
    kind = _kind(node)
    if kind in ("record", "enum", "fixed"):
        return f"{kind} '{node['name']}'"
    if kind == "union":
        return "union [" + ", ".join(_describe(b) for b in node) + "]"
    return kind


def _at(path: str) -> str:
    return path or "/"


class _Checker:
    """One reader/writer comparison; ``memo`` keeps each pair of named types' result (an empty list while it
    is being checked, so recursive types end: the pair is assumed compatible inside itself)."""

    def __init__(self, reader_named: dict[str, Any], writer_named: dict[str, Any]) -> None:
        self.rnamed = reader_named
        self.wnamed = writer_named
        self.memo: dict[tuple[str, str], list[str]] = {}

    def resolve(self, node: Any, named: dict[str, Any]) -> Any:
        """A named type's definition for its name; a primitive's name for {"type": primitive, ...} (logical
        types are their underlying type); anything else as it is."""
        if isinstance(node, str) and node not in PRIMITIVES:
            return named[node]
        if isinstance(node, dict) and node["type"] in PRIMITIVES:
            return node["type"]
        return node

    def check(self, reader: Any, writer: Any, path: str) -> list[str]:
        reader = self.resolve(reader, self.rnamed)
        writer = self.resolve(writer, self.wnamed)
        rkind, wkind = _kind(reader), _kind(writer)
        if wkind == "union":
            reasons: list[str] = []
            for i, branch in enumerate(writer):
                prefix = f"writer union branch {i} ({_describe(branch)}): "
                reasons += [prefix + r for r in self.check(reader, branch, path)]
            return reasons
        if rkind == "union":
            return self.reader_union(reader, writer, path)
        if rkind != wkind:
            if rkind in _PROMOTIONS.get(wkind, ()):
                return []
            return [f"type mismatch at {_at(path)}: reader {_describe(reader)} cannot read writer {_describe(writer)}"]
        if rkind == "array":
            return self.check(reader["items"], writer["items"], path + "/items")
        if rkind == "map":
            return self.check(reader["values"], writer["values"], path + "/values")
        if rkind in PRIMITIVES:
            return []
        return self.named(reader, writer, rkind, path)

    def reader_union(self, reader: list[Any], writer: Any, path: str) -> list[str]:
        """A reader union reads a (non-union) writer type if one of its branches can; when none can, the
        reasons given are those of the branch of the writer's own type (and name), if there is one."""
        same: tuple[int, list[str]] | None = None
        for i, branch in enumerate(reader):
            reasons = self.check(branch, writer, f"{path}/{i}")
            if not reasons:
                return []
            rb = self.resolve(branch, self.rnamed)
            if same is None and _kind(rb) == _kind(writer):
                if _kind(rb) not in NAMED or self.names_match(rb, writer):
                    same = (i, reasons)
        if same is not None:
            return same[1]
        return [f"reader union at {_at(path)} has no branch that can read writer {_describe(writer)}"]

    def names_match(self, reader: dict[str, Any], writer: dict[str, Any]) -> bool:
        return _simple(reader["name"]) == _simple(writer["name"]) or writer["name"] in _aliases(reader)

    def named(self, reader: dict[str, Any], writer: dict[str, Any], kind: str, path: str) -> list[str]:
        if not self.names_match(reader, writer):
            return [
                f"name mismatch at {_at(path)}: reader {kind} '{reader['name']}' cannot read writer {kind} "
                f"'{writer['name']}' (names differ and the writer's is not a reader alias)"
            ]
        key = (reader["name"], writer["name"])
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = []
        if kind == "record":
            reasons = self.record(reader, writer, path)
        elif kind == "enum":
            reasons = self.enum(reader, writer, path)
        else:
            reasons = []
            if reader["size"] != writer["size"]:
                reasons.append(
                    f"fixed size mismatch at {_at(path)}: reader '{reader['name']}' has size {reader['size']}, "
                    f"writer has {writer['size']}"
                )
        self.memo[key] = reasons
        return reasons

    def record(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> list[str]:
        wfields = {f["name"]: f for f in writer["fields"]}
        reasons: list[str] = []
        for i, rfield in enumerate(reader["fields"]):
            fpath = f"{path}/fields/{i}"
            wfield = wfields.get(rfield["name"])
            for alias in rfield.get("aliases", []):
                if wfield is not None:
                    break
                wfield = wfields.get(alias)
            if wfield is None:
                if "default" not in rfield:
                    reasons.append(
                        f"reader field '{rfield['name']}' (path {fpath}) of record '{reader['name']}' has no "
                        f"default and is missing from the writer"
                    )
                continue
            reasons += self.check(rfield["type"], wfield["type"], fpath + "/type")
        return reasons

    def enum(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> list[str]:
        missing = [s for s in writer["symbols"] if s not in reader["symbols"]]
        if not missing or reader.get("default") in reader["symbols"]:
            return []
        return [f"reader enum '{reader['name']}' at {_at(path)} lacks writer symbols {missing} and has no enum default"]


def check(reader: Any, reader_named: dict[str, Any], writer: Any, writer_named: dict[str, Any]) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader`` (fastavro-parsed schemas with their
    named types by full name), one line each, without repeats; empty when it can."""
    reasons = _Checker(reader_named, writer_named).check(reader, writer, "")
    return list(dict.fromkeys(reasons))
