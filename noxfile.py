"""CI's runs beyond `make test` (issue 40): the pure-Python reference run and every other Python the package claims.

- ``pure``: the broker, client, scenario, control and plugin suites once more with ``MOCKBROKER_PURE_PYTHON=1``,
  on the project's own ``.venv`` (nothing installed): the Python path is the reference semantics.
- ``core-3.12``, ``core-3.13``: a fresh venv from that Python (pyenv's, found under ``$PYENV_ROOT/versions``
  when ``python3.X`` is not on PATH), the package installed with the ``[test-core]`` extra (its C extensions
  built there, or the session fails), then the core suites, the C-vs-Python comparisons among them: the lanes
  read CPython type internals, so they are tested on every version pyproject.toml's classifiers name
  (3.11 is ``make test``'s own run).

``.ci/run`` and ``make matrix`` run all three; ``.venv/bin/nox -s pure`` runs one.  pytest's exit code 5
("no tests ran") fails a session like any other non-zero code.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
PROJECT_PYTHON = str(ROOT / ".venv" / "bin" / "python")  # `make test`'s venv (Python 3.11)
OTHER_PYTHONS = ["3.12", "3.13"]  # with 3.11: pyproject.toml's classifiers, native.TESTED_PYTHONS

# Suites run with the C extensions off (the list: broker, client, scenario, control, plugin), but the 13
# `slow` ones, which `make test` runs: 1,275 pass and 73 skip (they compare C with Python) in ~2 min 50 s on
# 2 cores, the 2 min 40 s.
PURE_SUITES = ["tests/broker", "tests/clients", "tests/scenarios", "tests/control", "tests/test_pytest_plugin.py"]
# Suites run on each other Python: the codecs, the state and everything that serves requests, the
# C-vs-Python comparisons included (tests/broker/test_produce_lane.py, test_lane_objects.py, test_framing.py,
# tests/protocol/test_fast_*.py), and the Python clients' suites (their wheels exist for 3.12 and 3.13).
CORE_SUITES = ["tests/records", "tests/protocol", "tests/state", "tests/broker", "tests/control", "tests/scenarios",
               "tests/test_pytest_plugin.py", "tests/clients"]
# -q and -rfE: a dot per test and only failures and errors named at the end (pyproject's -ra lists every skip)
PYTEST = ["-m", "pytest", "-q", "--no-header", "-rfE", "-p", "no:cacheprovider", "-n", "2", "-m", "not slow"]

nox.options.sessions = ["pure", *(f"core-{version}" for version in OTHER_PYTHONS)]
nox.options.error_on_missing_interpreters = True  # a missing python3.12 fails the run, never skips it
nox.options.download_python = "never"  # pyenv's interpreters are on the machine: nothing downloaded
nox.options.default_venv_backend = "venv"  # the standard library's: no uv or virtualenv looked for


def _put_pyenv_pythons_on_path() -> None:
    """pyenv's shims run a version only where it is selected (``pyenv global``), so put each wanted version's
    own bin folder first on PATH, where nox looks for ``python3.X``."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for version in OTHER_PYTHONS:
        found = sorted(root.glob(f"versions/{version}.*/bin/python{version}"),
                       key=lambda path: [int(part) for part in path.parts[-3].split(".") if part.isdigit()])
        if found and shutil.which(f"python{version}") != str(found[-1]):
            os.environ["PATH"] = f"{found[-1].parent}{os.pathsep}{os.environ['PATH']}"


_put_pyenv_pythons_on_path()


@nox.session(venv_backend="none")
def pure(session: nox.Session) -> None:
    """The broker, client, scenario, control and plugin suites with the C extensions off."""
    session.run(PROJECT_PYTHON, *PYTEST, *PURE_SUITES, *session.posargs,
                env={"MOCKBROKER_PURE_PYTHON": "1"}, success_codes=[0])


@nox.session(python=OTHER_PYTHONS)
def core(session: nox.Session) -> None:
    """The core suites on a fresh venv of another Python, with the C extensions built and loaded."""
    session.install("-q", "--upgrade", "pip", "setuptools>=77")
    # editable (compat: a plain path in the .pth file): the tests import the working tree's mockbroker, so the
    # extensions must be built into it (one .so per Python, by its ABI tag) for this Python to find them
    session.install("-q", "--config-settings", "editable_mode=compat", "-e", ".[test-core]")
    session.run("python", ".ci/check_native.py", env={"MOCKBROKER_PURE_PYTHON": ""})  # as .ci/run does for 3.11
    session.run("python", *PYTEST, *CORE_SUITES, *session.posargs, env={"MOCKBROKER_PURE_PYTHON": ""},
                success_codes=[0])
