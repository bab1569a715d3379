"""A long fuzzing session: every target in turn (one at a time), each for its share of the inputs.

    python -m tests.fuzz.session --out DIR [--runs TARGET=N ...]

Each target runs through ``tests.fuzz.run`` in a subprocess with the same RSS and time bounds as
any run; its libFuzzer log goes to ``DIR/TARGET.log``, its new inputs to ``DIR/work-TARGET`` and any
crashing input to ``DIR/artifacts-TARGET``.  ``DIR/summary.json`` is rewritten after every target:
inputs run, exec/s, peak RSS, exit code and crash files per target, and the total.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_RUNS = {"dispatch": 1_500_000, "frames": 1_500_000, "requests": 2_500_000, "batches": 2_500_000,
                "decompress": 2_500_000, "lane": 1_000_000}
_STAT = re.compile(r"^stat::(\w+):\s+(\d+)", re.M)


def run_target(target: str, runs: int, out: Path) -> dict[str, object]:
    work, artifacts = out / f"work-{target}", out / f"artifacts-{target}"
    started = time.time()
    with open(out / f"{target}.log", "w") as log:
        rc = subprocess.call([sys.executable, "-m", "tests.fuzz.run", target, "--runs", str(runs), "--work", str(work),
                              "--artifacts", str(artifacts)], stdout=log, stderr=subprocess.STDOUT)
    stats = {k: int(v) for k, v in _STAT.findall((out / f"{target}.log").read_text(errors="replace"))}
    return {"runs": stats.get("number_of_executed_units", 0), "exec_per_s": stats.get("average_exec_per_sec", 0),
            "peak_rss_mb": stats.get("peak_rss_mb", 0), "seconds": round(time.time() - started),
            "exit_code": rc, "crashes": sorted(p.name for p in artifacts.glob("*") if p.is_file())}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.session")
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", nargs="*", default=[], help=f"TARGET=N (default: {DEFAULT_RUNS})")
    opts = parser.parse_args()
    plan = dict(DEFAULT_RUNS)
    for item in opts.runs:
        name, _, n = item.partition("=")
        plan[name] = int(n)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, object] = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "targets": {}}
    for target, runs in plan.items():
        if runs <= 0:
            continue
        summary["targets"][target] = run_target(target, runs, out)  # type: ignore[index]
        summary["total_runs"] = sum(t["runs"] for t in summary["targets"].values())  # type: ignore[attr-defined]
        summary["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
        print(target, summary["targets"][target], flush=True)  # type: ignore[index]


if __name__ == "__main__":
    main()
