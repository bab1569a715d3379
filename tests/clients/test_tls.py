"""TLS with real clients: SSL and SASL_SSL listeners (certificates made here with trustme),
confluent-kafka and kafka-python produce and consume, mutual TLS gives the certificate's DN as the
principal, Kafka's ssl.keystore.location / ssl.truststore.location names work."""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from confluent_kafka import Consumer, Producer

from mockbroker.cluster import MockCluster
from tests.broker.wire import WireClient
from tests.clients.round_trip import consume_confluent, kafka_python_round_trip

pytestmark = pytest.mark.clients


class Certs:
    def __init__(self, root: Path) -> None:
        self.ca = trustme.CA()
        server = self.ca.issue_cert("127.0.0.1", "localhost")
        client = self.ca.issue_cert("client.example", common_name="client", organization_name="acme",
                                    organization_unit_name="eng")
        self.cafile = str(root / "ca.pem")
        self.ca.cert_pem.write_to_path(self.cafile)
        self.server_chain, self.server_key = str(root / "server.pem"), str(root / "server.key")
        server.private_key_pem.write_to_path(self.server_key)
        for i, blob in enumerate(server.cert_chain_pems):
            blob.write_to_path(self.server_chain, append=i > 0)
        self.server_keystore = str(root / "server-keystore.pem")  # key and chain in one file (ssl.keystore.type=PEM)
        server.private_key_and_cert_chain_pem.write_to_path(self.server_keystore)
        self.client_cert, self.client_key = str(root / "client.pem"), str(root / "client.key")
        client.cert_chain_pems[0].write_to_path(self.client_cert)
        client.private_key_pem.write_to_path(self.client_key)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return Certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def tls(certs: Certs) -> Iterator[MockCluster]:
    with MockCluster(brokers=2, listeners="SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
                     ssl_certfile=certs.server_chain, ssl_keyfile=certs.server_key,
                     sasl_users={"alice": "alice-secret"}) as c:
        yield c


def _confluent(bootstrap: str, certs: Certs, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SSL", "ssl.ca.location": certs.cafile, **extra}


def _round_trip_confluent(config: dict[str, Any], topic: str, count: int = 10, already: int = 0) -> list[bytes]:
    producer = Producer(config)
    for i in range(count):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(15) == 0
    return sorted(consume_confluent(config, topic, count + already))


def _principals(c: MockCluster) -> set[str]:
    return c.call(lambda: {conn.principal for b in c.brokers for conn in b.connections})


def test_confluent_kafka_over_ssl(tls: MockCluster, certs: Certs) -> None:
    tls.create_topic("ssl-confluent", 2)
    got = _round_trip_confluent(_confluent(tls.bootstrap_servers, certs), "ssl-confluent")
    assert got == sorted(f"v{i}".encode() for i in range(10))
    big = bytes(range(256)) * 3500  # ~900 KB: a frame read into its own buffer, over uvloop's TLS
    tls.create_topic("ssl-big", 1)
    config = _confluent(tls.bootstrap_servers, certs, **{"compression.type": "none"})
    producer = Producer(config)
    producer.produce("ssl-big", big)
    assert producer.flush(15) == 0
    # the produce lane answers TLS connections through their transports, never around them
    fds = tls.call(lambda: {c.socket_fd for b in tls.brokers for c in b.connections if c.security_protocol == "SSL"})
    assert fds == {-1}
    consumer = Consumer({**config, "group.id": "g-big", "auto.offset.reset": "earliest"})
    consumer.subscribe(["ssl-big"])
    deadline, value = time.monotonic() + 30, None
    while value is None and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            value = msg.value()
    consumer.close()
    assert value == big


def test_confluent_kafka_over_sasl_ssl(tls: MockCluster, certs: Certs) -> None:
    tls.create_topic("sasl-ssl-confluent", 2)
    config = _confluent(tls.bootstrap_for("SASL_SSL"), certs, **{
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
        "sasl.password": "alice-secret"})
    producer = Producer(config)
    producer.produce("sasl-ssl-confluent", b"first")
    assert producer.flush(15) == 0
    assert "User:alice" in _principals(tls)  # the SASL principal, over TLS
    got = _round_trip_confluent(config, "sasl-ssl-confluent", already=1)
    assert got == sorted([b"first"] + [f"v{i}".encode() for i in range(10)])


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_kafka_python_over_tls(tls: MockCluster, certs: Certs, protocol: str) -> None:
    topic = f"kafka-python-{protocol}"
    tls.create_topic(topic, 2)
    config: dict[str, Any] = {"bootstrap_servers": tls.bootstrap_for(protocol), "security_protocol": protocol,
                              "ssl_cafile": certs.cafile}
    if protocol == "SASL_SSL":
        config.update(sasl_mechanism="PLAIN", sasl_plain_username="alice", sasl_plain_password="alice-secret")
    assert kafka_python_round_trip(config, topic) == sorted(f"k{i}".encode() for i in range(10))


def test_metadata_over_ssl_names_the_ssl_ports(tls: MockCluster, certs: Certs) -> None:
    from confluent_kafka.admin import AdminClient

    md = AdminClient(_confluent(tls.bootstrap_servers, certs)).list_topics(timeout=10)
    assert sorted(f"{b.host}:{b.port}" for b in md.brokers.values()) == sorted(tls.bootstrap_for("SSL").split(","))


def test_plaintext_to_a_tls_port_gets_nothing(tls: MockCluster) -> None:
    with WireClient(tls.server(0).ports["SSL"]) as w:
        w.sock.sendall(b"\x00\x00\x00\x10" + b"\x00" * 16)  # not a TLS ClientHello
        assert w.closed_by_peer()


def test_mutual_tls_principal_is_the_certificate_dn(certs: Certs) -> None:
    config = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": certs.server_keystore,
              "ssl.truststore.location": certs.cafile, "ssl.client.auth": "required"}
    with MockCluster(config=config, topics={"m": 1}) as c:
        producer = Producer(_confluent(c.bootstrap_servers, certs, **{
            "ssl.certificate.location": certs.client_cert, "ssl.key.location": certs.client_key}))
        producer.produce("m", b"x")
        assert producer.flush(15) == 0
        assert _principals(c) == {"User:CN=client,OU=eng,O=acme"}
        errors: list[Any] = []
        anonymous = Producer(_confluent(c.bootstrap_servers, certs, error_cb=errors.append))
        deadline = time.monotonic() + 10
        while not errors and time.monotonic() < deadline:
            anonymous.poll(0.2)
        assert errors  # no client certificate: the handshake fails


