"""Fixtures for the Burrow tests: one ZooKeeper per module (Burrow keeps its own state there), and
``start_burrow(bootstrap)``, a Burrow per call, stopped at the end of the test.  The whole folder is skipped
with the reason when Debian's ``burrow`` or ``zookeeper`` is not installed.  When a test fails, Burrow's log
is added to the failure report as a section of its own (a ZooKeeper or Burrow that does not start fails with
its log's tail in the error)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.burrow.harness import Burrow, ZooKeeper, missing

_STARTED = pytest.StashKey[list[Burrow]]()


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeper]:
    reason = missing()
    if reason is not None:
        pytest.skip(reason)
    zk = ZooKeeper(tmp_path_factory.mktemp("zookeeper")).start()
    try:
        yield zk
    finally:
        zk.stop()


@pytest.fixture
def start_burrow(request: pytest.FixtureRequest, zookeeper: ZooKeeper,
                 tmp_path: Path) -> Iterator[Callable[..., Burrow]]:
    """``start_burrow(bootstrap, **settings)``: a started Burrow watching ``bootstrap`` (settings: see
    harness.burrow_config); each is stopped when the test ends."""
    started = request.node.stash.setdefault(_STARTED, [])

    def start(bootstrap: str, **settings: Any) -> Burrow:
        burrow = Burrow(tmp_path / f"burrow-{len(started)}", zookeeper.address, bootstrap, **settings)
        started.append(burrow)
        return burrow.start()

    try:
        yield start
    finally:
        for burrow in started:
            burrow.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if report.failed and call.when in ("call", "teardown"):
        started: list[Burrow] = item.stash.get(_STARTED, [])
        for i, burrow in enumerate(started):
            report.sections.append((f"Burrow {i} log ({burrow.workdir})", burrow.logs()))
    return report
