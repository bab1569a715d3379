"""The report of a deliberately failing test, opened from disk in a real browser (chromium via Playwright): it
shows the values the test produced (a hostile one as text), the group's offsets and the fault rule that hit,
runs nothing a client wrote and fetches nothing from anywhere."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.console.browser import Page
from tests.test_pytest_report import INNER, SCENARIO

pytestmark = pytest.mark.clients


def section_text(web: Page, name: str) -> str:
    return str(web.page.inner_text(f"section#{name}"))


def test_a_failing_tests_report_opened_from_disk(web: Page, tmp_path: Path) -> None:
    scenario = tmp_path / "report-check.yaml"
    scenario.write_text(SCENARIO)
    (tmp_path / "test_inner.py").write_text(f"SCENARIO = {str(scenario)!r}\n" + INNER)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--mockbroker-report=reports",
                           "test_inner.py", "-k", "test_fails"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 1, done.stdout[-3000:]  # the inner test fails on purpose
    report = tmp_path / "reports" / "test_inner.py__test_fails.html"
    assert f"report: {report}" in done.stdout
    web.page.goto(report.as_uri())
    assert "failed" in web.page.inner_text("body header, body main > *:first-child")
    topics = section_text(web, "topics")
    assert "plain text" in topics and "<script>alert(1)</script>" in topics
    faults = section_text(web, "faults")
    assert "one refusal" in faults and "NOT_LEADER_OR_FOLLOWER" in faults and "1 / 1" in faults
    groups = section_text(web, "groups")
    assert "billing" in groups
    journal = section_text(web, "journal")
    assert "Produce" in journal and "NOT_LEADER_OR_FOLLOWER" in journal
    assert web.page.locator("section#journal svg").count() == 1  # the chart, drawn in the file itself
    web.screenshot("report", tmp_path)
    # in-page links work from disk: the nav's journal link scrolls to the journal
    web.page.locator("nav a[href='#journal']").click()
    assert web.page.evaluate("location.hash") == "#journal"
    assert web.page.evaluate("document.querySelector('section#journal').getBoundingClientRect().top") < 200
    web.clean()
