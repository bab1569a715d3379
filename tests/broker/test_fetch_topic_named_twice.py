"""A Fetch that names the same topic twice (two topic entries, by name or by id) is authorized once
for that topic, as Kafka authorizes the set of a fetch's topic names (filterByAuthorized): one
"Denied" audit line and one authorizer decision, and every partition of both entries answered."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api

from .wire import WireClient, fetch_body

ME = "User:ANONYMOUS"
M = api.request_module(1)


@pytest.fixture
def c() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, topics={"orders": 2, "secret": 1},
                     config={"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}) as c:
        yield c


def twice(name: str, topic_id: bytes = b"\x00" * 16) -> Any:
    """A fetch naming ``name`` (or ``topic_id``) in two topic entries: partition 0, then partition 1."""
    body = fetch_body(name, 0, 0, topic_id=topic_id)
    body.topics.append(M.FetchTopic(topic=name, topic_id=topic_id, partitions=[
        M.FetchPartition(partition=1, fetch_offset=0, partition_max_bytes=1 << 20, current_leader_epoch=-1)]))
    return body


def counted(c: MockCluster) -> list[str]:
    """The topic names the authorizer decides on from now (a wrapper around the cluster's own)."""
    seen: list[str] = []
    acls = c.state.acls
    decide = acls.authorize

    def authorize(principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        seen.append(name)
        return bool(decide(principal, host, operation, resource_type, name))

    acls.authorize = authorize
    return seen


@pytest.mark.parametrize("version", [12, 13])
def test_a_denied_topic_named_twice_is_checked_once(c: MockCluster, version: int,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    body = twice("orders", c.state.topics["orders"].topic_id if version >= 13 else b"\x00" * 16)
    seen = counted(c)
    with WireClient(c.brokers[0].port) as w, caplog.at_level("INFO", logger="mockbroker.authz"):
        answer = w.call(1, version, body)
    codes = sorted((p.partition_index, p.error_code) for t in answer.responses for p in t.partitions)
    assert codes == [(0, ErrorCode.TOPIC_AUTHORIZATION_FAILED), (1, ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    assert seen == ["orders"]
    assert len([r for r in caplog.records if "Denied" in r.getMessage()]) == 1


def test_an_allowed_topic_named_twice_is_checked_once_and_served(c: MockCluster) -> None:
    c.add_acl("TOPIC", "orders", ME, "READ")
    seen = counted(c)
    with WireClient(c.brokers[0].port) as w:
        answer = w.call(1, 12, twice("orders"))
    codes = sorted((p.partition_index, p.error_code) for t in answer.responses for p in t.partitions)
    assert codes == [(0, 0), (1, 0)] and seen == ["orders"]
