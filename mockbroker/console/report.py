"""(Stand-in until the report helper's module lands.)"""

from __future__ import annotations

from typing import Any


def report_html(cluster: Any, title: str, outcome: str | None = None, detail: str = "") -> str:
    return "<!doctype html><title>report</title>"
