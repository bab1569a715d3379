"""Which tests take another way through mockbroker when the C extensions are off: the measurement behind
noxfile.py's rerun lists (issue 49).

CI reruns tests on the pure-Python path (``MOCKBROKER_PURE_PYTHON=1``) and on Python 3.12 and 3.13.  Our
Python code has no branch on the Python version (only ``mockbroker.native`` loads the C extensions or not,
by version), so what differs between those runs and ``make test`` is the C extensions: the codecs and the
lanes.  This tool runs the given tests twice under coverage, with the C extensions and without, one coverage
context a test.  The lines of ``mockbroker`` that run only without them are the Python paths the C
extensions stand in for (the reader, the produce and fetch handlers, the record checks); the lines that run
only with them are the calls into the C extensions.  For each set it picks test files greedily, the one
covering most of what is left first, until the whole set is covered: the pure-Python rerun needs the first
list, the runs on the other Pythons the second (what differs there is the C extensions, built for each
Python; the C-vs-Python comparisons are among them).  Nearly every test that opens a socket takes another
way through the server's reader without the C extensions, so "every test whose way differs" would be nearly
the whole suite again: the cover is what is worth running twice.  Run it after changing the C extensions or
the paths around them, and update ``PURE_TESTS`` and ``NATIVE_TESTS`` in noxfile.py from what it prints::

    .venv/bin/pip install pytest-cov
    .venv/bin/python tools/measure_reruns.py tests/broker tests/clients ...   # ~10 min on 2 cores

A line may also run in one run alone by timing (a retry taken in one run and not the other): such lines
add a test file now and then; the lists stay reviewed by hand.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_under_coverage(tests: list[str], data_file: Path, pure: bool, workers: str) -> None:
    env = {**os.environ, "COVERAGE_FILE": str(data_file), "MOCKBROKER_PURE_PYTHON": "1" if pure else ""}
    command = [sys.executable, "-m", "pytest", "-q", "--no-header", "-p", "no:cacheprovider", "-n", workers,
               "-m", "not slow", "--cov=mockbroker", "--cov-context=test", "--cov-report=", *tests]
    print("running:", " ".join(command), "(pure)" if pure else "(C extensions)", flush=True)
    subprocess.run(command, cwd=ROOT, env=env, check=False, stdout=subprocess.DEVNULL)


def lines_by_test(data_file: Path) -> dict[str, dict[str, frozenset[int]]]:
    """test id -> source file -> lines covered (setup, call and teardown together)."""
    from coverage import CoverageData

    data = CoverageData(basename=str(data_file))
    data.read()
    found: dict[str, dict[str, set[int]]] = collections.defaultdict(lambda: collections.defaultdict(set))
    for source in data.measured_files():
        relative = os.path.relpath(source, ROOT)
        for line, contexts in data.contexts_by_lineno(source).items():
            for context in contexts:
                if context:
                    found[context.split("|")[0]][relative].add(line)
    return {test: {source: frozenset(lines) for source, lines in files.items()} for test, files in found.items()}


def greedy_cover(wanted: frozenset[tuple[str, int]], by_file: dict[str, set[tuple[str, int]]]) -> list[str]:
    """Test files, each covering the most of ``wanted`` still uncovered, until nothing more can be covered."""
    left, chosen = set(wanted), []
    while left:
        best = max(by_file, key=lambda f: (len(by_file[f] & left), -len(by_file[f])))
        gain = by_file[best] & left
        if not gain:
            break
        chosen.append(f"{best}  (+{len(gain)} lines)")
        left -= gain
    return chosen


def lines_of_files(by_test: dict[str, dict[str, frozenset[int]]]) -> dict[str, set[tuple[str, int]]]:
    """test file -> (source, line) pairs its tests covered."""
    found: dict[str, set[tuple[str, int]]] = collections.defaultdict(set)
    for test, files in by_test.items():
        for source, lines in files.items():
            found[test.split("::")[0]].update((source, line) for line in lines)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests", nargs="+", help="test files or folders")
    parser.add_argument("-n", default="4", help="pytest-xdist workers (default 4)")
    parser.add_argument("--data", type=Path, help="keep the two coverage files here (and reuse them if there)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.data or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        native, pure = folder / "native", folder / "pure"
        if not native.exists():
            run_under_coverage(args.tests, native, pure=False, workers=args.n)
        if not pure.exists():
            run_under_coverage(args.tests, pure, pure=True, workers=args.n)
        with_c, without_c = lines_by_test(native), lines_by_test(pure)
    files_c, files_pure = lines_of_files(with_c), lines_of_files(without_c)
    all_c = frozenset().union(*files_c.values())
    all_pure = frozenset().union(*files_pure.values())
    pure_only, c_only = all_pure - all_c, all_c - all_pure
    print(f"\n{len(with_c)} tests measured with the C extensions, {len(without_c)} without")
    print(f"{len(pure_only)} lines of mockbroker run only without the C extensions (the Python paths they stand in"
          f" for), in {len({s for s, _ in pure_only})} files; {len(c_only)} lines run only with them (the calls"
          f" into them), in {len({s for s, _ in c_only})} files")
    print("\nthe test files that cover every line run only without the C extensions (the pure-Python rerun):")
    for line in greedy_cover(pure_only, files_pure):
        print("  " + line)
    print("\nthe test files that cover every line run only with the C extensions (the reruns on other Pythons):")
    for line in greedy_cover(c_only, files_c):
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
