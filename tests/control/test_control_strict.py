"""The control API's answers to what it does not know: an unknown route is a JSON 404, a method a route
does not take a JSON 405 (with Allow), and an unknown topic config name a 400 naming the nearest one,
all as ``{"error": ...}`` like its other errors."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker.cluster import MockCluster


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(topics={"seed": 1}, control_port=0) as running:
        yield running


def call(cluster: MockCluster, method: str, path: str, body: Any = None,
         token: str | None = None) -> tuple[int, str, dict[str, Any], Any]:
    assert cluster.control_url is not None
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(cluster.control_url + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.headers.get_content_type(), dict(reply.headers), json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get_content_type(), dict(exc.headers), json.loads(exc.read() or b"null")


@pytest.mark.parametrize(("method", "path"), [("GET", "/nope"), ("POST", "/topics/seed/nothing"), ("GET", "/")])
def test_an_unknown_route_is_a_json_404(cluster: MockCluster, method: str, path: str) -> None:
    status, kind, _headers, body = call(cluster, method, path, {} if method == "POST" else None)
    assert (status, kind) == (404, "application/json")
    assert path in body["error"] and method in body["error"]


def test_a_method_a_route_does_not_take_is_a_json_405(cluster: MockCluster) -> None:
    status, kind, headers, body = call(cluster, "PUT", "/topics")
    assert (status, kind) == (405, "application/json")
    assert set(headers["Allow"].split(",")) >= {"GET", "POST"}
    assert "PUT" in body["error"] and "/topics" in body["error"]


def test_a_documented_404_is_kept(cluster: MockCluster) -> None:
    status, kind, _headers, body = call(cluster, "GET", "/topics/absent")
    assert (status, kind) == (404, "application/json") and "absent" in body["error"]


def test_an_unknown_topic_config_names_the_nearest(cluster: MockCluster) -> None:
    status, kind, _headers, body = call(cluster, "POST", "/topics", {"name": "t", "partitions": 1,
                                                                     "config": {"retention.msx": 1000}})
    assert (status, kind) == (400, "application/json")
    assert body["error"] == "unknown topic config 'retention.msx': did you mean 'retention.ms'?"
    assert body["name"] == "INVALID_CONFIG" and "t" not in cluster.state.topics


def test_a_topic_config_value_out_of_range_is_a_400(cluster: MockCluster) -> None:
    status, _kind, _headers, body = call(cluster, "POST", "/topics", {"name": "t", "config": {"retention.ms": -7}})
    assert status == 400 and "retention.ms" in body["error"] and "at least -1" in body["error"]


def test_with_a_token_an_unknown_route_still_wants_the_token() -> None:
    with MockCluster(control_port=0, control_token="s3cret") as cluster:
        assert call(cluster, "GET", "/nope")[0] == 401
        status, kind, _headers, body = call(cluster, "GET", "/nope", token="s3cret")
        assert (status, kind) == (404, "application/json") and "/nope" in body["error"]


@pytest.mark.parametrize(("rule", "error"), [
    ({"api": "Produse", "error": "NOT_LEADER_OR_FOLLOWER"}, "unknown API 'Produse' (did you mean 'Produce'?)"),
    ({"api": "Produce", "error": "NOT_LEADER"},
     "unknown error code 'NOT_LEADER' (did you mean 'NOT_LEADER_OR_FOLLOWER'?)"),
    ({"api": "Fetch", "action": "dealy", "delay_ms": 5}, "unknown action 'dealy' (did you mean 'delay'?)"),
    ({"api": "Produse", "error": "NOT_LEADER", "brokr": 0},
     "unknown fault field 'brokr' (did you mean 'broker'?); unknown API 'Produse' (did you mean 'Produce'?); "
     "unknown error code 'NOT_LEADER' (did you mean 'NOT_LEADER_OR_FOLLOWER'?)"),
])
def test_a_wrong_fault_rule_is_a_400_naming_the_nearest(cluster: MockCluster, rule: dict[str, Any],
                                                        error: str) -> None:
    """POST /faults with a misspelt API, error code, action or field: one 400 naming every wrong name and
    the nearest known one; no rule is added."""
    status, kind, _headers, body = call(cluster, "POST", "/faults", rule)
    assert (status, kind, body) == (400, "application/json", {"error": error})
    assert call(cluster, "GET", "/faults")[3] == {"faults": []}


def test_an_unknown_api_name_for_the_journal_or_an_action_names_the_nearest(cluster: MockCluster) -> None:
    """Not an empty journal forever (a wait that can never end) but a 400 naming the API meant."""
    status, _kind, _headers, body = call(cluster, "GET", "/journal?api=Produse")
    assert (status, body) == (400, {"error": "unknown API 'Produse' (did you mean 'Produce'?)"})
    assert call(cluster, "GET", "/journal?api=produce")[0] == 200  # Kafka's name, in any case
    status, _kind, _headers, body = call(cluster, "POST", "/actions", {"action": "move_leader", "topic": "seed",
                                                                       "partiton": 0})
    assert (status, body) == (400, {"error": "move_leader needs partition; move_leader does not take partiton "
                                             "(did you mean 'partition'?)"})
    status, _kind, _headers, body = call(cluster, "POST", "/actions", {"action": "brokr_down", "broker": 0})
    assert (status, body) == (400, {"error": "unknown action 'brokr_down' (did you mean 'broker_down'?)"})
