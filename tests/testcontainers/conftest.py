"""tests/testcontainers: every test here drives real clients over sockets (the ``clients`` marker is given here,
so that test_kafka_module.py stays testcontainers' own test text but for its imports)."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.clients)
