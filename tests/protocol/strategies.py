"""Hypothesis strategies that build any generated message object valid for a given version."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from mockbroker.protocol.runtime import FieldSpec, Struct

_INTS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def primitive(kind: str) -> st.SearchStrategy[Any]:
    if kind in _INTS:
        lo, hi = _INTS[kind]
        return st.integers(lo, hi)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "uuid":
        return st.binary(min_size=16, max_size=16)
    if kind == "string":
        return st.text(max_size=12)
    if kind in ("bytes", "records"):
        return st.binary(max_size=24)
    raise ValueError(kind)


def field_value(f: FieldSpec, version: int, flexible: bool, depth: int) -> st.SearchStrategy[Any]:
    if f.kind == "array":
        elem = (
            message(f.element, version, flexible, depth + 1)
            if isinstance(f.element, type)
            else primitive(f.element)
        )
        base: st.SearchStrategy[Any] = st.lists(elem, max_size=3 if depth < 3 else 1)
    elif f.kind == "struct":
        base = message(f.element, version, flexible, depth + 1)
    else:
        base = primitive(f.kind)
    if f.nullable_in(version) or f.kind == "records":
        base = st.none() | base
    return base


def unknown_tags() -> st.SearchStrategy[list[tuple[int, bytes]] | None]:
    tag = st.tuples(st.integers(100, 5000), st.binary(max_size=8))
    two = st.tuples(tag, tag).filter(lambda p: p[0][0] != p[1][0]).map(lambda p: sorted(p))
    return st.none() | tag.map(lambda t: [t]) | two


def message(cls: type[Struct], version: int, flexible: bool, depth: int = 0) -> st.SearchStrategy:
    """Objects of ``cls`` with every field present in ``version`` drawn; the others keep the
    constructor's defaults, which are also what the decoder fills in for absent fields."""
    kwargs: dict[str, st.SearchStrategy[Any]] = {
        f.attr: field_value(f, version, flexible, depth) for f in cls.FIELDS if f.present_in(version)
    }
    kwargs["unknown_tags"] = unknown_tags() if flexible else st.none()
    return st.builds(cls, **kwargs)
