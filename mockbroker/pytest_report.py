"""The pytest plugin's HTML reports: one file per cluster a test started, written when the test ends.

    pytest --mockbroker-report=reports/                  # a report for each test that used a cluster
    pytest --mockbroker-report=reports/ --mockbroker-report-when=on-failure   # ... for the failing ones only

    @pytest.mark.mockbroker(report="always")   # this test's report even when it passes ("on-failure": when it fails)
    def test_orders(mock_cluster): ...

The folder comes from ``--mockbroker-report=DIR``, else the ini option ``mockbroker_report_dir``; a test whose
marker sets ``report=`` while neither is given writes to ``mockbroker-reports/`` under pytest's rootdir.  When:
the marker's ``report=`` wins, then ``--mockbroker-report-when`` (default ``always``); ``report=None`` on a
marker turns a test's reports off.  Without a folder and without the marker nothing is written.

A report is ``DIR/<test id>.html`` (the node id made a file name: ``test_file.py__test_name[param].html``), the
test's second cluster ``...-2.html``, and so on.  Each is written from the cluster's state when the test ends,
before the cluster stops (a scenario's cluster, stopped when its ``with`` block ends, is read as it was left);
it shows the test's outcome and, for a failure, the failure's text.  A failing test's output names its reports
(the "Captured mockbroker teardown" part under the failure).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster

WHEN = ("on-failure", "always")
DEFAULT_DIR = "mockbroker-reports"
DETAIL_CHARS = 4000  # of the failure's text, in the report's header
NAME_CHARS = 150  # of a report file's name, before "-N.html"
SECTION = "mockbroker"  # item.add_report_section's key: the output's "Captured mockbroker teardown"

_PHASES = pytest.StashKey[dict[str, pytest.TestReport]]()
_COUNT = pytest.StashKey[int]()


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("mockbroker", "mock Kafka clusters (mockbroker)")
    group.addoption("--mockbroker-report", metavar="DIR", default=None,
                    help="write an HTML report (topics, records, groups, journal, faults) of each cluster a test "
                         "used to DIR/<test id>.html: for every test, or only failing ones with "
                         "--mockbroker-report-when=on-failure")
    group.addoption("--mockbroker-report-when", choices=WHEN, default=None,
                    help="which tests get a report: always (the default) or on-failure")
    parser.addini("mockbroker_report_dir", "the folder of mockbroker's HTML reports (as --mockbroker-report)",
                  default=None)


def checked_when(value: object) -> str | None:
    """A ``report=`` value: "on-failure", "always" or None; anything else is a usage error naming them."""
    if value is None or value in WHEN:
        return None if value is None else str(value)
    raise pytest.UsageError(f"mockbroker marker: report={value!r} is not one of 'on-failure', 'always', None")


@dataclass(frozen=True)
class Plan:
    """Where and when a test's reports are written (``folder`` None: none are)."""

    folder: Path | None
    when: str = "always"


def plan(request: pytest.FixtureRequest, options: dict[str, Any] | None = None) -> Plan:
    """The test's plan; ``options`` (a cluster's own, when it was given ``report=``) win over the markers."""
    config = request.config
    given = config.getoption("mockbroker_report") or config.getini("mockbroker_report_dir") or None
    marked, chosen = False, None
    if options is not None and "report" in options:
        marked, chosen = True, checked_when(options["report"])
    else:
        for marker in request.node.iter_markers("mockbroker"):  # the closest marker with report= wins
            if "report" in marker.kwargs:
                marked, chosen = True, checked_when(marker.kwargs["report"])
                break
    if marked and chosen is None:
        return Plan(None)
    when = chosen or config.getoption("mockbroker_report_when") or "always"
    if given:
        folder = Path(given)
        return Plan(folder if folder.is_absolute() else Path(config.invocation_params.dir) / folder, when)
    return Plan(Path(config.rootpath) / DEFAULT_DIR if marked else None, when)


def file_name(nodeid: str, index: int = 1) -> str:
    """``tests/test_a.py::TestX::test_b[p-1]`` -> ``tests_test_a.py__TestX__test_b[p-1].html`` (``-2`` ... for
    the test's later clusters): letters, digits and ``- _ . [ ]`` kept, the rest ``_``, the length capped."""
    name = re.sub(r"[^A-Za-z0-9_.\[\]-]", "_", nodeid.replace("::", "__"))
    name = name.lstrip(".") or "test"
    if len(name) > NAME_CHARS:
        name = name[:NAME_CHARS - 9] + "_" + format(zlib.crc32(nodeid.encode()), "08x")
    return name + ("" if index == 1 else f"-{index}") + ".html"


def next_index(item: pytest.Item) -> int:
    """The number of the cluster a test starts now (1 for its first)."""
    index = item.stash.get(_COUNT, 0) + 1
    item.stash[_COUNT] = index
    return index


def remember(item: pytest.Item, report: pytest.TestReport) -> None:
    """Keep each phase's report on the item (called by the plugin's ``pytest_runtest_makereport`` wrapper)."""
    item.stash.setdefault(_PHASES, {})[report.when] = report


def outcome(item: pytest.Item) -> tuple[str, str]:
    """The test's outcome so far ("passed", "failed", "error" for a failed setup, "skipped") and the failure's text."""
    phases = item.stash.get(_PHASES, {})
    setup, call = phases.get("setup"), phases.get("call")
    if setup is not None and setup.failed:
        return "error", _text(setup)
    if call is None:
        return "skipped" if setup is not None and setup.skipped else "error", ""
    if call.failed:
        return "failed", _text(call)
    return ("skipped" if call.skipped else "passed"), ""


def _text(report: pytest.TestReport) -> str:
    text = report.longreprtext
    return text if len(text) <= DETAIL_CHARS else "...\n" + text[-DETAIL_CHARS:]  # the end names the failure


def write(request: pytest.FixtureRequest, cluster: MockCluster, index: int,
          options: dict[str, Any] | None = None) -> Path | None:
    """Write the report of ``cluster`` (the test's ``index``-th) if the plan asks for it; its path, or None."""
    where = plan(request, options)
    result, detail = outcome(request.node)
    if where.folder is None or (where.when == "on-failure" and result not in ("failed", "error")):
        return None
    path = where.folder / file_name(request.node.nodeid, index)
    try:
        cluster.write_report(path, title=request.node.nodeid, outcome=result, detail=detail)
    except OSError as exc:
        request.node.add_report_section("teardown", SECTION, f"report not written: {path}: {exc.strerror or exc}")
        return None
    request.node.add_report_section("teardown", SECTION, f"report: {path}")
    return path


def written(reports: Iterator[Any]) -> list[str]:
    """The report paths a session's teardown reports name (for the terminal summary; works under xdist too)."""
    paths = []
    for report in reports:
        if getattr(report, "when", None) == "teardown":
            paths += [text[len("report: "):] for name, text in report.sections
                      if name == f"Captured {SECTION} teardown" and text.startswith("report: ")]
    return paths
