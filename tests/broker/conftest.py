"""Fixtures for broker tests: a fresh MockCluster per test, on a background loop thread."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mockbroker.cluster import MockCluster


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, topics={"orders": 6}) as c:
        yield c


@pytest.fixture
def single() -> Iterator[MockCluster]:
    with MockCluster(brokers=1) as c:
        yield c
