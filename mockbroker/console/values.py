"""(Temporary stand-in until the decode helper's module lands.)"""

from __future__ import annotations

from typing import Any

from mockbroker.console.markup import Safe, tag


def show(data: bytes | memoryview | None, registry: Any, limit: int = 4000) -> Safe:
    if data is None:
        return tag("span", "null", class_="pill")
    try:
        return tag("pre", bytes(data).decode()[:limit], class_="value")
    except UnicodeDecodeError:
        return tag("pre", bytes(data).hex(" ")[:limit], class_="value")
