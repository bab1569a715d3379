"""mockbroker.native.load: the one place that decides whether a C extension is used.

The lanes (``_producelane``, ``_fastfetch``, ``_reading``) read CPython type internals, so they load only on a
CPython that CI runs them on (3.11-3.13, noxfile.py); the codecs over bytes load wherever they were built;
``MOCKBROKER_PURE_PYTHON`` turns everything off.  The last tests start real interpreters and check that the six
modules that stand in for an extension all follow that decision.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import pytest

from mockbroker import native

ALL_EXTENSIONS = ("_speedups", "_fastproduce", "_fastfetch", "_producelane", "_reading")
CODECS = tuple(name for name in ALL_EXTENSIONS if name not in native.LANES)
BUILT = all(importlib.util.find_spec(f"mockbroker.native.{name}") is not None for name in ALL_EXTENSIONS)
needs_built = pytest.mark.skipif(not BUILT, reason="the C extensions are not built here (no C compiler?)")

# What each standing-in module holds when its extension is in use (a C object) or not (None / the Python twin).
REPORT_SITES = """
import json, sys
{prelude}
import mockbroker.handlers.produce_lane as produce_lane
import mockbroker.protocol.fast_fetch as fast_fetch
import mockbroker.protocol.fast_produce as fast_produce
import mockbroker.records.check as check
import mockbroker.records.crc as crc
import mockbroker.server.connection as connection
print(json.dumps({{
    "_producelane": produce_lane._lane is not None,
    "_fastfetch": fast_fetch.lane is not None,
    "_reading": connection._Reader.__module__ == "mockbroker.native._reading",
    "_fastproduce": fast_produce.decode_request is not None,
    "_speedups": check.SPEEDUPS,
    "folding crc32c": crc._folding_crc32c() is not None,
}}))
"""


def sites_in_use(prelude: str = "", pure_python: str = "") -> dict[str, bool]:
    """Which extensions the six import sites took, in a fresh interpreter (``prelude`` runs first)."""
    env = {key: value for key, value in os.environ.items() if key != "MOCKBROKER_PURE_PYTHON"}
    if pure_python:
        env["MOCKBROKER_PURE_PYTHON"] = pure_python
    done = subprocess.run([sys.executable, "-c", REPORT_SITES.format(prelude=prelude)], env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("value", ["1", "yes"])
@pytest.mark.parametrize("name", ALL_EXTENSIONS)
def test_pure_python_set_loads_nothing(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv("MOCKBROKER_PURE_PYTHON", value)
    assert native.pure_python_forced()
    assert native.load(name) is None


@needs_built
@pytest.mark.parametrize("value", ["", "0"])
def test_pure_python_empty_or_zero_loads_the_extensions(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("MOCKBROKER_PURE_PYTHON", value)
    if not native.lanes_tested_here():
        pytest.skip(f"the lanes are not loaded on Python {sys.version_info[:2]}, which CI does not test")
    for name in ALL_EXTENSIONS:
        module = native.load(name)
        assert isinstance(module, types.ModuleType) and module.__name__ == f"mockbroker.native.{name}"


@pytest.mark.parametrize("version", [(3, 10, 14, "final", 0), (3, 14, 0, "final", 0), (4, 0, 0, "alpha", 1)])
def test_an_untested_python_gets_no_lane(monkeypatch: pytest.MonkeyPatch, version: tuple[object, ...]) -> None:
    monkeypatch.delenv("MOCKBROKER_PURE_PYTHON", raising=False)
    monkeypatch.setattr(sys, "version_info", version)
    assert not native.lanes_tested_here()
    for name in native.LANES:
        assert native.load(name) is None


@needs_built
def test_an_untested_python_still_loads_the_codecs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOCKBROKER_PURE_PYTHON", raising=False)
    monkeypatch.setattr(sys, "version_info", (3, 14, 0, "final", 0))
    for name in CODECS:
        assert isinstance(native.load(name), types.ModuleType)


def test_another_implementation_gets_no_lane(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOCKBROKER_PURE_PYTHON", raising=False)
    monkeypatch.setattr(sys, "implementation", types.SimpleNamespace(name="pypy", version=sys.version_info))
    assert not native.lanes_tested_here()
    assert all(native.load(name) is None for name in native.LANES)


def test_the_lanes_are_the_three_that_read_cpython_internals() -> None:
    assert native.LANES == {"_producelane", "_fastfetch", "_reading"}
    assert native.TESTED_PYTHONS == {(3, 11), (3, 12), (3, 13)}


def test_the_classifiers_and_the_ci_sessions_name_the_tested_pythons() -> None:
    root = Path(__file__).resolve().parent.parent
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    prefix = "Programming Language :: Python :: 3."
    claimed = {(3, int(c.removeprefix(prefix))) for c in project["classifiers"] if c.startswith(prefix)}
    assert claimed == native.TESTED_PYTHONS
    assert project["requires-python"] == f">={min(claimed)[0]}.{min(claimed)[1]}"
    other_pythons = re.search(r"^OTHER_PYTHONS = \[(.*?)\]", (root / "noxfile.py").read_text(), re.MULTILINE)
    assert other_pythons is not None
    others = {(3, int(minor)) for minor in re.findall(r'"3\.(\d+)"', other_pythons.group(1))}
    assert others | {min(claimed)} == native.TESTED_PYTHONS  # the lowest is `make test`'s own venv


def test_a_missing_extension_is_none() -> None:
    assert native.load("_no_such_extension") is None


def test_every_site_runs_python_with_pure_python_set() -> None:
    assert not any(sites_in_use(pure_python="1").values())


@needs_built
def test_every_site_takes_the_built_extensions_on_a_tested_python() -> None:
    if not native.lanes_tested_here():
        pytest.skip(f"Python {sys.version_info[:2]} is not one CI tests: the lanes stay off")
    in_use = sites_in_use()
    in_use.pop("folding crc32c")  # depends on the CPU
    assert all(in_use.values()), in_use


@needs_built
def test_every_lane_site_runs_python_on_an_untested_version() -> None:
    in_use = sites_in_use(prelude="sys.version_info = (3, 14, 0, 'final', 0)")
    assert not any(in_use[name] for name in native.LANES), in_use
    assert in_use["_speedups"] and in_use["_fastproduce"], in_use
