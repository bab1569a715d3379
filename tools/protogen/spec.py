"""Reading Kafka's JSON message definitions into a merged model the emitters can walk.

Kafka keeps one JSON file per message (request, response, header or data).  We read three spec
trees, newest first: the repository's own overlay (``tools/protogen/spec-overlay``: versions the
shared trees lack, e.g. the stable share-group APIs of Kafka 4.1+), the newest shared tree
(``kafka-4.3``) and an older snapshot (``kafka-4.0-snapshot``) that still has the versions Kafka 4.0
dropped.  For each (message, version) the newest file that defines that version wins; fields are
merged by their name, so a struct keeps one Python class across all versions.  An overlay file
must therefore give a field that older files lack the versions it really has (``"1+"``, not
``"0+"``), or the merged older versions would gain it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

PRIMITIVES = {
    "bool": "?",
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
    "uuid": "16s",
}
VARIABLE = {"string", "bytes", "records"}
MAX_VERSION = 0x7FFF
SPEC_DIRS = ("kafka-4.3", "kafka-4.0-snapshot")  # newest first, under the shared kafka-spec folder
OVERLAY_DIR = Path(__file__).resolve().parent / "spec-overlay"  # in the repository; newer than SPEC_DIRS


def spec_trees(spec_root: Path, overlay: Path | None = OVERLAY_DIR) -> list[Path]:
    """The spec folders newest first: the overlay (when there is one), then the shared trees."""
    shared = [spec_root / d for d in SPEC_DIRS]
    return ([overlay] if overlay is not None and overlay.is_dir() else []) + shared


def error_tables(spec_root: Path, overlay: Path | None = OVERLAY_DIR) -> list[Path]:
    """The errors.tsv files in merge order (a later row replaces an earlier one with its code)."""
    tables = [spec_root / "errors.tsv"]
    if overlay is not None and (overlay / "errors.tsv").is_file():
        tables.append(overlay / "errors.tsv")
    return tables


def parse_versions(text: str | None) -> tuple[int, int] | None:
    """'3+' -> (3, MAX), '1-4' -> (1, 4), '2' -> (2, 2), 'none' / None -> None."""
    if text is None or text == "none":
        return None
    if text.endswith("+"):
        return int(text[:-1]), MAX_VERSION
    if "-" in text:
        lo, hi = text.split("-")
        return int(lo), int(hi)
    return int(text), int(text)


def snake(name: str) -> str:
    """Kafka's CamelCase field names to Python attribute names."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def load_json(path: Path) -> dict:
    text = re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.M)
    text = re.sub(r"([^:])//[^\"\n]*$", r"\1", text, flags=re.M)
    return json.loads(text)


@dataclass
class FieldDef:
    name: str
    type: str  # spec type: "int32", "string", "[]Foo", "Foo", "[]int32"
    versions: tuple[int, int]
    nullable: tuple[int, int] | None = None
    tagged: tuple[int, int] | None = None
    tag: int | None = None
    default: object = None
    flexible: tuple[int, int] | str | None = "inherit"
    struct: StructDef | None = None  # for struct / array-of-struct fields

    @property
    def attr(self) -> str:
        return snake(self.name)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.struct is not None

    def present_in(self, v: int) -> bool:
        lo, hi = self.versions
        if not lo <= v <= hi:
            return False
        return self.tagged is None or self.tagged[0] <= v <= self.tagged[1]

    def tagged_in(self, v: int) -> bool:
        return self.tagged is not None and self.tagged[0] <= v <= self.tagged[1]

    def nullable_in(self, v: int) -> bool:
        return self.nullable is not None and self.nullable[0] <= v <= self.nullable[1]


@dataclass
class StructDef:
    name: str
    fields: list[FieldDef] = field(default_factory=list)


@dataclass
class MessageDef:
    name: str  # e.g. "ProduceRequest"
    type: str  # request / response / header / data
    api_key: int | None
    versions: tuple[int, int]
    flexible: tuple[int, int] | None
    listeners: list[str]
    root: StructDef
    structs: list[StructDef]  # every struct class, root first, in a stable order
    sources: dict[int, str]  # version -> spec dir it came from

    def flexible_in(self, v: int) -> bool:
        return self.flexible is not None and self.flexible[0] <= v <= self.flexible[1]


def _parse_default(ftype: str, raw: object) -> object:
    if raw is None:
        return None
    text = str(raw)
    if ftype == "bool":
        return text.lower() == "true"
    if ftype in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return int(text, 0) if text.lower().startswith(("0x", "-0x")) else int(text)
    if ftype == "float64":
        return float(text)
    if text == "null":
        return "null"
    return text


