"""The committed codec is what the generator makes from the specs, and the generator is stable."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT.parent / "shared" / "kafka-spec"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_protocol", ROOT / "tools" / "gen_protocol.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gen_protocol"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not (SPECS / "kafka-4.3").is_dir(), reason="../shared/kafka-spec is not beside the repo")
def test_generation_is_deterministic_and_matches_committed_output() -> None:
    gen = _generator()
    first = gen.generate(SPECS)
    second = gen.generate(SPECS)
    assert first == second
    out = ROOT / "mockbroker" / "protocol"
    for rel, text in first.items():
        assert (out / rel).read_text() == text, f"{rel} is stale: run `make generate`"


@pytest.mark.skipif(not (SPECS / "kafka-4.3").is_dir(), reason="../shared/kafka-spec is not beside the repo")
def test_newest_spec_wins_and_old_versions_come_from_the_snapshot() -> None:
    text = (ROOT / "mockbroker" / "protocol" / "generated" / "produce_request.py").read_text()
    assert "v0-2 kafka-4.0-snapshot, v3-13 kafka-4.3" in text
    fetch = (ROOT / "mockbroker" / "protocol" / "generated" / "fetch_request.py").read_text()
    assert "v0-3 kafka-4.0-snapshot, v4-18 kafka-4.3" in fetch
