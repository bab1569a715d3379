"""The shape of the native folder's include graph (pure: no broker, no build).

Every C file lives under ``mockbroker/native/``: ``codecs/`` (pure functions over bytes) and ``lanes/`` (the C
that touches broker objects).  An extension is one translation unit: ``<folder>/<name>.c`` with its own folder
and ``codecs/`` on the include path (setup.py).  These tests hold the headers to the rules that keep that
readable: each ``#include "..."`` names a header of ``codecs/`` or of the includer's own folder, and ``codecs/``
never includes anything from ``lanes/``; the project's includes stand at the top of each file, before any code;
the graph has no cycle; every header has an include guard; and each header compiles on its own (with
``<Python.h>`` before it, as every extension starts), so it names every header it uses.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NATIVE = ROOT / "mockbroker" / "native"
CODECS = NATIVE / "codecs"
LANES = NATIVE / "lanes"
C_FILES = sorted(p for folder in (CODECS, LANES) for p in (*folder.glob("*.c"), *folder.glob("*.h")))
HEADERS = [p for p in C_FILES if p.suffix == ".h"]

# struct_slots.h sizes its Layout by MAX_SLOTS, which each includer sets for the classes it reads (9 in
# _fastproduce.c, 13 in _fastfetch.c) and the header refuses to guess (#error): compiled alone, a header that
# includes it is given a value as an includer would.
ALONE_FLAGS = ("-DMAX_SLOTS=16",)

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
GUARD = re.compile(r"\A\s*#\s*ifndef\s+(\w+)\s*\n\s*#\s*define\s+(\w+)\b")


def _name(path: Path) -> str:
    return str(path.relative_to(NATIVE))


def _code(path: Path) -> str:
    """The file without its comments (each comment's newlines kept, so line numbers stay)."""
    return COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text())


def _resolve(includer: Path, header: str) -> Path | None:
    """Where ``#include "header"`` of ``includer`` lands: its own folder first, then codecs/, as setup.py's
    include path has it; None when in neither."""
    for folder in (includer.parent, CODECS):
        if (folder / header).is_file():
            return folder / header
    return None


def _graph() -> dict[Path, list[Path]]:
    graph: dict[Path, list[Path]] = {}
    for path in C_FILES:
        targets = [_resolve(path, header) for header in INCLUDE.findall(_code(path))]
        graph[path] = [target for target in targets if target is not None]
    return graph


def _cycle(graph: dict[Path, list[Path]]) -> list[Path] | None:
    """One cycle of the graph (its first node repeated at the end), or None."""
    done: set[Path] = set()
    stack: list[Path] = []

    def visit(node: Path) -> list[Path] | None:
        if node in stack:
            return [*stack[stack.index(node):], node]
        if node in done:
            return None
        stack.append(node)
        for target in graph.get(node, []):
            found = visit(target)
            if found is not None:
                return found
        stack.pop()
        done.add(node)
        return None

    for node in graph:
        found = visit(node)
        if found is not None:
            return found
    return None


def test_the_native_folder_holds_the_c_files() -> None:
    assert (CODECS / "_speedups.c").is_file() and (LANES / "_producelane.c").is_file()
    assert len(HEADERS) > 10


def test_no_c_file_outside_the_native_folder() -> None:
    package = ROOT / "mockbroker"
    stray = [str(p.relative_to(ROOT)) for suffix in ("*.c", "*.h") for p in package.rglob(suffix)
             if p.parent not in (CODECS, LANES)]
    assert stray == [], f"C sources outside mockbroker/native/codecs and lanes: {stray}"


@pytest.mark.parametrize("path", C_FILES, ids=_name)
def test_each_include_names_a_header_of_codecs_or_its_own_folder(path: Path) -> None:
    missing = [header for header in INCLUDE.findall(_code(path)) if _resolve(path, header) is None]
    assert missing == [], f"{_name(path)} includes headers found in neither its folder nor codecs/: {missing}"


def test_codecs_never_include_lanes() -> None:
    wrong = {_name(path): [header for header in INCLUDE.findall(_code(path)) if not (CODECS / header).is_file()]
             for path in C_FILES if path.parent == CODECS}
    assert {name: headers for name, headers in wrong.items() if headers} == {}


@pytest.mark.parametrize("path", C_FILES, ids=_name)
def test_includes_stand_at_the_top(path: Path) -> None:
    """No ``#include "..."`` after the file's first line of C (a header included mid-file would lean on what
    the includer defined before it: the hidden circles this layout ended)."""
    first_code = None
    late = []
    for number, line in enumerate(_code(path).splitlines(), start=1):
        stripped = line.strip()
        if first_code is None and stripped and not stripped.startswith("#") and not line.startswith((" ", "\t")):
            first_code = number
        if first_code is not None and INCLUDE.match(line):
            late.append(f"line {number}: {stripped}")
    assert late == [], f"{_name(path)} includes after its code begins (line {first_code}): {late}"


def test_the_include_graph_has_no_cycle() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, "include cycle: " + " -> ".join(_name(p) for p in cycle or [])


def test_the_cycle_finder_names_a_cycle() -> None:
    a, b, c = NATIVE / "a.h", NATIVE / "b.h", NATIVE / "c.h"
    assert _cycle({a: [b], b: [c], c: [a]}) == [a, b, c, a]
    assert _cycle({a: [b, c], b: [c], c: []}) is None


@pytest.mark.parametrize("path", HEADERS, ids=_name)
def test_each_header_has_an_include_guard(path: Path) -> None:
    code = _code(path)
    guard = GUARD.match(code)
    assert guard is not None and guard.group(1) == guard.group(2), \
        f"{_name(path)} does not open with #ifndef NAME / #define NAME"
    assert code.rstrip().endswith("#endif"), f"{_name(path)}'s guard does not close at its end"


def _python_include() -> Path | None:
    include = Path(sysconfig.get_paths()["include"])
    return include if (include / "Python.h").is_file() else None


@pytest.mark.parametrize("path", HEADERS, ids=_name)
def test_each_header_compiles_on_its_own(path: Path, tmp_path: Path) -> None:
    compiler, include = shutil.which("gcc"), _python_include()
    if compiler is None or include is None:
        pytest.skip("gcc or Python.h is not installed here (the build falls back to pure Python too)")
    unit = tmp_path / "alone.c"
    unit.write_text(f'#include <Python.h>\n#include "{path.name}"\n')
    done = subprocess.run(
        [compiler, "-fsyntax-only", "-Werror=implicit-function-declaration", *ALONE_FLAGS, f"-I{include}",
         f"-I{path.parent}", f"-I{CODECS}", str(unit)],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, f"{_name(path)} does not compile on its own:\n{done.stderr[-3000:]}"
