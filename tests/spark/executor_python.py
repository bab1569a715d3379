"""An executor Python without mockbroker, as on a cluster's nodes: a fresh venv whose site-packages point
(by symlinks) at this environment's third-party packages (pyspark, pyarrow, the codecs) but not at
mockbroker, so only what ``ship`` sends can make mockbroker importable on the executors."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

LEFT_OUT = ("mockbroker", "__editable__", "_mockbroker")


def make_executor_python(folder: Path) -> Path:
    """Create it under ``folder`` and return its interpreter; fail loudly if it can import mockbroker."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True)
    farm = folder / "site-packages"
    farm.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if entry.name.startswith(LEFT_OUT) or entry.suffix == ".pth":
            continue
        (farm / entry.name).symlink_to(entry)
    python = folder / "venv" / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "third_party.pth").write_text(f"{farm}\n")
    check = subprocess.run([str(python), "-c", "import pyarrow, pyspark, zstandard\nimport mockbroker"],
                           capture_output=True, text=True, cwd=folder)
    assert "No module named 'mockbroker'" in check.stderr, check.stderr  # has the deps, lacks mockbroker
    return python
