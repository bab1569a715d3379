"""KIP-714 GetTelemetrySubscriptions / PushTelemetry and ListConfigResources over a real socket, for the
paths a well-behaved client does not take: unknown instance or subscription ids, pushes too early,
too large, terminating, in an unknown codec or unreadable; what ApiVersions advertises; and ACLs on
GROUP and CLIENT_METRICS configs and ListConfigResources."""

from __future__ import annotations

import gzip
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from mockbroker.telemetry.otlp import encode_gauges
from tests.broker.hostile import framed, raw_header, read_frame
from tests.broker.wire import WireClient

GET, PUSH, LIST, VERSIONS = (api.request_module(k) for k in (71, 72, 74, 18))
ZERO = bytes(16)


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(config={"telemetry.max.bytes": 300, "mock.telemetry.receiver": True}) as c:
        yield c


def port(cluster: MockCluster) -> int:
    return int(cluster.bootstrap_servers.rsplit(":", 1)[1])


def get(w: WireClient, instance_id: bytes = ZERO) -> Any:
    return w.call(71, 0, GET.GetTelemetrySubscriptionsRequest(client_instance_id=instance_id))


def push(w: WireClient, sub: Any, metrics: bytes = b"", compression: int = 0, terminating: bool = False,
         subscription_id: int | None = None) -> int:
    sub_id = sub.subscription_id if subscription_id is None else subscription_id
    body = PUSH.PushTelemetryRequest(client_instance_id=sub.client_instance_id, subscription_id=sub_id,
                                     terminating=terminating, compression_type=compression, metrics=metrics)
    return int(w.call(72, 0, body).error_code)


def test_api_versions_advertise_telemetry_and_list_config_resources(cluster: MockCluster) -> None:
    with WireClient(port(cluster)) as w:
        answer = w.call(18, 0, VERSIONS.ApiVersionsRequest())
    keys = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert keys[71] == (0, 0) and keys[72] == (0, 0) and keys[74] == (0, 1)


def test_without_a_receiver_api_versions_leave_out_telemetry() -> None:
    """Kafka's ApiVersionsResponse.brokerApiVersions skips GetTelemetrySubscriptions and PushTelemetry
    unless a telemetry receiver is configured: every version of the answer, the C lane's (the first
    request of a connection, from the staging buffer) and the handler's, and the v0 answer to a version
    newer than we speak."""
    with MockCluster() as c, WireClient(port(c)) as w:
        for version in (0, 1, 2, 3, 4, 3, 0):
            ask = VERSIONS.ApiVersionsRequest(client_software_name="wire", client_software_version="1")
            keys = {k.api_key for k in w.call(18, version, ask).api_keys}
            assert 71 not in keys and 72 not in keys and 74 in keys and 18 in keys, version
    for config, expected in (({}, False), ({"mock.telemetry.receiver": True}, True)):
        with MockCluster(config=config) as c, socket.create_connection(("127.0.0.1", port(c)), timeout=10) as s:
            s.sendall(framed(raw_header(18, 99, correlation_id=7) + b"\x00"))
            corr, newer = api.decode_response(18, 0, read_frame(s))
        assert corr == 7 and newer.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert ({71, 72} <= {k.api_key for k in newer.api_keys}) is expected


def test_without_subscription_a_new_instance_gets_kafkas_defaults(cluster: MockCluster) -> None:
    with WireClient(port(cluster)) as w:
        sub = get(w)
        assert sub.error_code == 0 and sub.client_instance_id != ZERO
        assert sub.requested_metrics == [] and sub.push_interval_ms == 300000 and sub.telemetry_max_bytes == 300
        assert sub.accepted_compression_types == [4, 3, 1, 2] and sub.delta_temporality
        assert get(w, sub.client_instance_id).error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED  # asked too soon


