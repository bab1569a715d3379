"""Random well-formed requests for the log, replica, leader, quorum and feature admin APIs, every version:
each gets an answer that decodes (no handler error, no closed connection) and leaves a sane cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings

from mockbroker.cluster import MockCluster
from mockbroker.protocol import api

from ..protocol.strategies import message
from .wire import WireClient

KEYS = (21, 34, 35, 43, 45, 46, 55, 57, 75)
CASES = [(k, v) for k in KEYS for v in range(api.version_range(k)[0], api.version_range(k)[1] + 1)]


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, topics={"a": 3}) as c:
        yield c


def _sane(cluster: MockCluster) -> bool:
    def check() -> bool:
        state = cluster.state
        for topic in state.topics.values():
            for p in topic.partitions:
                assert p.replicas and len(set(p.replicas)) == len(p.replicas), p.replicas
                assert 0 <= p.log_start_offset <= p.high_watermark
        return True
    return cluster.call(check)


@pytest.mark.parametrize(("key", "version"), CASES)
def test_random_requests_are_answered(fuzzed: MockCluster, key: int, version: int) -> None:
    req_cls = getattr(api.request_module(key), api.api_name(key) + "Request")
    flexible = api.is_flexible(key, version)
    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(body=message(req_cls, version, flexible))
    def run(body: object) -> None:
        with WireClient(fuzzed.server(0).port) as c:
            c.call(key, version, body)
        assert _sane(fuzzed)

    run()
