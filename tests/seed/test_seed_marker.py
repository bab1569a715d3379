"""The pytest plugin's ``mockbroker`` marker takes ``seed=``: the mock_cluster fixture starts with the records."""

from __future__ import annotations

from pathlib import Path

import pytest

from mockbroker.cluster import MockCluster
from tests.seed.helpers import read_kafka_python

pytestmark = [pytest.mark.clients]

DATA = Path(__file__).parent / "data"


@pytest.mark.mockbroker(seed={"orders": DATA / "orders.jsonl"})
def test_the_marker_seeds_the_fixtures_cluster(mock_cluster: MockCluster) -> None:
    assert read_kafka_python(mock_cluster.bootstrap_servers, "orders", 1, 1) == [
        (0, b"k", b"seeded", [("h", b"1")], 1_700_000_000_000)]
