"""mockbroker.console.values: how a record's key or value is shown.  Framed bytes are decoded with a real
RegistryState (schemas registered through its own plan/apply, as the registry's REST API does), the rest is
text, pretty JSON or hex; long values are cut with their size noted; the HTML escapes whatever a client wrote."""

from __future__ import annotations

import io
import json

import fastavro
import pytest

from mockbroker.console.values import Shown, describe, show
from mockbroker.registry.state import RegistryState

ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"]},
    {"name": "blob", "type": "bytes"}]}


def framed(schema_id: int, payload: bytes) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + payload


def avro(value: object) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(ORDER), value)
    return out.getvalue()


@pytest.fixture
def registry() -> RegistryState:
    state = RegistryState()
    state.plan_register("other-value", "JSON", '{"type": "object"}', []).apply()
    state.plan_register("orders-value", "AVRO", json.dumps(ORDER), []).apply()
    return state


def test_null_text_json_and_hex() -> None:
    assert describe(None, None) == Shown("null", "null")
    assert describe(b"", None) == Shown("text", "")
    assert describe("héllo\n\tworld".encode(), None) == Shown("text", "héllo\n\tworld")
    assert describe(b'{"a": [1, {"b": null}], "c": "\xc3\xa9"}', None) == Shown(
        "json", '{\n  "a": [\n    1,\n    {\n      "b": null\n    }\n  ],\n  "c": "é"\n}')
    assert describe(b"[]", None) == Shown("json", "[]")
    assert describe(b"123", None) == Shown("text", "123")  # a JSON scalar is shown as the text it is
    assert describe(b'{"a": 1', None) == Shown("text", '{"a": 1')
    assert describe(b"\xff\x00\x10", None) == Shown("hex", "ff 00 10")
    assert describe(bytes(range(20)) + b"\xff", None).text == (
        "00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f\n10 11 12 13 ff")
    assert describe(memoryview(b"abc"), None) == describe(bytearray(b"abc"), None) == Shown("text", "abc")


def test_control_and_reordering_characters_are_visible() -> None:
    shown = describe("a\x00b\x1bc\x7f\r\n\u202edcba\u2028".encode(), None)
    assert shown == Shown("text", "a\\x00b\\x1bc\\x7f\r\n\\u202edcba\\u2028")
    assert describe('{"k": "\u202e"}'.encode(), None).text == '{\n  "k": "\\u202e"\n}'


def test_long_values_are_cut_with_their_size() -> None:
    text = describe(b"x" * 5000, None)
    assert text.text == "x" * 4000 + "\n… (5000 bytes)"
    assert describe(b"x" * 4000, None).text == "x" * 4000
    pretty = describe(json.dumps(list(range(2000))).encode(), None, limit=100)
    assert pretty.kind == "json" and pretty.text.endswith(f"\n… ({len(json.dumps(list(range(2000))))} bytes)")
    assert len(pretty.text.split("\n…")[0]) == 100
    binary = describe(b"\xff" * 10_000, None, limit=50)  # 17 whole bytes fit in 50 characters
    assert binary.text == " ".join(["ff"] * 16) + "\nff\n… (10000 bytes)"


def test_framed_avro_is_decoded(registry: RegistryState) -> None:
    data = framed(2, avro({"id": 7, "note": "<script>alert(1)</script>", "blob": b"\x01\xfe"}))
    shown = describe(data, registry)
    assert shown.kind == "avro" and shown.schema == "id 2, orders-value v1 (AVRO)"
    assert json.loads(shown.text) == {"id": 7, "note": "<script>alert(1)</script>", "blob": "01fe"}
    assert shown.text.startswith('{\n  "id": 7,')
    html = show(data, registry)
    assert '<span class="pill info" title="id 2, orders-value v1 (AVRO)">avro</span>' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script" not in html
    # without the registry, or with an id it does not have, framed bytes are bytes
    assert describe(data, None).kind == "hex"  # not UTF-8
    assert describe(framed(99, b"abc"), registry) == Shown("text", "\\x00\\x00\\x00\\x00cabc")


def test_json_schema_kind_and_a_schema_no_subject_uses(registry: RegistryState) -> None:
    shown = describe(framed(1, b'{"x": [true]}'), registry)
    assert shown == Shown("json-schema", '{\n  "x": [\n    true\n  ]\n}', "id 1, other-value v1 (JSON)")
    registry.subjects.clear()  # as after a permanent delete that keeps the id's schema
    assert describe(framed(1, b"3"), registry) == Shown("json-schema", "3", "id 1 (JSON)")


def test_undecodable_shows_the_error_and_the_bytes(registry: RegistryState) -> None:
    data = framed(2, b"\x02\x02")  # id 1, then a union branch 1 (string) whose length is missing
    shown = describe(data, registry)
    assert shown.kind == "undecodable" and shown.schema == "id 2, orders-value v1 (AVRO)"
    error, dump = shown.text.split("\n")
    assert error == "Avro payload ends inside the number at byte 7"
    assert dump == "00 00 00 00 02 02 02"
    html = show(data, registry)
    assert html.startswith('<span class="pill bad" title="id 2, orders-value v1 (AVRO)">undecodable</span>')
    long = describe(framed(2, b"\x02\x02\x7f" + b"\x00" * 5000), registry, limit=200)  # a length of -64
    assert long.kind == "undecodable" and len(long.text.split("\n…")[0]) <= 200
    assert long.text.endswith("\n… (5008 bytes)")


def test_show_escapes_everything_a_client_wrote() -> None:
    html = show(b"<script>alert(1)</script>", None)
    assert html == ('<span class="pill">text</span>'
                    '<pre class="value">&lt;script&gt;alert(1)&lt;/script&gt;</pre>')
    attribute = show(b'{"k": "\\" onmouseover=\\"x"}', None)
    assert "<script" not in attribute and 'onmouseover="' not in attribute and "&quot;" in attribute
    assert show(None, None) == '<span class="pill">null</span>'  # (no text beside the pill)
