"""A short bounded run of every fuzz target (CI), and checks that the harness itself can fail.

Each target runs under libFuzzer in a subprocess (``python -m tests.fuzz.run``) from its committed
seeds for a few thousand inputs with the session's bounds (``-rss_limit_mb``, ``-timeout``); the
test checks libFuzzer's exit code and its final stats, so a crash, hang or allocation over the limit
fails it.  The long runs are ``python -m tests.fuzz.session`` (results in tests/fuzz/RESULTS.md).
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz import record_targets, targets

pytest.importorskip("atheris", reason="atheris is only built for x86_64 Linux (pip install '.[test]')")

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "corpus"
SMOKE_RUNS = {"frames": 8_000, "requests": 20_000, "dispatch": 6_000, "batches": 20_000, "decompress": 20_000,
              "lane": 6_000}


@pytest.mark.slow
@pytest.mark.parametrize("target", list(targets.TARGETS))
def test_target_runs_clean_for_a_few_thousand_inputs(target: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "tests.fuzz.run", target, "--runs", str(SMOKE_RUNS[target]),
                           "--seconds", "60", "--work", str(tmp_path / "work"), "--artifacts", str(tmp_path / "out")],
                          cwd=ROOT, capture_output=True, text=True, timeout=180)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    stats = dict(re.findall(r"^stat::(\w+):\s+(\d+)", log, re.M))
    assert int(stats["number_of_executed_units"]) >= SMOKE_RUNS[target], log[-2000:]
    assert not list((tmp_path / "out").glob("crash-*")), log[-2000:]
    assert "INITED cov:" in log  # the seeds were loaded and coverage is being measured


def test_every_target_has_committed_seeds_that_pass() -> None:
    from mockbroker.handlers import produce_lane

    for target, fn in targets.TARGETS.items():
        if target == "lane" and not produce_lane.available():
            continue  # it compares the C lane with the handler: nothing to compare without the extension
        seeds = sorted((CORPUS / target).iterdir())
        assert len(seeds) >= 20, target
        for seed in seeds:
            fn(seed.read_bytes())


def test_the_committed_corpus_is_what_the_builder_makes() -> None:
    from tests.fuzz.build_corpus import seeds

    for target, items in seeds().items():
        committed = {p.name for p in (CORPUS / target).iterdir()}
        built = {hashlib.sha1(item).hexdigest() for item in items}
        if target in ("batches", "decompress", "lane"):  # compressor output may differ between library versions
            assert len(built) == len(committed), target
        else:
            assert built == committed, target


# -- the oracles catch what they are there to catch ---------------------------------------------

def test_decompress_target_flags_output_above_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(record_targets, "decompress", lambda codec, data, cap: b"x" * (cap + 1))
    with pytest.raises(targets.Finding, match="above the cap"):
        targets.fuzz_decompress(b"\x01\x02" + b"anything")


def test_frames_target_flags_a_reader_that_loses_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    data = bytes([targets.FRAME_LIMITS.index(4096), 0]) + b"\x00\x00\x00\x03abc"
    targets.fuzz_frames(data)
    monkeypatch.setattr(targets, "_reference_frames", lambda stream, limit: ([b"abc", b"abc"], False))
    with pytest.raises(targets.Finding, match="frames differ"):
        targets.fuzz_frames(data)


def test_dispatch_target_lets_a_handler_bug_escape(monkeypatch: pytest.MonkeyPatch) -> None:
    from mockbroker.handlers.registry import HANDLERS, Handler, handler_for

    def broken(ctx: object, req: object) -> object:
        raise ZeroDivisionError("handler bug")

    metadata = handler_for(3)
    assert metadata is not None
    monkeypatch.setitem(HANDLERS, 3, Handler(3, metadata.min_version, metadata.max_version, broken))
    frame = next(p.read_bytes() for p in sorted(CORPUS.joinpath("dispatch").iterdir())
                 if p.read_bytes()[0] == 0 and p.read_bytes()[1:3] == b"\x00\x03")
    with pytest.raises(ZeroDivisionError):
        targets.fuzz_dispatch(frame)


def test_checker_target_flags_c_and_python_disagreeing(monkeypatch: pytest.MonkeyPatch) -> None:
    from mockbroker.records import check

    if check._records_ok is None:
        pytest.skip("the C extension is not built here: there is no second checker to compare")
    from mockbroker.records import HEADER_SIZE, build_batch

    batch = build_batch([(b"k", b"v"), (None, b"w")], base_timestamp=1_700_000_000_000)
    seed = b"\x02" + bytes([2, 4]) + batch[27:35] + batch[HEADER_SIZE:]  # two clean records
    targets.fuzz_batches(seed)
    monkeypatch.setattr(check, "_records_ok", lambda *args: False)  # C refuses what Python accepts
    with pytest.raises(targets.Finding, match="C records_ok"):
        targets.fuzz_batches(seed)


def test_lane_target_flags_the_lane_and_the_handler_disagreeing(monkeypatch: pytest.MonkeyPatch) -> None:
    from mockbroker.handlers import produce_lane
    from mockbroker.server import dispatch
    from tests.broker import test_produce_lane

    if not produce_lane.available():
        pytest.skip("the C extension is not built here: there is no lane to compare with the handler")
    seed = next(p.read_bytes() for p in sorted(CORPUS.joinpath("lane").iterdir()) if p.read_bytes()[1] == 0)
    targets.fuzz_lane(seed)
    real = test_produce_lane._outcome

    def one_byte_off(broker: object, frame: bytes, borrow: str = "") -> object:
        got = real(broker, frame, borrow)
        if dispatch._LANE and isinstance(got, bytes):
            return got[:-1] + bytes([got[-1] ^ 1])  # the lane's answer, one bit changed
        return got

    monkeypatch.setattr(test_produce_lane, "_outcome", one_byte_off)
    with pytest.raises(targets.Finding, match="the lane answered"):
        targets.fuzz_lane(seed)


def test_the_runner_keeps_an_input_that_raises(tmp_path: Path) -> None:
    from tests.fuzz.run import _keeping_findings

    def target(data: bytes) -> None:
        if data == b"boom":
            raise RuntimeError("finding")

    wrapped = _keeping_findings(target, tmp_path)
    wrapped(b"fine")
    with pytest.raises(RuntimeError):
        wrapped(b"boom")
    assert [p.read_bytes() for p in tmp_path.iterdir()] == [b"boom"]
