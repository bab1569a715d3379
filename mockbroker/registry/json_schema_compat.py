"""JSON Schema compatibility for the Schema Registry: "data valid under the writer schema must be valid under the
reader schema", reported with the difference type names of Confluent's JSON Schema checker (TYPE_NARROWED,
PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL, REQUIRED_ATTRIBUTE_ADDED, ENUM_ARRAY_NARROWED, MAXIMUM_DECREASED, ...).

Only the incompatible differences are reported; compatible ones (TYPE_EXTENDED, MAXIMUM_INCREASED,
PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL, ...) pass silently.  ``$ref`` is followed on both sides (local pointers
and the schema's references).  A pair of subschemas met again inside its own comparison (a recursive schema) is
assumed to fit, except that a cycle through oneOf/anyOf/allOf alone has its other keywords compared once; a pair
met again elsewhere repeats its first problem.  The work per check is bounded (SCHEMA_TOO_COMPLEX past it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from referencing import Specification
from referencing._core import Resolver  # the class of Registry.resolver(); referencing exports no other name
from referencing.exceptions import Unresolvable

from mockbroker.registry.json_schema_keywords import (
    ARRAY_BOUNDS,
    COMBINATORS,
    NUMERIC_BOUNDS,
    OBJECT_BOUNDS,
    STRING_BOUNDS,
    accepts,
    allowed_values,
    bound_implied,
    can_produce,
    extra_schema,
    fraction,
    is_number,
    items_of,
    merge,
    numeric_bounds,
    required_of,
    trivial,
    types_of,
    value_key,
)

_MAX_REF_HOPS = 64
_MAX_DEPTH = 200
_MAX_PAIRS = 200_000  # subschema comparisons per check, trials included
_SUBSCHEMAS = "COMBINED_TYPE_SUBSCHEMAS_CHANGED"
_BECAUSE = "; first cause: "
_PLURAL = {"PROPERTY": "properties", "ITEM": "items"}


@dataclass(frozen=True)
class JsonSchema:
    """A parsed JSON Schema: the document, a resolver rooted at it (its references registered) and its dialect."""

    root: Any
    resolver: Resolver[Any]
    spec: Specification[Any]


@dataclass(frozen=True)
class _Side:
    """A subschema with the resolver its ``$ref`` resolve against."""

    schema: Any
    resolver: Resolver[Any]
    spec: Specification[Any]

    def child(self, schema: Any) -> _Side:
        return _Side(schema, self.resolver, self.spec)


def _because(problem: str) -> str:
    """The root cause of a nested problem, to end an outer one."""
    return _BECAUSE + problem.rsplit(_BECAUSE, 1)[-1]


@dataclass
class _Seen:
    """A pair of subschemas already compared (kept here so that their ids stay theirs) and its first problem."""

    writer: Any
    reader: Any
    first_problem: str | None = None
    done: bool = False  # compared to the end (else: met again inside its own comparison, a cycle)


@dataclass
class _Shared:
    """What a comparison and all its trials share: merged schemas by content, and a bound on the work."""

    interned: dict[str, Any] = field(default_factory=dict)
    budget: int = _MAX_PAIRS


class Checker:
    """Compares a writer schema with a reader schema, collecting one line per incompatible difference."""

    def __init__(self, seen: dict[tuple[int, int], _Seen] | None = None, depth: int = 0,
                 shared: _Shared | None = None, flattened: set[tuple[int, int]] | None = None) -> None:
        self.problems: list[str] = []
        # pairs compared (or being compared) so far; a pair met again is not compared again (recursive schemas)
        self.seen: dict[tuple[int, int], _Seen] = {} if seen is None else seen
        self.depth = depth
        self.shared = _Shared() if shared is None else shared
        # cycles through combinators met, whose keywords beside the combinators were compared (once per lineage)
        self.flattened: set[tuple[int, int]] = set() if flattened is None else flattened

    def intern(self, schema: Any) -> Any:
        """One object per merged schema content, so that a merge met again is a pair already seen."""
        return self.shared.interned.setdefault(json.dumps(schema, sort_keys=True), schema)

    def report(self, kind: str, path: str, message: str) -> None:
        self.problems.append(f"{kind} at {path}: {message}")

    def trial(self, writer: _Side, reader: _Side, path: str = "#") -> list[str]:
        """Why ``reader`` may reject what ``writer`` accepts (empty: it accepts it all), nothing reported."""
        trial = Checker(dict(self.seen), self.depth + 1, self.shared, set(self.flattened))
        trial.compare(writer, reader, path)
        return trial.problems

    def fits(self, writer: _Side, reader: _Side, path: str = "#") -> bool:
        return not self.trial(writer, reader, path)

    def fits_one(self, writer: _Side, readers: list[_Side], index: int, path: str) -> str | None:
        """None when ``writer`` fits one of ``readers``, else the first reason it fails the one at ``index``."""
        reasons = [self.trial(writer, reader, path) for reader in readers]
        if reasons and not all(reasons):
            return None
        return _because(reasons[min(index, len(reasons) - 1)][0]) if reasons else "; the reader has no subschema"

    def deref(self, side: _Side, path: str) -> _Side | None:
        """Follow ``$ref`` (and enter ``$id`` scopes); None (reported) when a reference does not resolve."""
        for _ in range(_MAX_REF_HOPS):
            schema = side.schema
            if not isinstance(schema, dict):
                return side
            if isinstance(side.spec.id_of(schema), str):
                side = _Side(schema, side.resolver.in_subresource(side.spec.create_resource(schema)), side.spec)
            ref = schema.get("$ref")
            if not isinstance(ref, str):
                return side
            try:
                resolved = side.resolver.lookup(ref)
            except Unresolvable:
                self.report("REF_UNRESOLVABLE", path, f"$ref '{ref}' does not resolve")
                return None
            side = _Side(resolved.contents, resolved.resolver, side.spec)
        self.report("REF_UNRESOLVABLE", path, f"more than {_MAX_REF_HOPS} $ref hops (a $ref cycle)")
        return None

    def compare(self, writer: _Side, reader: _Side, path: str) -> None:
        """Report why data valid under ``writer`` may be invalid under ``reader``."""
        w, r = self.deref(writer, path), self.deref(reader, path)
        if w is None or r is None:
            return
        pair = (id(w.schema), id(r.schema))
        earlier = self.seen.get(pair)
        if earlier is not None:
            if earlier.first_problem is not None:
                self.problems.append(f"{earlier.first_problem} (the same subschemas again at {path})")
            elif not earlier.done and pair not in self.flattened and self.unguarded(w.schema, r.schema):
                self.flattened.add(pair)  # a cycle through combinators alone: compare the keywords beside them
                self.plain(w, r, path)
            return
        seen = self.seen[pair] = _Seen(w.schema, r.schema)
        before = len(self.problems)
        self.compare_resolved(w, r, path)
        seen.done = True
        if len(self.problems) > before:
            seen.first_problem = self.problems[before]

    @staticmethod
    def unguarded(ws: Any, rs: Any) -> bool:
        """Both are schemas with keywords to compare, one with a combinator (its cycle assumed nothing yet)."""
        if not isinstance(ws, dict) or not isinstance(rs, dict) or trivial(rs) or trivial(ws):
            return False
        return any(key in ws or key in rs for key in COMBINATORS)

    def compare_resolved(self, w: _Side, r: _Side, path: str) -> None:
        self.shared.budget -= 1
        if path.count("/") + self.depth > _MAX_DEPTH or self.shared.budget < 0:
            self.report("SCHEMA_TOO_COMPLEX", path, "nested too deeply or too many subschema pairs; not compared")
            return
        ws, rs = w.schema, r.schema
        if trivial(rs) or ws is False:
            return
        if rs is False:
            self.report("TYPE_NARROWED", path, "the reader schema is false (accepts nothing) and the writer's is not")
        elif trivial(ws):
            self.report("SCHEMA_ADDED", path, "the writer accepts any value, the reader has constraints")
        elif not isinstance(ws, dict) or not isinstance(rs, dict):
            return
        elif any(key in ws for key in COMBINATORS) or any(key in rs for key in COMBINATORS):
            self.combined(w, r, path)
        else:
            self.plain(w, r, path)

    # -- oneOf / anyOf / allOf -------------------------------------------------------------------------------------

    def combined(self, w: _Side, r: _Side, path: str) -> None:
        wkind = next((key for key in COMBINATORS if isinstance(w.schema.get(key), list)), None)
        rkind = next((key for key in COMBINATORS if isinstance(r.schema.get(key), list)), None)
        wbranches = self.branches(w, wkind, path)
        rbranches = self.branches(r, rkind, path)
        if wkind is None or rkind is None:
            self.one_sided(w, r, wkind, rkind, wbranches, rbranches, path)
        elif wkind == "allOf" and rkind == "allOf":
            whole = self.merged_all(w, wbranches)
            for j, branch in enumerate(rbranches):
                why = self.trial(whole, branch, path)
                if why:
                    kind = "PRODUCT_TYPE_EXTENDED" if len(rbranches) > len(wbranches) else _SUBSCHEMAS
                    self.report(kind, f"{path}/allOf/{j}", "the writer's allOf does not imply this subschema"
                                + _because(why[0]))
        elif wkind != "allOf" and (rkind == wkind or (wkind, rkind) == ("oneOf", "anyOf")):
            for i, branch in enumerate(wbranches):
                failed = self.fits_one(branch, rbranches, i, path)
                if failed:
                    kind = "SUM_TYPE_NARROWED" if len(rbranches) < len(wbranches) else _SUBSCHEMAS
                    self.report(kind, f"{path}/{wkind}/{i}", f"this writer subschema fits none of the reader's {rkind}"
                                + failed)
        else:
            self.report("COMBINED_TYPE_CHANGED", path, f"the writer's {wkind} became {rkind} in the reader")

    def one_sided(self, w: _Side, r: _Side, wkind: str | None, rkind: str | None,
                  wbranches: list[_Side], rbranches: list[_Side], path: str) -> None:
        if rkind == "allOf":
            for j, branch in enumerate(rbranches):
                self.compare(w, branch, f"{path}/allOf/{j}")
        elif rkind is not None:
            failed = self.fits_one(w, rbranches, 0, path)
            if failed:
                self.report("COMBINED_TYPE_CHANGED", path, f"the writer's schema fits none of the reader's {rkind}"
                            + failed)
        elif wkind == "allOf":
            self.compare(self.merged_all(w, wbranches), r, path)
        else:
            for i, branch in enumerate(wbranches):
                self.compare(branch, r, f"{path}/{wkind}/{i}")

    def branches(self, side: _Side, kind: str | None, path: str) -> list[_Side]:
        if kind is None:
            return []
        rest = {key: value for key, value in side.schema.items() if key != kind}
        found = []
        for i, branch in enumerate(side.schema[kind]):
            resolved = self.deref(side.child(branch), f"{path}/{kind}/{i}")
            if resolved is not None:
                found.append(resolved.child(self.intern(merge(rest, resolved.schema))))
        return found

    def merged_all(self, side: _Side, branches: list[_Side]) -> _Side:
        merged: Any = {key: value for key, value in side.schema.items() if key != "allOf"}
        for branch in branches:
            merged = merge(merged, branch.schema) if isinstance(merged, dict) else merged
        return side.child(self.intern(merged))

    # -- plain schemas ---------------------------------------------------------------------------------------------

    def plain(self, w: _Side, r: _Side, path: str) -> None:
        ws, rs = w.schema, r.schema
        wtypes, rtypes = types_of(ws), types_of(rs)
        if not self.types(wtypes, rtypes, path):
            return
        self.values(ws, rs, path)
        self.negation(w, r, path)
        if can_produce(wtypes, "number") and (accepts(rtypes, "number") or accepts(rtypes, "integer")):
            wnum, rnum = numeric_bounds(ws, w.spec), numeric_bounds(rs, r.spec)
            self.bounds(wnum, rnum, path, NUMERIC_BOUNDS)
            self.multiple_of(wnum, rnum, path)
        if can_produce(wtypes, "string") and accepts(rtypes, "string"):
            self.bounds(ws, rs, path, STRING_BOUNDS)
            self.pattern(ws, rs, path)
        if can_produce(wtypes, "object") and accepts(rtypes, "object"):
            self.bounds(ws, rs, path, OBJECT_BOUNDS)
            self.objects(w, r, path)
        if can_produce(wtypes, "array") and accepts(rtypes, "array"):
            self.bounds(ws, rs, path, ARRAY_BOUNDS)
            if rs.get("uniqueItems") is True and ws.get("uniqueItems") is not True:
                self.report("UNIQUE_ITEMS_ADDED", path, "the reader requires unique items, the writer does not")
            self.arrays(w, r, path)

    def types(self, wtypes: set[str] | None, rtypes: set[str] | None, path: str) -> bool:
        """Report a type change; False when no writer type is readable (nothing more to compare)."""
        if rtypes is None:
            return True
        if wtypes is None:
            self.report("TYPE_NARROWED", path, f"the reader allows only {sorted(rtypes)}, the writer any type")
            return True
        lost = sorted(t for t in wtypes if not accepts(rtypes, t))
        if not lost:
            return True
        if len(lost) < len(wtypes) or ("number" in wtypes and "integer" in rtypes):
            self.report("TYPE_NARROWED", path, f"writer type(s) {lost} are not in the reader's {sorted(rtypes)}")
            return True
        self.report("TYPE_CHANGED", path, f"writer type(s) {sorted(wtypes)} became {sorted(rtypes)}")
        return False

    def values(self, ws: dict[str, Any], rs: dict[str, Any], path: str) -> None:
        rvalues, wvalues = allowed_values(rs), allowed_values(ws)
        if rvalues is None:
            return
        if wvalues is None:
            self.report("ENUM_ARRAY_NARROWED", path, "the reader allows only its enum/const values, the writer any")
            return
        rkeys, wkeys = {value_key(v) for v in rvalues}, {value_key(v) for v in wvalues}
        lost = sorted(wkeys - rkeys)
        if lost:
            kind = "ENUM_ARRAY_NARROWED" if rkeys < wkeys else "ENUM_ARRAY_CHANGED"
            self.report(kind, path, f"writer value(s) {', '.join(lost)} are not allowed by the reader's enum/const")

    def negation(self, w: _Side, r: _Side, path: str) -> None:
        rnot, wnot = r.schema.get("not"), w.schema.get("not")
        if rnot is None:
            return
        if wnot is None or not self.fits(r.child(rnot), w.child(wnot), f"{path}/not"):
            self.report("NOT_TYPE_EXTENDED", f"{path}/not", "the reader's 'not' rejects values the writer allows")

    def bounds(self, ws: dict[str, Any], rs: dict[str, Any], path: str,
               table: tuple[tuple[str, str, bool], ...]) -> None:
        for keyword, name, larger_is_stricter in table:
            rvalue: Any = rs.get(keyword)
            wvalue: Any = ws.get(keyword)
            if not is_number(rvalue) or (table is NUMERIC_BOUNDS and bound_implied(ws, keyword, rvalue)):
                continue
            if not is_number(wvalue):
                self.report(f"{name}_ADDED", path, f"the reader adds {keyword} {rvalue}")
            elif (float(rvalue) > float(wvalue)) if larger_is_stricter else (float(rvalue) < float(wvalue)):
                change = "INCREASED" if larger_is_stricter else "DECREASED"
                self.report(f"{name}_{change}", path, f"{keyword} went from {wvalue} to {rvalue}")

    def multiple_of(self, ws: dict[str, Any], rs: dict[str, Any], path: str) -> None:
        rvalue, wvalue = rs.get("multipleOf"), ws.get("multipleOf")
        if not isinstance(rvalue, (int, float)) or isinstance(rvalue, bool) or rvalue <= 0:
            return
        if not isinstance(wvalue, (int, float)) or isinstance(wvalue, bool) or wvalue <= 0:
            self.report("MULTIPLE_OF_ADDED", path, f"the reader adds multipleOf {rvalue}")
            return
        wfrac, rfrac = fraction(wvalue), fraction(rvalue)
        if (wfrac / rfrac).denominator == 1:
            return  # MULTIPLE_OF_REDUCED: every multiple of the writer's is one of the reader's
        kind = "MULTIPLE_OF_EXPANDED" if (rfrac / wfrac).denominator == 1 else "MULTIPLE_OF_CHANGED"
        self.report(kind, path, f"multipleOf went from {wvalue} to {rvalue}")

    def pattern(self, ws: dict[str, Any], rs: dict[str, Any], path: str) -> None:
        rvalue, wvalue = rs.get("pattern"), ws.get("pattern")
        if not isinstance(rvalue, str) or rvalue == wvalue:
            return
        if not isinstance(wvalue, str):
            self.report("PATTERN_ADDED", path, f"the reader adds pattern {json.dumps(rvalue)}")
        else:
            self.report("PATTERN_CHANGED", path, f"pattern went from {json.dumps(wvalue)} to {json.dumps(rvalue)}")

    # -- objects and arrays ----------------------------------------------------------------------------------------

    def objects(self, w: _Side, r: _Side, path: str) -> None:
        ws, rs = w.schema, r.schema
        wprops = ws.get("properties") if isinstance(ws.get("properties"), dict) else {}
        rprops = rs.get("properties") if isinstance(rs.get("properties"), dict) else {}
        for name, rprop in rprops.items():
            where = f"{path}/properties/{name}"
            if name in wprops:
                self.compare(w.child(wprops[name]), r.child(rprop), where)
            else:
                self.added(w.child(extra_schema(ws, name)), r.child(rprop), f"property '{name}'", where, "PROPERTY")
        for name, wprop in wprops.items():
            if name not in rprops:
                where = f"{path}/properties/{name}"
                self.removed(w.child(wprop), r.child(extra_schema(rs, name)), f"property '{name}'", where, "PROPERTY")
        self.patterns(w, r, path)
        self.dependencies(w, r, path, required_of(ws))
        self.open_model(w.child(ws.get("additionalProperties", True)), r.child(rs.get("additionalProperties", True)),
                        f"{path}/additionalProperties", "ADDITIONAL_PROPERTIES", "properties")
        wrequired = required_of(ws)
        rrequired = rs.get("required") if isinstance(rs.get("required"), list) else []
        for name in rrequired:
            if name not in wrequired and not (isinstance(rprops.get(name), dict) and "default" in rprops[name]):
                self.report("REQUIRED_ATTRIBUTE_ADDED", f"{path}/required",
                            f"the reader requires '{name}' (no default), the writer does not")

    def dependencies(self, w: _Side, r: _Side, path: str, wrequired: set[str]) -> None:
        """dependencies (draft-04 to 07), dependentRequired and dependentSchemas (2019-09 on)."""
        for keyword in ("dependencies", "dependentRequired", "dependentSchemas"):
            rdeps, wdeps = r.schema.get(keyword), w.schema.get(keyword)
            wdeps = wdeps if isinstance(wdeps, dict) else {}
            for name, rdep in rdeps.items() if isinstance(rdeps, dict) else ():
                wdep, where = wdeps.get(name), f"{path}/{keyword}/{name}"
                if isinstance(rdep, list):
                    missing = [p for p in rdep if p not in wrequired and not (isinstance(wdep, list) and p in wdep)]
                    if missing:
                        kind = "DEPENDENCY_ARRAY_EXTENDED" if isinstance(wdep, list) else "DEPENDENCY_ARRAY_ADDED"
                        self.report(kind, where, f"with '{name}' the reader also requires {missing}")
                elif isinstance(wdep, (dict, bool)):
                    self.compare(w.child(wdep), r.child(rdep), where)
                elif not trivial(rdep):
                    self.report("DEPENDENCY_SCHEMA_ADDED", where, f"with '{name}' the reader adds a schema")

    def patterns(self, w: _Side, r: _Side, path: str) -> None:
        """patternProperties, matched by their pattern text: a new pattern is a property added for every name it
        matches (checked against the writer's additionalProperties), a dropped one a property removed."""
        wpatterns = w.schema.get("patternProperties") if isinstance(w.schema.get("patternProperties"), dict) else {}
        rpatterns = r.schema.get("patternProperties") if isinstance(r.schema.get("patternProperties"), dict) else {}
        for pattern, rsub in rpatterns.items():
            where = f"{path}/patternProperties/{pattern}"
            if pattern in wpatterns:
                self.compare(w.child(wpatterns[pattern]), r.child(rsub), where)
            else:
                wextra = w.child(w.schema.get("additionalProperties", True))
                self.added(wextra, r.child(rsub), f"properties matching /{pattern}/", where, "PROPERTY")
        for pattern, wsub in wpatterns.items():
            if pattern not in rpatterns:
                rextra = r.child(r.schema.get("additionalProperties", True))
                where = f"{path}/patternProperties/{pattern}"
                self.removed(w.child(wsub), rextra, f"properties matching /{pattern}/", where, "PROPERTY")

    def added(self, wextra: _Side, rsub: _Side, what: str, path: str, noun: str) -> None:
        """A property (or tuple position) the reader declares and the writer does not: the writer's additional
        properties (items) may hold it."""
        if wextra.schema is False or trivial(rsub.schema):
            return  # closed writer: it never writes there; an empty reader schema accepts anything
        if trivial(wextra.schema):
            self.report(f"{noun}_ADDED_TO_OPEN_CONTENT_MODEL", path,
                        f"{what}: new in the reader; the writer's open content model allows any value there")
        elif not self.fits(wextra, rsub, path):
            self.report(f"{noun}_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", path,
                        f"{what}: new in the reader; it rejects values the writer's additional {_PLURAL[noun]} allow")

    def removed(self, wsub: _Side, rextra: _Side, what: str, path: str, noun: str) -> None:
        """A property (or tuple position) the writer declares and the reader does not."""
        if trivial(rextra.schema):
            return
        if rextra.schema is False:
            self.report(f"{noun}_REMOVED_FROM_CLOSED_CONTENT_MODEL", path,
                        f"{what}: dropped by the reader, which forbids additional {_PLURAL[noun]}")
        elif not self.fits(wsub, rextra, path):
            self.report(f"{noun}_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", path,
                        f"{what}: dropped by the reader, whose additional {_PLURAL[noun]} reject the writer's values")

    def open_model(self, wextra: _Side, rextra: _Side, path: str, name: str, what: str) -> None:
        """additionalProperties / additionalItems: what the writer allows beyond the declared ones."""
        if trivial(rextra.schema) or wextra.schema is False:
            return
        if rextra.schema is False:
            self.report(f"{name}_REMOVED", path, f"the reader forbids additional {what}, the writer allows them")
        elif trivial(wextra.schema):
            self.report(f"{name}_NARROWED", path, f"the reader restricts additional {what}, the writer allows any")
        else:
            self.compare(wextra, rextra, path)

    def arrays(self, w: _Side, r: _Side, path: str) -> None:
        wprefix, wrest, _, _ = items_of(w.schema, w.spec)
        rprefix, rrest, rkey, rrest_key = items_of(r.schema, r.spec)
        if not wprefix and not rprefix:
            self.compare(w.child(wrest), r.child(rrest), f"{path}/{rrest_key}")
            return
        for i in range(max(len(wprefix), len(rprefix))):
            where = f"{path}/{rkey}/{i}"
            if i < len(wprefix) and i < len(rprefix):
                self.compare(w.child(wprefix[i]), r.child(rprefix[i]), where)
            elif i < len(rprefix):
                self.added(w.child(wrest), r.child(rprefix[i]), f"tuple position {i}", where, "ITEM")
            else:
                self.removed(w.child(wprefix[i]), r.child(rrest), f"tuple position {i}", where, "ITEM")
        self.open_model(w.child(wrest), r.child(rrest), f"{path}/{rrest_key}", "ADDITIONAL_ITEMS", "items")

def check(reader: JsonSchema, writer: JsonSchema) -> list[str]:
    """Why data valid under ``writer`` may be invalid under ``reader`` (one line each; empty: compatible)."""
    checker = Checker()
    checker.compare(_Side(writer.root, writer.resolver, writer.spec),
                    _Side(reader.root, reader.resolver, reader.spec), "#")
    return list(dict.fromkeys(checker.problems))

