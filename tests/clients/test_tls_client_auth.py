"""TLS client authentication per listener (KIP-684) with confluent-kafka: the broker-wide
``ssl.client.auth`` binds SSL listeners only, ``listener.name.<listener>.ssl.client.auth`` binds one
listener (the only way a SASL_SSL listener asks for a client certificate), ``requested`` takes clients
with and without a certificate; bad listener-prefixed keys and values get one line naming the fix."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from confluent_kafka import Producer

from mockbroker.cluster import MockCluster
from tests.clients.test_tls import Certs

pytestmark = pytest.mark.clients
LISTENERS = "SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return Certs(tmp_path_factory.mktemp("certs"))


def _cluster(certs: Certs, **config: str) -> MockCluster:
    return MockCluster(listeners=LISTENERS, topics={"t": 1}, sasl_users={"alice": "s"}, config={
        "ssl.keystore.location": certs.server_keystore, "ssl.truststore.location": certs.cafile, **config})


def _client(c: MockCluster, certs: Certs, protocol: str, with_cert: bool, **extra: Any) -> dict[str, Any]:
    config = {"bootstrap.servers": c.bootstrap_for(protocol), "security.protocol": protocol,
              "ssl.ca.location": certs.cafile, **extra}
    if protocol == "SASL_SSL":
        config.update({"sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "s"})
    if with_cert:
        config.update({"ssl.certificate.location": certs.client_cert, "ssl.key.location": certs.client_key})
    return config


def _produces(c: MockCluster, config: dict[str, Any]) -> set[str] | None:
    """The principals on the broker's connections of this protocol while a message went through, or None
    when the client reported an error (the TLS handshake refused) first."""
    errors: list[Any] = []
    producer = Producer({**config, "error_cb": errors.append, "message.timeout.ms": 8000})
    producer.produce("t", b"x")
    deadline = time.monotonic() + 10
    while producer.flush(0.2) and not errors and time.monotonic() < deadline:
        pass
    if errors or len(producer):
        return None
    return _principals(c, config["security.protocol"])  # while the producer is connected


def _principals(c: MockCluster, protocol: str) -> set[str]:
    """Principals of the connections that got through the TLS handshake (a refused handshake leaves a
    Connection that never saw connection_made: no transport)."""
    return c.call(lambda: {conn.principal for b in c.brokers for conn in b.connections
                           if conn.security_protocol == protocol and conn.transport is not None})


def test_broker_wide_required_binds_ssl_listeners_only(certs: Certs) -> None:
    with _cluster(certs, **{"ssl.client.auth": "required"}) as c:
        assert _produces(c, _client(c, certs, "SASL_SSL", with_cert=False)) == {"User:alice"}  # KIP-684: no cert asked
        assert None is _produces(c, _client(c, certs, "SSL", with_cert=False))
        assert _produces(c, _client(c, certs, "SSL", with_cert=True)) == {"User:CN=client,OU=eng,O=acme"}


def test_the_listener_setting_makes_sasl_ssl_require_a_certificate(certs: Certs) -> None:
    with _cluster(certs, **{"listener.name.sasl_ssl.ssl.client.auth": "required"}) as c:
        assert None is _produces(c, _client(c, certs, "SASL_SSL", with_cert=False))
        # the SASL principal, not the certificate's
        assert _produces(c, _client(c, certs, "SASL_SSL", with_cert=True)) == {"User:alice"}
        assert _produces(c, _client(c, certs, "SSL", with_cert=False)) == {"User:ANONYMOUS"}  # as it was


def test_the_listener_setting_wins_over_the_broker_wide_one(certs: Certs) -> None:
    with _cluster(certs, **{"ssl.client.auth": "required", "listener.name.ssl.ssl.client.auth": "none"}) as c:
        assert _produces(c, _client(c, certs, "SSL", with_cert=False)) == {"User:ANONYMOUS"}


def test_requested_takes_clients_with_and_without_a_certificate(certs: Certs) -> None:
    with _cluster(certs, **{"listener.name.ssl.ssl.client.auth": "requested"}) as c:
        assert _produces(c, _client(c, certs, "SSL", with_cert=False)) == {"User:ANONYMOUS"}
    with _cluster(certs, **{"ssl.client.auth": "requested"}) as c:
        assert _produces(c, _client(c, certs, "SSL", with_cert=True)) == {"User:CN=client,OU=eng,O=acme"}


@pytest.mark.parametrize(("key", "value", "message"), [
    ("listener.name.sasl_ssl.ssl.client.auth", "maybe",
     "listener.name.sasl_ssl.ssl.client.auth must be one of none, requested, required, not 'maybe'"),
    ("listener.name.sasl_ssl.ssl.client.auht", "required",
     "unknown config listener.name.sasl_ssl.ssl.client.auht: did you mean listener.name.sasl_ssl.ssl.client.auth?"),
    ("listener.name.sasl_sl.ssl.client.auth", "required",
     "unknown config listener.name.sasl_sl.ssl.client.auth: no listener 'sasl_sl' (listener names are lowercased; "
     "did you mean listener.name.sasl_ssl.ssl.client.auth?)"),
], ids=["bad-value", "misspelt-setting", "unknown-listener"])
def test_bad_listener_settings_are_refused_in_one_line(certs: Certs, key: str, value: str, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        _cluster(certs, **{key: value})
    assert str(refused.value) == message


def test_a_bad_broker_wide_value_is_refused_even_without_an_ssl_listener(certs: Certs) -> None:
    with pytest.raises(ValueError) as refused:
        MockCluster(listeners="SASL_SSL://127.0.0.1:0", config={
            "ssl.keystore.location": certs.server_keystore, "ssl.client.auth": "always"})
    assert str(refused.value) == "ssl.client.auth must be one of none, requested, required, not 'always'"


# -- a refused client certificate: a TLS alert and one log line, as Kafka's SslTransportLayer -------------
REFUSALS = {  # what the client presents -> (the alert it reads, the reason the broker logs)
    "no-certificate": ("alert certificate required", "peer did not return a certificate"),
    "untrusted-certificate": ("alert unknown ca", "certificate verify failed: unable to get local issuer certificate"),
}


def _untrusted_keystore(root: Any) -> str:
    import trustme

    path = str(root / "untrusted.pem")
    trustme.CA().issue_cert("client.example", common_name="mallory").private_key_and_cert_chain_pem.write_to_path(path)
    return path


def _refusal_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "mockbroker.server"
            and r.getMessage().startswith("Failed authentication")]


@pytest.mark.parametrize("tls_version", ["TLSv1_3", "TLSv1_2"])
@pytest.mark.parametrize("presented", list(REFUSALS))
def test_a_refused_certificate_gets_a_tls_alert_and_one_log_line(
        certs: Certs, tmp_path: Any, caplog: pytest.LogCaptureFixture, presented: str, tls_version: str) -> None:
    import socket
    import ssl

    caplog.set_level(logging.INFO)
    alert, reason = REFUSALS[presented]
    context = ssl.create_default_context(cafile=certs.cafile)
    context.maximum_version = getattr(ssl.TLSVersion, tls_version)
    if presented == "untrusted-certificate":
        context.load_cert_chain(_untrusted_keystore(tmp_path))
    with _cluster(certs, **{"ssl.client.auth": "required"}) as c:
        host, port = c.bootstrap_for("SSL").split(",")[0].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as raw, \
                pytest.raises(ssl.SSLError) as refused:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:  # TLS 1.3: the client is done here
                tls.sendall(b"\x00\x00\x00\x00")
                tls.recv(16)  # ... and reads the alert sent after the broker checked its certificate
        deadline = time.monotonic() + 5
        while not _refusal_lines(caplog) and time.monotonic() < deadline:
            time.sleep(0.02)
    if tls_version == "TLSv1_3" or presented == "untrusted-certificate":
        assert alert in str(refused.value)  # not an end of stream or a reset
    else:  # TLS 1.2 has no certificate_required: OpenSSL sends handshake_failure
        assert "alert handshake failure" in str(refused.value)
    assert _refusal_lines(caplog) == [f"Failed authentication on listener SSL (SSL handshake failed: {reason})"]
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]  # nothing else of it


def test_confluent_kafka_without_a_certificate_reads_the_alert(certs: Certs) -> None:
    with _cluster(certs, **{"ssl.client.auth": "required"}) as c:
        errors: list[Any] = []
        producer = Producer({**_client(c, certs, "SSL", with_cert=False), "error_cb": errors.append})
        deadline = time.monotonic() + 10
        while not errors and time.monotonic() < deadline:
            producer.poll(0.2)
        del producer  # closed before the cluster stops
    assert errors, "the client reported no error"
    assert "alert certificate required" in errors[0].str(), errors[0].str()
