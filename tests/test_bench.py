"""The benchmark harness still runs and still writes what the README shows (no timings are asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import report
from bench.suite import CPU_ROWS, ROWS, Row, ratio

ROOT = Path(__file__).resolve().parents[1]


def test_ratio_is_mockbrokers_cost_over_the_peers() -> None:
    assert ratio(Row("t", "time", "s"), 2.0, 4.0) == 0.5
    assert ratio(Row("r", "rate", "MB/s", higher_is_better=True), 200.0, 100.0) == 0.5
    assert ratio(Row("t", "time", "s"), None, 1.0) is None


def test_report_rewrites_only_the_marked_readme_section(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{report.START}\nold table\n{report.END}\noutro\n")
    doc = {"date": "2026-11-23", "machine": "test box", "repeat": 5, "brokers": ["mockbroker", "Tansu"],
           "not_measured": {}, "results": {"c100k_produce": {"mockbroker": 0.08, "Tansu": 0.1}}}
    report.write_readme(doc, readme)
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("outro\n") and "old table" not in text
    assert "| vs Tansu |" in text and "**0.80**" in text
    assert len([line for line in text.splitlines() if line.startswith("| ")]) == 1 + len(ROWS)
    chart = tmp_path / "chart.png"
    report.write_chart(doc, chart)
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_committed_results_cover_every_row() -> None:
    doc = json.loads((ROOT / "bench" / "results.json").read_text())
    assert {row.key for row in ROWS + CPU_ROWS} <= set(doc["results"]), "rerun make bench after adding a row"
    assert report.markdown(doc) in (ROOT / "README.md").read_text()


@pytest.mark.slow
@pytest.mark.clients
def test_quick_run_measures_every_row_for_mockbroker() -> None:
    out = subprocess.run([sys.executable, "-m", "bench.suite", "--quick", "--brokers", "mockbroker"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    table = {line[:58].strip(): line[58:].split() for line in out.stdout.splitlines()[2:] if line.strip()}
    for row in ROWS + CPU_ROWS:
        unit, value = table[row.label][:2]
        assert unit == row.unit and value != "-", (row.label, table[row.label])
