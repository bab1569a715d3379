"""The C extensions under AddressSanitizer and UndefinedBehaviorSanitizer (slow; part of make test and CI).

A copy of the package's sources is built with ``-fsanitize=address,undefined`` in a temporary
directory.  There, with the sanitizers' runtime preloaded, run the tests that drive the C code
hardest (the produce lane against the Python handler, the C reader's scripted sessions, frame
arenas, the record checks against their Python twins, lz4 through liblz4, the C Produce codec) and
every committed fuzz input of every target.  A report (a read or write out of bounds, a use after
free, undefined behaviour) aborts that process, so the test fails with the report in its message.
Python objects come from malloc there (PYTHONMALLOC=malloc), so ASan knows the bounds of the small
bytes objects the C code reads too.  Leak checking is off: CPython keeps memory for the life of the
process on purpose.  Reports go to files (pytest's capture would swallow them when the process
aborts).  Tests that measure RSS are not among them (ASan's shadow memory and quarantine make RSS
meaningless).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EXTENSIONS = ("mockbroker/native/_speedups", "mockbroker/native/_fastproduce", "mockbroker/native/_fastfetch",
              "mockbroker/native/_producelane", "mockbroker/native/_reading")
C_TESTS = ("tests/broker/test_produce_lane.py", "tests/broker/test_api_versions_lane.py",
           "tests/broker/test_kept_answers.py", "tests/broker/test_lane_lz4.py", "tests/broker/test_framing.py",
           "tests/broker/test_frame_arena.py", "tests/broker/test_lane_objects.py", "tests/records",
           "tests/protocol/test_fast_produce.py", "tests/protocol/test_fast_fetch.py",
           "tests/protocol/test_fast_fetch_request.py", "tests/protocol/test_fetch_from_logs.py",
           "tests/broker/test_long_poll.py", "tests/broker/test_journal_start.py", "tests/broker/test_fetch_lane.py")
FLAGS = "-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -g"


def _runtime() -> str | None:
    """LD_PRELOAD for gcc's sanitizer runtimes, or None where they are not installed."""
    if platform.system() != "Linux" or shutil.which("gcc") is None:
        return None
    libs = []
    for name in ("libasan.so", "libubsan.so"):
        path = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip()
        if not os.path.isabs(path) or not os.path.exists(path):
            return None
        libs.append(path)
    return " ".join(libs)


@pytest.fixture(scope="module")
def sanitized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """(a copy of the sources with the extensions built under the sanitizers, the environment to run it in)."""
    preload = _runtime()
    if preload is None:
        pytest.skip("gcc's libasan/libubsan are not installed here (Debian: gcc brings them)")
    copy = tmp_path_factory.mktemp("sanitized")
    ignore = shutil.ignore_patterns("*.so", "__pycache__", "build", ".hypothesis")
    for name in ("mockbroker", "tests"):
        shutil.copytree(ROOT / name, copy / name, ignore=ignore)
    shutil.copy2(ROOT / "setup.py", copy / "setup.py")
    env = {k: v for k, v in os.environ.items() if k not in ("MOCKBROKER_PURE_PYTHON", "LD_PRELOAD")}
    # setup.py alone: build_ext needs only its ext_modules, and the venv's own setuptools (older than the
    # isolated one pip builds with) may not read pyproject.toml's metadata; pytest's settings come after
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=copy, capture_output=True,
                           text=True, env=dict(env, CFLAGS=FLAGS, LDFLAGS="-fsanitize=address,undefined"), timeout=600)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    shutil.copy2(ROOT / "pyproject.toml", copy / "pyproject.toml")
    missing = [ext for ext in EXTENSIONS if not list(copy.glob(f"{ext}.*.so"))]
    assert not missing, f"not built under the sanitizers: {missing}\n{build.stderr[-3000:]}"
    # PYTHONMALLOC=malloc: every Python object comes from malloc, so ASan knows the bounds of the bytes
    # objects the C code reads (pymalloc's pools would hide an overrun of a small one)
    reports = copy / "sanitizer-reports"
    reports.mkdir()
    env.update(LD_PRELOAD=preload, PYTHONPATH=str(copy), PYTHONMALLOC="malloc",
               ASAN_OPTIONS=f"detect_leaks=0:halt_on_error=1:log_path={reports}/asan",
               UBSAN_OPTIONS=f"halt_on_error=1:print_stacktrace=1:log_path={reports}/ubsan")
    return copy, env


def _run(args: list[str], copy: Path, env: dict[str, str], timeout: int = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)


def _clean(proc: subprocess.CompletedProcess[str], copy: Path) -> None:
    files = sorted((copy / "sanitizer-reports").iterdir())
    reports = "".join(p.read_text(errors="replace") for p in files)
    for p in files:  # each test answers for its own run
        p.unlink()
    assert not reports, reports[:8000]
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]


def test_the_sanitized_extensions_are_the_ones_imported_and_the_runtime_catches_an_overflow(
        sanitized: tuple[Path, dict[str, str]]) -> None:
    copy, env = sanitized
    modules = [ext.replace("/", ".") for ext in EXTENSIONS]
    where = _run(["-c", f"import importlib; print([importlib.import_module(m).__file__ for m in {modules}]);"
                        "print(open('/proc/self/maps').read().count('libasan'))"], copy, env)
    assert where.returncode == 0, where.stderr[-3000:]
    files, maps = where.stdout.splitlines()[-2:]
    assert files.count(str(copy)) == len(EXTENSIONS), files
    assert int(maps) > 0
    # the check below is only worth something if the runtime reports: a heap overflow through memmove
    to_stderr = dict(env, ASAN_OPTIONS="detect_leaks=0:halt_on_error=1")  # not into the reports the others read
    overflow = _run(["-c", "import ctypes; dst = bytearray(1000); src = ctypes.create_string_buffer(4096);"
                           "ctypes.memmove((ctypes.c_char * 1000).from_buffer(dst), src, 1100)"], copy, to_stderr)
    assert overflow.returncode != 0 and "heap-buffer-overflow" in overflow.stderr, overflow.stderr[-2000:]


def test_the_c_tests_run_clean_under_the_sanitizers(sanitized: tuple[Path, dict[str, str]]) -> None:
    copy, env = sanitized
    proc = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow", *C_TESTS], copy, env)
    _clean(proc, copy)
    assert " passed" in proc.stdout.splitlines()[-1], proc.stdout[-2000:]


def test_every_committed_fuzz_input_runs_clean_under_the_sanitizers(sanitized: tuple[Path, dict[str, str]]) -> None:
    pytest.importorskip("atheris", reason="atheris is only built for x86_64 Linux (pip install '.[test]')")
    copy, env = sanitized
    corpus = copy / "tests" / "fuzz"
    for target in sorted(p.name for p in (corpus / "corpus").iterdir()):
        inputs = sorted(str(p) for d in ("corpus", "regressions") for p in (corpus / d / target).glob("*"))
        proc = _run(["-m", "tests.fuzz.run", target, "--reproduce", *inputs], copy, env)
        _clean(proc, copy)
        assert proc.stdout.count("no finding") == len(inputs), (target, proc.stdout[-2000:])
