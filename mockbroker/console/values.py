"""How the console and the report show a record's key or value: decoded with the cluster's Schema Registry when
it carries Confluent's framing (Avro, JSON Schema, Protobuf), else UTF-8 text (pretty JSON when it is a JSON
object or array), else hex; cut at ``limit`` characters, the full size noted.

    shown = describe(record.value, registry_state)  # Shown("avro", '{\\n  "id": 7 ...', "id 3, orders-value v1 (AVRO)")
    cell = show(record.key, registry_state)         # Safe HTML: a pill with the kind and a <pre class="value">

Text keeps its line breaks and tabs; other control characters (and the invisible characters that reorder or
hide text: bidirectional controls, line and paragraph separators) show as ``\\xNN`` or ``\\uNNNN`` escapes, so
what a client wrote is what the page shows.  Every byte is data a client chose: the HTML is built with
mockbroker.console.markup, which escapes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mockbroker.console.markup import Safe, join, tag

if TYPE_CHECKING:  # (the decoder needs the [schema-registry] extra; a cluster without a registry never loads it)
    from mockbroker.registry.decode import Decoded
    from mockbroker.registry.state import RegistryState

LIMIT = 4000  # characters of a value a page shows
MAX_JSON = 1 << 20  # bytes of text tried as JSON for pretty printing
KINDS = {"AVRO": "avro", "JSON": "json-schema", "PROTOBUF": "protobuf"}
_PILLS = {"avro": "info", "json-schema": "info", "protobuf": "info", "kafka record": "info", "undecodable": "bad"}
HEX_PER_LINE = 16
# control characters but line feed, tab and carriage return, as \xNN; invisible reordering characters as \uNNNN
_ESCAPES: dict[int, str] = {
    **{c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)] if chr(c) not in "\n\t\r"},
    **{c: f"\\u{c:04x}" for c in [0x61C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F),
                                  *range(0x2066, 0x206A), 0xFEFF]},
}


@dataclass(frozen=True)
class Shown:
    """What a page shows for some bytes: ``kind`` (null, avro, json-schema, protobuf, json, text, hex or
    undecodable), the ``text`` itself and, for framed bytes, which ``schema`` decoded them."""

    kind: str
    text: str
    schema: str | None = None


def describe(data: bytes | bytearray | memoryview | None, registry: RegistryState | None,
             limit: int = LIMIT) -> Shown:
    """How ``data`` (a record's key or value) is shown, decoded with ``registry`` when it is framed."""
    if data is None:
        return Shown("null", "null")
    raw = bytes(data)
    decoded = None
    if registry is not None:  # a registry runs, so its extra (fastavro, protobuf) is installed
        from mockbroker.registry.decode import decode_framed

        decoded = decode_framed(registry, raw)
    if decoded is not None:
        schema = schema_label(decoded)
        if decoded.error is not None:
            room = max(limit - len(decoded.error) - 1, 0)
            return Shown("undecodable", decoded.error + "\n" + hex_text(raw, room), schema)
        return Shown(KINDS.get(decoded.kind, decoded.kind.lower()), pretty(decoded.value, limit, len(raw)), schema)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Shown("hex", hex_text(raw, limit))
    if len(raw) <= MAX_JSON and text.lstrip()[:1] in ("{", "["):
        try:
            return Shown("json", pretty(json.loads(text), limit, len(raw)))
        except (ValueError, RecursionError):  # not JSON after all (or nested beyond the parser's depth)
            pass
    return Shown("text", cut(visible(text[: limit + 1]), limit, len(raw), more=len(text) > limit))


def show(data: bytes | bytearray | memoryview | None, registry: RegistryState | None, limit: int = LIMIT) -> Safe:
    """The HTML of a table cell showing ``data``: a pill naming its kind (the schema in its title) and the
    text in a ``<pre class="value">``."""
    return cell(describe(data, registry, limit))


def cell(shown: Shown) -> Safe:
    """The HTML of what :func:`describe` (or another decoder) made of some bytes."""
    badge = tag("span", shown.kind, class_=f"pill {_PILLS.get(shown.kind, '')}".strip(), title=shown.schema)
    if shown.kind == "null":  # (the pill says it all)
        return badge
    return join([badge, tag("pre", shown.text, class_="value")])


def schema_label(decoded: Decoded) -> str:
    """``id 3, orders-value v1 (AVRO)``, or ``id 3 (AVRO)`` when no subject uses the schema."""
    used = f", {decoded.subject} v{decoded.version}" if decoded.subject is not None else ""
    return f"id {decoded.schema_id}{used} ({decoded.kind})"


def pretty(value: Any, limit: int, size: int) -> str:
    """A structured value as JSON indented by 2, cut at ``limit``."""
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):  # a circular or too deep value: never from a decoder, but bounded
        text = repr(value)[: limit + 1]
    return cut(visible(text), limit, size)


def visible(text: str) -> str:
    """``text`` with control characters (but \\n, \\t, \\r) and invisible reordering characters escaped."""
    return text.translate(_ESCAPES)


def hex_text(raw: bytes, limit: int) -> str:
    """Bytes as hex pairs, 16 a line, as many whole bytes as fit in ``limit`` characters (only those are
    converted); when some are left out, a last line gives the full size."""
    shown = min(len(raw), (limit + 1) // 3)  # n bytes take 3n - 1 characters
    text = "\n".join(raw[i:min(i + HEX_PER_LINE, shown)].hex(" ") for i in range(0, shown, HEX_PER_LINE))
    return text if shown == len(raw) else text + f"\n… ({len(raw)} bytes)"


def cut(text: str, limit: int, size: int, more: bool = False) -> str:
    """``text`` up to ``limit`` characters; when cut (or ``more`` says the text was already partial), a last
    line gives the full size in bytes."""
    if len(text) <= limit and not more:
        return text
    return text[:limit] + f"\n… ({size} bytes)"