def test_ssl_without_client_auth_is_anonymous(tls: MockCluster, certs: Certs) -> None:
    context = ssl.create_default_context(cafile=certs.cafile)
    import socket

    with socket.create_connection(("127.0.0.1", tls.server(0).ports["SSL"])) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1"):
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and len(tls.call(lambda: list(tls.server(0).connections))) == 0:
                time.sleep(0.05)
            assert _principals(tls) >= {"User:ANONYMOUS"}


def test_a_ready_ssl_context(certs: Certs) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs.server_chain, certs.server_key)
    with MockCluster(listeners="SSL://127.0.0.1:0", ssl_context=context, topics={"c": 1}) as c:
        producer = Producer(_confluent(c.bootstrap_servers, certs))
        producer.produce("c", b"x")
        assert producer.flush(15) == 0


def test_plain_asyncio_tls_transport_with_large_frames(certs: Certs) -> None:
    """The BufferedProtocol connection under asyncio's own TLS transport (the other tests run uvloop's):
    frames above the 32 KiB staging threshold arrive whole."""
    import asyncio
    import struct

    from mockbroker.protocol import api

    md = api.request_module(3)
    names = [f"missing-topic-{i:06d}" for i in range(20_000)]  # a ~500 KB request

    async def run() -> tuple[int, int]:
        async with MockCluster(listeners="SSL://127.0.0.1:0", ssl_certfile=certs.server_chain,
                               ssl_keyfile=certs.server_key) as c:
            assert not type(asyncio.get_running_loop()).__module__.startswith("uvloop")
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", c.server(0).port, ssl=ssl.create_default_context(cafile=certs.cafile))
            body = md.MetadataRequest(topics=[md.MetadataRequestTopic(name=n) for n in names],
                                      allow_auto_topic_creation=False)
            frame = api.to_bytes(api.encode_request(3, 12, 7, body, "asyncio-tls"))
            assert len(frame) > 400_000
            writer.write(frame)
            await writer.drain()
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            correlation_id, resp = api.decode_response(3, 12, await reader.readexactly(size))
            writer.close()
            return correlation_id, len(resp.topics)

    assert asyncio.run(run()) == (7, len(names))


def test_serve_with_an_ssl_listener(certs: Certs) -> None:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--listeners", "SSL://127.0.0.1:0",
                             "--ssl-certfile", certs.server_chain, "--ssl-keyfile", certs.server_key, "--topic", "s:1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("bootstrap.servers="), proc.stderr.read() if proc.poll() is not None else line
        producer = Producer(_confluent(line.split("=", 1)[1], certs))
        producer.produce("s", b"x")
        assert producer.flush(15) == 0
    finally:
        proc.terminate()
        proc.wait(10)


def test_serve_refuses_an_ssl_listener_without_a_certificate() -> None:
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "mockbroker", "serve", "--listeners", "SSL://127.0.0.1:0"],
                            capture_output=True, text=True, timeout=20)
    assert result.returncode == 2 and "needs a certificate" in result.stderr and "Traceback" not in result.stderr

