"""The benchmark harness still runs and still writes what the README shows (no timings are asserted)."""

from __future__ import annotations

import json
import struct
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


def test_cpu_between_readings_is_precise_unless_ended_threads_took_ticks_away() -> None:
    from bench.peers import TICKS_PER_SECOND, cpu_ms_between

    tick = 1 / TICKS_PER_SECOND
    # the threads' nanosecond sum, not the coarse ticks, while they agree within two ticks
    assert cpu_ms_between((1.0, 1.0), (1.0123, 1.0 + tick)) == pytest.approx(12.3)
    # a thread that ended took its time out of the live threads' sum: the ticks show it
    assert cpu_ms_between((1.0, 1.0), (1.001, 1.0 + 10 * tick)) == pytest.approx(10 * tick * 1000)


def test_cpu_rows_follow_the_phases_a_load_marks() -> None:
    from bench.peers import Peer
    from bench.suite import Recorder, _with_cpu

    class Clock(Peer):
        readings = iter([(0.0, 0.0), (0.010, 0.01), (0.030, 0.03), (0.035, 0.03), (0.036, 0.03)])

        def cpu_reading(self) -> tuple[float, float]:
            return next(self.readings)

    def load(peer: Peer) -> tuple[float, float]:
        for phase in ("produce", "fill", "consume"):
            peer.phase_done(phase)
        return 1.0, 2.0

    rec = Recorder()
    peer = Clock("mockbroker", "127.0.0.1:1", None, lambda topic, partitions: None)  # type: ignore[arg-type]
    assert _with_cpu(rec, "mockbroker", "cpu_c1m", load)(peer) == (1.0, 2.0)
    got = {key: by_broker["mockbroker"] for key, by_broker in rec.samples.items()}
    assert got == {"cpu_c1m_produce": [pytest.approx(10.0)], "cpu_c1m_fill": [pytest.approx(20.0)],
                   "cpu_c1m_consume": [pytest.approx(5.0)]}  # "cpu_c1m" itself is not a row any more
    assert peer.on_phase is None


def test_the_setup_phase_counts_in_no_cpu_row() -> None:
    from bench.peers import Peer
    from bench.suite import CPU_KEYS, Recorder, _with_cpu

    class Clock(Peer):
        readings = iter([(0.0, 0.0), (0.004, 0.0), (0.010, 0.01), (0.011, 0.01)])

        def cpu_reading(self) -> tuple[float, float]:
            return next(self.readings)

    def load(peer: Peer) -> None:
        for phase in ("setup", "produce"):
            peer.phase_done(phase)

    rec = Recorder()
    peer = Clock("mockbroker", "127.0.0.1:1", None, lambda topic, partitions: None)  # type: ignore[arg-type]
    _with_cpu(rec, "mockbroker", "cpu_lat", load)(peer)
    assert "cpu_lat" in CPU_KEYS
    # the topics took 4 ms: the produce phase is the 6 after them, the whole load the 7 after them
    assert rec.samples == {"cpu_lat": {"mockbroker": [pytest.approx(7.0)]}}


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


def test_ratios_below_a_hundredth_keep_two_significant_digits() -> None:
    doc = {"date": "2026-11-27", "machine": "test box", "repeat": 1, "brokers": ["mockbroker", "Tansu"],
           "not_measured": {}, "results": {"follow_p50": {"mockbroker": 0.13, "Tansu": 125.0},
                                           "lat_p50": {"mockbroker": 0.06, "Tansu": 0.1}}}
    text = report.markdown(doc)
    assert "| **0.001** |" in text and "| **0.60** |" in text


def test_committed_results_cover_every_row() -> None:
    doc = json.loads((ROOT / "bench" / "results.json").read_text())
    assert {row.key for row in ROWS + CPU_ROWS} <= set(doc["results"]), "rerun make bench after adding a row"
    assert report.markdown(doc) in (ROOT / "docs" / "benchmarks.md").read_text()


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


def test_paired_quartiles_pair_samples_of_the_same_repetition() -> None:
    time_row, rate_row = Row("t", "time", "s"), Row("r", "rate", "MB/s", higher_is_better=True)
    ours, theirs = [1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 1.0, 2.0, 2.0, 2.5]  # pairs: 1, 2, 1.5, 2, 2
    assert report.paired_quartiles(time_row, ours, theirs) == (1.5, 2.0)
    assert report.paired_quartiles(rate_row, ours, theirs) == (0.5, 2 / 3)
    assert report.paired_quartiles(time_row, ours, theirs[:4]) is None  # a failed sample breaks the pairing
    assert report.paired_quartiles(time_row, ours[:3], theirs[:3]) is None


def test_the_table_shows_the_paired_spread_next_to_the_ratio() -> None:
    doc = {"date": "2026-11-24", "machine": "test box", "repeat": 5, "brokers": ["mockbroker", "Tansu"],
           "not_measured": {}, "results": {"c100k_produce": {"mockbroker": 1.0, "Tansu": 1.0}},
           "samples": {"c100k_produce": {"mockbroker": [1.0, 0.9, 1.1, 0.8, 1.2], "Tansu": [1.0] * 5}}}
    assert "| **1.00** (0.90-1.10, tie) |" in report.markdown(doc)


def test_the_sign_test_tells_a_difference_only_from_lopsided_pairs() -> None:
    time_row, rate_row = Row("t", "time", "s"), Row("r", "rate", "MB/s", higher_is_better=True)
    ours, theirs = [1.0] * 9, [1.1] * 9
    assert report.paired_verdict(time_row, ours, theirs) == "faster"  # 9 of 9: p = 2/512
    assert report.paired_verdict(rate_row, ours, theirs) == "slower"  # higher is better: the same pairs lost
    # 8 of 9: p = 2 * 10/512 = 0.039, a difference; 7 of 9: p = 2 * 46/512 = 0.18, a tie
    assert report.paired_verdict(time_row, ours, [1.1] * 8 + [0.9]) == "faster"
    assert report.paired_verdict(time_row, ours, [1.1] * 7 + [0.9] * 2) == "tie"
    # pairs exactly even say nothing: 6 won, 3 even -> 6 of 6, p = 2/64 = 0.031
    assert report.paired_verdict(time_row, ours, [1.1] * 6 + [1.0] * 3) == "faster"
    assert report.paired_verdict(time_row, ours, [1.0] * 9) == "tie"
    assert report.paired_verdict(time_row, ours[:3], theirs[:3]) is None  # too few pairs, as paired_quartiles
    assert report.paired_verdict(time_row, ours, theirs[:8]) is None  # a failed sample broke the pairing


def test_replay_records_a_real_client_and_replays_its_requests(tmp_path: Path) -> None:
    """bench.replay: a confluent-kafka load recorded through the proxy, then replayed to this tree's
    broker, request by request (Produce answers are checked for errors) and pipelined."""
    recording = tmp_path / "tiny.replay"
    subprocess.run([sys.executable, "-m", "bench.replay", "record", "tiny", str(recording)], cwd=ROOT, check=True,
                   timeout=120, capture_output=True)
    from bench.replay import load, replay, start_tree

    rec = load(str(recording))
    assert ("tiny", 2) in rec.topics and any(struct.unpack_from(">h", f, 4)[0] == 0 for _, f in rec.frames)
    for window in (1, 4):
        peer = start_tree(str(ROOT))
        try:
            measured = replay(rec, peer, window)
        finally:
            peer.stop()
        assert measured["all"] > 0
        assert ("Produce" in measured) == (window == 1)