def _build_struct(name: str, raw_fields: list[dict], commons: dict[str, list[dict]]) -> StructDef:
    s = StructDef(name)
    for rf in raw_fields:
        ftype = rf["type"]
        versions = parse_versions(rf["versions"])
        assert versions is not None, (name, rf["name"])
        fd = FieldDef(
            name=rf["name"],
            type=ftype,
            versions=versions,
            nullable=parse_versions(rf.get("nullableVersions")),
            tagged=parse_versions(rf.get("taggedVersions")),
            tag=rf.get("tag"),
            default=_parse_default(ftype, rf.get("default")),
        )
        if "flexibleVersions" in rf:
            fd.flexible = parse_versions(rf["flexibleVersions"])
        elem = fd.element
        if elem not in PRIMITIVES and elem not in VARIABLE:
            sub = rf.get("fields")
            if sub is None:
                sub = commons[elem]
            fd.struct = _build_struct(elem, sub, commons)
        s.fields.append(fd)
    return s


def _merge_struct(new: StructDef, old: StructDef, old_hi: int) -> None:
    """Fold an older file's struct into the newer one for the versions only the old file has
    (every version up to ``old_hi``)."""
    by_name = {f.name: f for f in new.fields}
    previous: FieldDef | None = None
    for of in old.fields:
        nf = by_name.get(of.name)
        if nf is None:
            # a field that only old versions had (e.g. ListOffsets v0's MaxNumOffsets): it goes
            # right after the field that preceded it in the old file, keeping the wire order
            of.versions = (of.versions[0], min(of.versions[1], old_hi))
            at = new.fields.index(previous) + 1 if previous is not None else 0
            new.fields.insert(at, of)
            by_name[of.name] = of
            previous = of
            continue
        previous = nf
        if nf.type.lstrip("[]") != of.type.lstrip("[]") and not (nf.is_struct and of.is_struct):
            raise ValueError(f"{new.name}.{of.name}: type {of.type} vs {nf.type}")
        lo = min(nf.versions[0], of.versions[0])
        nf.versions = (lo, nf.versions[1])
        if of.nullable and (nf.nullable is None or of.nullable[0] < nf.nullable[0]):
            nf.nullable = (of.nullable[0], nf.nullable[1] if nf.nullable else of.nullable[1])
        if nf.struct is not None and of.struct is not None:
            _merge_struct(nf.struct, of.struct, old_hi)


def _collect_structs(root: StructDef) -> list[StructDef]:
    out: list[StructDef] = []
    seen: set[str] = set()

    def walk(s: StructDef) -> None:
        if s.name in seen:
            return
        seen.add(s.name)
        out.append(s)
        for f in s.fields:
            if f.struct is not None:
                walk(f.struct)

    walk(root)
    return out


def load_messages(spec_root: Path, overlay: Path | None = OVERLAY_DIR) -> list[MessageDef]:
    """All messages from the spec trees, merged per message name (by api key for APIs)."""
    raw: dict[tuple[str, object], list[tuple[str, dict]]] = {}
    for tree in spec_trees(spec_root, overlay):
        for path in sorted(tree.glob("*.json")):
            j = load_json(path)
            key = (j["type"], j.get("apiKey", j["name"]))
            raw.setdefault(key, []).append((tree.name, j))
    messages = []
    for (mtype, _), files in sorted(raw.items(), key=lambda kv: (str(kv[0][1]).zfill(4), kv[0][0])):
        messages.append(_merge_files(mtype, files))
    listeners = {m.api_key: m.listeners for m in messages if m.type == "request"}
    for m in messages:
        if m.type == "response":
            m.listeners = listeners[m.api_key]  # responses name no listeners: use the request's
    return messages


def _merge_files(mtype: str, files: list[tuple[str, dict]]) -> MessageDef:
    newest_dir, newest = files[0]

    def struct_of(j: dict) -> StructDef:
        commons = {c["name"]: c["fields"] for c in j.get("commonStructs", [])}
        return _build_struct(j["name"], j["fields"], commons)

    root = struct_of(newest)
    lo, hi = parse_versions(newest["validVersions"]) or (0, -1)
    covered = set(range(lo, hi + 1))
    sources = {v: newest_dir for v in covered}
    flexible = parse_versions(newest["flexibleVersions"])
    listeners = list(newest.get("listeners", []))
    for d, j in files[1:]:
        olo, ohi = parse_versions(j["validVersions"]) or (0, -1)
        extra = set(range(olo, ohi + 1)) - covered
        if not extra:
            continue
        oflex = parse_versions(j["flexibleVersions"])
        if oflex != flexible and any(
            (oflex and oflex[0] <= v <= oflex[1]) != (flexible and flexible[0] <= v <= flexible[1])
            for v in extra
        ):
            raise ValueError(f"{newest['name']}: flexible versions differ for old versions")
        _merge_struct(root, struct_of(j), max(extra))
        for v in extra:
            sources[v] = d
        covered |= extra
        listeners = sorted(set(listeners) | set(j.get("listeners", [])))
    vlo, vhi = min(covered), max(covered)
    assert covered == set(range(vlo, vhi + 1)), newest["name"]
    return MessageDef(
        name=newest["name"],
        type=mtype,
        api_key=newest.get("apiKey"),
        versions=(vlo, vhi),
        flexible=flexible,
        listeners=listeners,
        root=root,
        structs=_collect_structs(root),
        sources=sources,
    )
