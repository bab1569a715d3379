"""examples/streaming_during_faults.py runs as shipped: a Structured Streaming query reads every record
exactly once while its fault scenario plays."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.clients, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def test_streaming_example_passes(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "streaming_during_faults.py")],
                          capture_output=True, text=True, timeout=400, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "spark saw 12,000 clicks, 12,000 distinct, of 12,000 produced" in done.stdout
    assert "scenario streaming-during-faults: PASSED" in done.stdout
