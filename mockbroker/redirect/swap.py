"""Rebinding module-level names across sys.modules (as freezegun does for datetime): a C extension type
cannot be patched in place, so every module global bound to it is rebound to a replacement while
mock_kafka is active, and restored afterwards.

    swapped = swap({Producer: RedirectingProducer})
    ...
    restore(swapped, {Producer: RedirectingProducer})
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Swapped:
    """One rebound name: ``namespace[name]`` was ``original`` and is now ``replacement``."""

    namespace: dict[str, Any]
    name: str
    original: object
    replacement: object


def _namespaces() -> list[dict[str, Any]]:
    """The globals of every loaded module (a snapshot: modules may load on other threads meanwhile)."""
    found = []
    for module in list(sys.modules.values()):
        try:
            namespace = getattr(module, "__dict__", None)
        except Exception:  # a lazy module proxy may raise on any attribute
            continue
        if isinstance(namespace, dict):
            found.append(namespace)
    return found


def swap(replacements: Mapping[object, object]) -> list[Swapped]:
    """Rebind every module global that is one of the keys to its value; what was rebound, in order."""
    by_id = {id(original): (original, replacement) for original, replacement in replacements.items()}
    swapped = []
    for namespace in _namespaces():
        for name, value in list(namespace.items()):
            pair = by_id.get(id(value))
            if pair is not None and pair[0] is value:
                namespace[name] = pair[1]
                swapped.append(Swapped(namespace, name, value, pair[1]))
    return swapped


def restore(swapped: list[Swapped], replacements: Mapping[object, object]) -> None:
    """Put back what :func:`swap` rebound (unless the name was rebound again since), then rebind any
    module global still bound to a replacement (a module imported while active) to its original."""
    for item in reversed(swapped):
        if item.namespace.get(item.name) is item.replacement:
            item.namespace[item.name] = item.original
    swap({replacement: original for original, replacement in replacements.items()})
