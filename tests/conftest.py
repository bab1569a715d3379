"""Shared pytest configuration: reports how many codec (message, version) pairs were covered."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    try:
        from tests.protocol.test_roundtrip import CASES, COVERED
    except ImportError:
        return
    if COVERED:
        terminalreporter.write_line(
            f"codec round trips: {len(COVERED)} of {len(CASES)} (message, version) pairs covered"
        )


pytest_plugins = ["pytester"]  # tests/test_pytest_plugin.py runs inner pytest sessions
