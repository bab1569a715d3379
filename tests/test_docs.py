"""The snippets in docs/*.md run as they are written: each ```python block in a fresh interpreter,
each ```sh block's ``mockbroker serve`` line as a broker that starts and prints its bootstrap servers
(fixed ports made 0, so tests never collide)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"^```(python|sh)\n(.*?)^```", re.S | re.M)


def _blocks(kind: str) -> list[tuple[str, str]]:
    out = []
    for page in DOCS:
        for i, match in enumerate(m for m in BLOCK.finditer(page.read_text()) if m.group(1) == kind):
            out.append((f"{page.name}#{i}", match.group(2)))
    return out


PYTHON = _blocks("python")
SERVE = [(name, line) for name, text in _blocks("sh") for line in text.splitlines()
         if line.startswith("mockbroker serve")]


def test_the_docs_have_snippets() -> None:
    assert PYTHON and SERVE  # (a change to the pattern that finds none would pass everything below)


@pytest.mark.clients
@pytest.mark.parametrize("code", [c for _, c in PYTHON], ids=[n for n, _ in PYTHON])
def test_python_snippet_runs(code: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("line", [line for _, line in SERVE], ids=[n for n, _ in SERVE])
def test_serve_line_starts_a_broker(line: str) -> None:
    words = re.sub(r"(?<=\d):\d{2,5}\b", ":0", line.split("#")[0]).split()
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", *words[1:]], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline() if proc.stdout else ""
        assert first.startswith("bootstrap.servers=127.0.0.1:"), (first, proc.stderr.read() if proc.stderr else "")
    finally:
        proc.terminate()
        proc.wait(timeout=20)
