"""The JSON Lines format alone: what dump writes, seed reads back as the same bytes (UTF-8 as strings, anything
else, a lone surrogate's encoding included, as base64), and lines end at "\\n" only."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockbroker.dump import record_line
from mockbroker.seed import bytes_to_json, parse_line, read_lines

TRICKY = [b"", b"plain", "line\u2028sep\u2029 and \x85 nel".encode(), b"\xed\xa0\x80", b"\xff\x00", b"\n\r\t\"\\",
          "ünï ✓ 😀".encode(), None]


@pytest.mark.parametrize("data", TRICKY)
def test_bytes_round_trip_through_a_line(tmp_path: Path, data: bytes | None) -> None:
    line = record_line(3, 7, 1_700_000_000_000, data, data, [("h", data), ("h", b"x")])
    path = tmp_path / "one.jsonl"
    path.write_text(line + line, encoding="utf-8")
    entries = read_lines(path)
    assert [where for where, _ in entries] == [f"{path}:1", f"{path}:2"]  # U+2028 and U+0085 split no line
    record = parse_line(entries[0][1], entries[0][0])
    assert (record.partition, record.timestamp, record.key, record.value) == (3, 1_700_000_000_000, data, data)
    assert record.headers == [("h", data), ("h", b"x")]
    assert record_line(3, 7, 1_700_000_000_000, record.key, record.value, record.headers) == line


def test_json_forms() -> None:
    assert bytes_to_json(b"abc") == "abc"
    assert bytes_to_json(b"\xed\xa0\x80") == {"base64": "7aCA"}  # (UTF-8's form of a lone surrogate: not UTF-8)
    assert bytes_to_json(None) is None
