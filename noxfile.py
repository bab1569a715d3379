"""CI's runs beyond the two test tiers (issue 49): the pure-Python reference run and every other Python the package
claims, each cut to what can differ there.

Our Python code has no branch on the Python version; what differs between these runs and ``make test`` is the C
extensions (the codecs and the lanes: on or off, and built for another CPython, whose object layouts the lanes
read).  ``tools/measure_reruns.py`` measured it (coverage of the fast tier with and without them, a context a
test, on 2026-11-29): 30 lines of ``mockbroker`` run only with them off (the Python paths they stand in for:
in the C run the comparisons and the requests the lanes decline already run nearly all of those paths), and
373 lines run only with them on (the calls into them).  The lists below are the test files that cover each
set, plus, named by hand, what line coverage cannot see:

- ``pure`` (``MOCKBROKER_PURE_PYTHON=1``, on the project's own ``.venv``): ``PURE_TESTS``, the cover of the
  30 lines and the three Python clients' round trips, whose produce and fetch take the Python handlers end to
  end (in the C run those handlers only see what the lanes decline).  ``MOCKBROKER_PURE_PYTHON=1 make test``
  runs the whole fast tier that way.
- ``core-3.12``, ``core-3.13``: a fresh venv from that Python (pyenv's, found under ``$PYENV_ROOT/versions``
  when ``python3.X`` is not on PATH), the package installed with the ``[test-core]`` extra (its C extensions
  built there, or the session fails), then ``NATIVE_TESTS``: the cover of the 373 lines, every test of the C
  extensions themselves and their comparisons with the Python they stand in for (the C lines coverage
  cannot see), and the same three clients' round trips on that Python's event loop.

``.ci/run`` and ``make matrix`` run all three; ``.venv/bin/nox -s pure`` runs one.  pytest's exit code 5
("no tests ran") fails a session like any other non-zero code.  After changing the C extensions or the paths
around them, measure again and update the lists.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
PROJECT_PYTHON = str(ROOT / ".venv" / "bin" / "python")  # `make test`'s venv (Python 3.11)
OTHER_PYTHONS = ["3.12", "3.13"]  # with 3.11: pyproject.toml's classifiers, native.TESTED_PYTHONS

# real clients producing and consuming through the broker's produce and fetch paths
CLIENT_ROUND_TRIPS = ["tests/clients/test_confluent.py", "tests/clients/test_kafka_python.py",
                      "tests/clients/test_aiokafka.py"]
# tools/measure_reruns.py: the test files covering every line that runs only with the C extensions off
PURE_COVER = ["tests/protocol/test_bad_input.py", "tests/broker/test_faults.py", "tests/broker/test_hostile_records.py",
              "tests/broker/test_hostile_wide.py", "tests/protocol/test_roundtrip.py", "tests/records/test_check.py",
              "tests/clients/test_faults_confluent.py"]
PURE_TESTS = [*PURE_COVER, *CLIENT_ROUND_TRIPS]
# tools/measure_reruns.py: the test files covering every line that runs only with the C extensions on
NATIVE_COVER = ["tests/broker/test_produce_lane.py", "tests/protocol/test_fast_fetch_request.py",
                "tests/broker/test_lane_usual.py", "tests/protocol/test_fast_produce.py",
                "tests/clients/test_error_matrix_python.py", "tests/broker/test_kept_answers.py",
                "tests/protocol/test_bad_input.py", "tests/records/test_crc32c_fold.py",
                "tests/protocol/test_fast_fetch.py", "tests/broker/test_log_start_wakes_fetch.py",
                "tests/test_native_load.py", "tests/records/test_batch_envelope.py", "tests/broker/test_racks.py",
                "tests/fuzz/test_fuzz_regressions.py", "tests/clients/test_tls.py", "tests/fuzz/test_fuzz_smoke.py"]
# the tests of the C extensions themselves, and their comparisons with the Python they stand in for
NATIVE_OWN = ["tests/records/test_speedups.py", "tests/protocol/test_fetch_from_logs.py",
              "tests/broker/test_framing.py", "tests/broker/test_frame_arena.py", "tests/broker/test_direct_send.py",
              "tests/broker/test_api_versions_lane.py", "tests/broker/test_fetch_lane.py",
              "tests/broker/test_journal_start.py", "tests/broker/test_lane_lz4.py",
              "tests/broker/test_lane_objects.py", "tests/broker/test_long_poll.py",
              "tests/broker/test_start_imports.py", "tests/load/test_memory_cap.py", "tests/test_native_layout.py"]
NATIVE_TESTS = sorted({*NATIVE_COVER, *NATIVE_OWN, *CLIENT_ROUND_TRIPS})
# -q and -rfE: a dot per test and only failures and errors named at the end (pyproject's -ra lists every skip);
# --durations=30: where the time goes, printed (never asserted)
PYTEST = ["-m", "pytest", "-q", "--no-header", "-rfE", "-p", "no:cacheprovider", "-n", "4", "-m", "not slow",
          "--durations=30"]

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
    """The tests that take the Python paths the C extensions stand in for, with the C extensions off."""
    session.run(PROJECT_PYTHON, *PYTEST, *PURE_TESTS, *session.posargs,
                env={"MOCKBROKER_PURE_PYTHON": "1"}, success_codes=[0])


@nox.session(python=OTHER_PYTHONS)
def core(session: nox.Session) -> None:
    """The C extensions' tests on a fresh venv of another Python, with the C extensions built and loaded."""
    session.install("-q", "--upgrade", "pip", "setuptools>=77")
    # editable (compat: a plain path in the .pth file): the tests import the working tree's mockbroker, so the
    # extensions must be built into it (one .so per Python, by its ABI tag) for this Python to find them
    session.install("-q", "--config-settings", "editable_mode=compat", "-e", ".[test-core]")
    session.run("python", ".ci/check_native.py", env={"MOCKBROKER_PURE_PYTHON": ""})  # as .ci/run does for 3.11
    session.run("python", *PYTEST, *NATIVE_TESTS, *session.posargs, env={"MOCKBROKER_PURE_PYTHON": ""},
                success_codes=[0])