def test_unknown_instance_or_subscription_id(cluster: MockCluster) -> None:
    cluster.subscribe_client_metrics("all", "*", interval_ms=3600000)
    with WireClient(port(cluster)) as w:
        sub = get(w)
        assert sub.requested_metrics == ["*"] and sub.push_interval_ms == 3600000
        assert push(w, sub, subscription_id=sub.subscription_id + 1) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        stranger = api.response_module(71).GetTelemetrySubscriptionsResponse(client_instance_id=b"\x01" * 16,
                                                                             subscription_id=1)
        assert push(w, stranger) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        # the subscriptions change: the old id is unknown, and the next Get (let in after that error) has a new one
        cluster.subscribe_client_metrics("all", "org.apache.kafka.", interval_ms=3600000)
        assert push(w, sub) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        again = get(w, sub.client_instance_id)
        assert again.error_code == 0 and again.client_instance_id == sub.client_instance_id
        assert again.subscription_id != sub.subscription_id and again.requested_metrics == ["org.apache.kafka."]
        assert push(w, again) == 0


def test_push_too_early_too_large_terminating(cluster: MockCluster) -> None:
    cluster.subscribe_client_metrics("all", "*", interval_ms=3600000)
    payload = encode_gauges({"service.name": "wire"}, {"org.apache.kafka.client.x": 7.5})
    with WireClient(port(cluster)) as w:
        sub = get(w)
        assert push(w, sub, payload) == 0  # the first push after a Get is always let in
        assert push(w, sub, payload) == ErrorCode.THROTTLING_QUOTA_EXCEEDED
        assert push(w, sub, payload, terminating=True) == 0  # a terminating push is let in early
        assert push(w, sub, payload) == ErrorCode.INVALID_REQUEST  # nothing after it
        big = get(w)
        assert push(w, big, bytes(301)) == ErrorCode.TELEMETRY_TOO_LARGE
        odd = get(w)
        assert push(w, odd, payload, compression=7) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        garbled = get(w)
        assert push(w, garbled, b"\xff\xff\xff") == ErrorCode.INVALID_RECORD
    client = cluster.telemetry()[next(k for k, v in cluster.telemetry().items() if v["pushes"] == 2)]
    assert client["resource"] == {"service.name": "wire"} and client["terminating"]
    assert client["metrics"]["org.apache.kafka.client.x"]["value"] == 7.5


def test_compressed_push_is_decoded(cluster: MockCluster) -> None:
    cluster.subscribe_client_metrics("gz", "*", interval_ms=100)
    payload = gzip.compress(encode_gauges({}, {"org.apache.kafka.consumer.poll": 3.0}))
    with WireClient(port(cluster)) as w:
        sub = get(w)
        assert push(w, sub, payload, compression=1) == 0
    (client,) = cluster.telemetry().values()
    assert client["metrics"]["org.apache.kafka.consumer.poll"]["value"] == 3.0
    assert client["client_id"] == "wire-test"


def test_list_config_resources_by_type(cluster: MockCluster) -> None:
    cluster.subscribe_client_metrics("s1")
    cluster.create_topic("t", 1)
    with WireClient(port(cluster)) as w:
        v0 = w.call(74, 0, LIST.ListConfigResourcesRequest())
        v1 = w.call(74, 1, LIST.ListConfigResourcesRequest(resource_types=[2, 16]))
        bad = w.call(74, 1, LIST.ListConfigResourcesRequest(resource_types=[99]))
    assert [r.resource_name for r in v0.config_resources] == ["s1"]
    assert [(r.resource_type, r.resource_name) for r in v1.config_resources] == [(2, "t"), (16, "s1")]
    assert bad.error_code == ErrorCode.INVALID_REQUEST and bad.config_resources == []


def test_acls_guard_group_and_client_metrics_configs() -> None:
    authorizer = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with MockCluster(config=authorizer) as c, WireClient(port(c)) as w:
        c.add_acl("GROUP", "mine", "User:ANONYMOUS", "DESCRIBE_CONFIGS")
        dc = api.request_module(32)
        resp = w.call(32, 4, dc.DescribeConfigsRequest(resources=[
            dc.DescribeConfigsResource(resource_type=t, resource_name=n, configuration_keys=None)
            for t, n in ((32, "mine"), (32, "theirs"), (16, "sub"))]))
        assert [(r.error_code, len(r.configs)) for r in resp.results] == [
            (0, 10), (ErrorCode.GROUP_AUTHORIZATION_FAILED, 0), (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, 0)]
        listed = w.call(74, 1, LIST.ListConfigResourcesRequest())
        assert listed.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and listed.config_resources == []
