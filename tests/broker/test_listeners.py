"""Several listeners: each broker listens once per listener, and Metadata, FindCoordinator and
DescribeCluster answer with the endpoints of the listener the request came in on (Kafka's rule)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.errors import KafkaError
from mockbroker.protocol import api
from mockbroker.server.listen import bound_socket, literal_family
from mockbroker.server.listeners import parse_listeners
from tests.broker.wire import WireClient

MD, FC, DC = api.request_module(3), api.request_module(10), api.request_module(60)
LISTENERS = "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0"


@pytest.fixture
def two() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, topics={"orders": 3}, listeners=LISTENERS,
                     listener_security_protocol_map="INTERNAL:PLAINTEXT") as c:
        yield c


def _ports(bootstrap: str) -> set[int]:
    return {int(hp.rsplit(":", 1)[1]) for hp in bootstrap.split(",")}


def _metadata_ports(port: int, version: int) -> set[int]:
    with WireClient(port) as w:
        resp = w.call(3, version, MD.MetadataRequest(topics=None if version else [], allow_auto_topic_creation=False))
    return {b.port for b in resp.brokers}


def test_each_listener_gets_its_own_ports_in_metadata(two: MockCluster) -> None:
    outside, inside = _ports(two.bootstrap_servers), _ports(two.bootstrap_for("INTERNAL"))
    assert len(outside) == len(inside) == 3 and not outside & inside
    assert two.bootstrap_servers == two.bootstrap_for("PLAINTEXT")
    for version in (0, 1, 4, 9, 12, 13):
        assert _metadata_ports(min(outside), version) == outside
        assert _metadata_ports(min(inside), version) == inside


def test_find_coordinator_and_describe_cluster_answer_per_listener(two: MockCluster) -> None:
    inside = _ports(two.bootstrap_for("INTERNAL"))
    with WireClient(min(inside)) as w:
        old = w.call(10, 3, FC.FindCoordinatorRequest(key="g", key_type=0))
        new = w.call(10, 4, FC.FindCoordinatorRequest(key_type=0, coordinator_keys=["g", "h"]))
        cluster = w.call(60, 1, DC.DescribeClusterRequest(endpoint_type=1))
    assert old.port in inside and {c.port for c in new.coordinators} <= inside
    assert {b.port for b in cluster.brokers} == inside


def test_connections_know_their_listener(two: MockCluster) -> None:
    port = min(_ports(two.bootstrap_for("INTERNAL")))
    with WireClient(port) as w:
        w.call(3, 12, MD.MetadataRequest(topics=None))
        conns = two.call(lambda: [(c.listener, c.security_protocol) for b in two.brokers for c in b.connections])
    assert ("INTERNAL", "PLAINTEXT") in conns


def test_brokers_added_and_taken_down_keep_their_listeners(two: MockCluster) -> None:
    before = _ports(two.bootstrap_for("INTERNAL"))
    down_port = two.server(2).ports["INTERNAL"]
    two.broker_down(2)
    assert _metadata_ports(min(before - {down_port}), 12) == before - {down_port}
    two.broker_up(2)
    assert _ports(two.bootstrap_for("INTERNAL")) == before  # the same ports again
    assert _metadata_ports(min(before), 12) == before
    new_id = two.add_broker()
    after = _ports(two.bootstrap_for("INTERNAL"))
    assert len(after) == 4 and before < after
    assert _metadata_ports(min(before), 12) == after
    assert two.server(new_id).ports.keys() == {"PLAINTEXT", "INTERNAL"}
    two.reset()
    assert _metadata_ports(min(before), 12) == after


def test_advertised_listeners_are_what_clients_are_told() -> None:
    with MockCluster(brokers=2, listeners="PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
                     listener_security_protocol_map="EXTERNAL:PLAINTEXT",
                     advertised_listeners="EXTERNAL://kafka.example:19092") as c:
        port = min(_ports(c.bootstrap_servers))
        with WireClient(port) as w:
            assert _metadata_ports(port, 12) == _ports(c.bootstrap_servers)
        external_port = c.server(0).ports["EXTERNAL"]
        with WireClient(external_port) as w:
            resp = w.call(3, 12, MD.MetadataRequest(topics=None))
        assert sorted((b.node_id, b.host, b.port) for b in resp.brokers) == [
            (0, "kafka.example", 19092), (1, "kafka.example", 19093)]
        assert c.bootstrap_for("external") == "kafka.example:19092,kafka.example:19093"


def test_an_advertised_host_names_every_listener_without_an_advertised_entry() -> None:
    """--advertised-host (the Docker image's localhost) is what clients are told, whatever address the
    listeners bind; an advertised.listeners entry still wins for its listener."""
    with MockCluster(brokers=2, advertised_host="localhost", listeners=LISTENERS,
                     listener_security_protocol_map="INTERNAL:PLAINTEXT",
                     advertised_listeners="INTERNAL://kafka.example:0") as c:
        assert all(hp.startswith("localhost:") for hp in c.bootstrap_servers.split(","))
        with WireClient(c.server(0).port) as w:
            resp = w.call(3, 12, MD.MetadataRequest(topics=None))
        assert {b.host for b in resp.brokers} == {"localhost"}
        assert {hp.rsplit(":", 1)[0] for hp in c.bootstrap_for("INTERNAL").split(",")} == {"kafka.example"}


def test_config_keys_work_like_keyword_arguments() -> None:
    with MockCluster(config={"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"}) as c:
        assert c.server(0).ports.keys() == {"PLAINTEXT", "SASL_PLAINTEXT"}
        with pytest.raises(ValueError, match="no listener"):
            c.bootstrap_for("SSL")


def test_default_is_one_plaintext_listener(single: MockCluster) -> None:
    assert [s.name for s in single.security.listeners] == ["PLAINTEXT"]
    assert single.server(0).ports == {"PLAINTEXT": single.server(0).port}


@pytest.mark.parametrize(("listeners", "mapping", "message"), [
    ("CLIENT://127.0.0.1:0", None, "No security protocol defined for listener CLIENT"),
    ("PLAINTEXT://127.0.0.1", None, "expected NAME://host:port"),
    ("PLAINTEXT://:0,PLAINTEXT://:0", None, "PLAINTEXT twice"),
    ("CLIENT://:0", "CLIENT:TLS", "the protocol must be one of"),
])
def test_bad_listener_configs_are_refused(listeners: str, mapping: str | None, message: str) -> None:
    with pytest.raises(KafkaError, match=message):
        parse_listeners(listeners, mapping)


def test_an_ssl_listener_without_a_certificate_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a certificate"):
        MockCluster(listeners="SSL://127.0.0.1:0")


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_literal_addresses_are_bound_here_and_host_names_left_to_the_loop() -> None:
    assert literal_family("127.0.0.1") == socket.AF_INET and literal_family("::1") == socket.AF_INET6
    assert literal_family("localhost") is None and literal_family("") is None
    sock = bound_socket("127.0.0.1", 0, 1 << 17)
    assert sock is not None
    with sock:
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR) == 1
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) >= 1 << 17  # Linux doubles what is asked
        sock.listen()
        taken = sock.getsockname()[1]
        with pytest.raises(OSError, match=rf"error while attempting to bind on address \('127.0.0.1', {taken}\)"):
            bound_socket("127.0.0.1", taken, 0)
    assert bound_socket("localhost", 0, 0) is None


@pytest.mark.parametrize("host", ["localhost", pytest.param("::1", marks=pytest.mark.skipif(
    not _has_ipv6_loopback(), reason="this machine has no IPv6 loopback address"))])
def test_listeners_on_a_host_name_and_an_ipv6_address_answer(host: str) -> None:
    with MockCluster(host=host, port=0, topics={"orders": 2}) as c:
        port = c.server(0).port
        with WireClient(port, host=host) as w:
            resp = w.call(3, 12, MD.MetadataRequest(topics=None))
    assert [t.name for t in resp.topics] == ["orders"] and resp.brokers[0].port == port
