"""Run one fuzz target under atheris/libFuzzer with the bounds that make a hang or a leak a failure.

    python -m tests.fuzz.run TARGET [--runs N] [--seconds S] [--work DIR] [-- libFuzzer flags...]

The committed seeds (``tests/fuzz/corpus/TARGET`` and ``tests/fuzz/regressions/TARGET``) are read but
never written: new inputs go to ``--work`` (a temporary directory unless given), crashes to
``--artifacts`` (default: the work directory).  Every run has ``-rss_limit_mb`` (2048) and
``-timeout`` (10 s per input), so an unbounded allocation or a hang fails the run; the exit code is
libFuzzer's (0: no finding).
``python -m tests.fuzz.run TARGET --reproduce FILE...`` runs inputs once, without the fuzzer.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import atheris

CORPUS = Path(__file__).resolve().parent / "corpus"
REGRESSIONS = Path(__file__).resolve().parent / "regressions"  # inputs that found bugs (seeds too)
RSS_LIMIT_MB = 2048
TIMEOUT_S = 10
MAX_LEN = 65536


def _keeping_findings(fn: Callable[[bytes], None], artifacts: Path) -> Callable[[bytes], None]:
    """The target, saving an input that raises as ``finding-<sha1>`` before libFuzzer sees the exception
    (libFuzzer writes its own ``crash-`` file too, but a signal arriving while it dies can stop it)."""

    def target(data: bytes) -> None:
        try:
            fn(data)
        except BaseException:
            (artifacts / f"finding-{hashlib.sha1(data).hexdigest()}").write_bytes(data)
            raise

    return target


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    extra: list[str] = []
    if "--" in args:
        at = args.index("--")
        args, extra = args[:at], args[at + 1 :]
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.run", description=__doc__.split("\n")[0])
    parser.add_argument("target")
    parser.add_argument("--runs", type=int, default=None, help="inputs to run (libFuzzer -runs)")
    parser.add_argument("--seconds", type=int, default=None, help="time budget (libFuzzer -max_total_time)")
    parser.add_argument("--work", default=None, help="corpus directory new inputs are written to")
    parser.add_argument("--artifacts", default=None, help="directory crashing inputs are written to")
    parser.add_argument("--max-len", type=int, default=MAX_LEN)
    parser.add_argument("--reproduce", nargs="+", default=None, help="run these inputs once and exit")
    opts = parser.parse_args(args)

    with atheris.instrument_imports(include=["mockbroker"]):
        from tests.fuzz import targets

        targets.preload()
    targets.quiet_logs()
    if opts.target not in targets.TARGETS:
        parser.error(f"unknown target {opts.target!r} (targets: {', '.join(targets.TARGETS)})")
    fn = targets.TARGETS[opts.target]
    if opts.reproduce:
        for name in opts.reproduce:
            fn(Path(name).read_bytes())
            print(f"{name}: no finding")
        return 0
    work = Path(opts.work or tempfile.mkdtemp(prefix=f"fuzz-{opts.target}-"))
    work.mkdir(parents=True, exist_ok=True)
    artifacts = Path(opts.artifacts) if opts.artifacts else work
    artifacts.mkdir(parents=True, exist_ok=True)
    flags = [f"-rss_limit_mb={RSS_LIMIT_MB}", f"-timeout={TIMEOUT_S}", f"-max_len={opts.max_len}",
             f"-artifact_prefix={artifacts}/", "-print_final_stats=1"]
    if opts.runs is not None:
        flags.append(f"-runs={opts.runs}")
    if opts.seconds is not None:
        flags.append(f"-max_total_time={opts.seconds}")
    seeds = [CORPUS / opts.target, REGRESSIONS / opts.target]
    dirs = [str(work)] + [str(d) for d in seeds if d.is_dir()]
    atheris.Setup([sys.argv[0], *flags, *extra, *dirs], _keeping_findings(fn, artifacts))
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
