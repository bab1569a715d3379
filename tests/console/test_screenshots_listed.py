"""docs/console.md shows a picture of each page the browser tests photograph, and each picture exists (they
are taken by those tests: `make screenshots` writes them into docs/img/console)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_screenshot_the_tests_take_is_in_the_docs_and_on_disk() -> None:
    taken = set()
    for source in sorted((ROOT / "tests" / "console").glob("test_*browser*.py")):
        taken.update(re.findall(r'\.screenshot\("([\w-]+)"', source.read_text()))
    page = (ROOT / "docs" / "console.md").read_text()
    shown = set(re.findall(r"\(img/console/([\w-]+)\.png\)", page))
    assert taken == shown and len(taken) >= 7, (sorted(taken), sorted(shown))
    for name in shown:
        assert (ROOT / "docs" / "img" / "console" / f"{name}.png").stat().st_size > 10_000, name
