"""SASL over the wire: SaslHandshake v0-1 (v0's raw-token flow too), SaslAuthenticate v0-2, the
pre-authentication gate, failures, KIP-368 re-authentication and session expiry."""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from tests.broker.sasl_wire import SaslWire
from tests.broker.wire import WireClient

MD, AV = api.request_module(3), api.request_module(18)
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
REAUTH_MS = 60_000


@pytest.fixture(scope="module")
def sasl() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, topics={"t": 1}, listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                     sasl_users={"alice": "alice-secret", "bob": "bob-secret"},
                     config={"connections.max.reauth.ms": REAUTH_MS}) as c:
        yield c


def _sasl_port(c: MockCluster) -> int:
    return c.server(0).ports["SASL_PLAINTEXT"]


def _metadata_ok(w: WireClient) -> bool:
    return w.call(3, 12, MD.MetadataRequest(topics=None)).cluster_id == "mockbroker-cluster"


def _principals(c: MockCluster) -> list[str]:
    return c.call(lambda: sorted(conn.principal for conn in c.server(0).connections))


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("auth_version", [0, 1, 2])
def test_handshake_v1_and_every_authenticate_version(sasl: MockCluster, mechanism: str, auth_version: int) -> None:
    with SaslWire(_sasl_port(sasl)) as w:
        versions = AV.ApiVersionsRequest(client_software_name="t", client_software_version="1")
        assert w.call(18, 3, versions).error_code == 0
        hs = w.handshake(mechanism, 1)
        assert hs.error_code == 0 and hs.mechanisms == MECHANISMS
        answers = w.authenticate(mechanism, "alice", "alice-secret", auth_version)
        assert [a.error_code for a in answers] == [0] * (1 if mechanism == "PLAIN" else 2)
        if auth_version >= 1:
            assert answers[-1].session_lifetime_ms == REAUTH_MS
        if mechanism != "PLAIN":
            assert answers[-1].auth_bytes.startswith(b"v=")  # the server signature (scramp checked it)
        assert _metadata_ok(w)
        assert "User:alice" in _principals(sasl)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_handshake_v0_raw_token_flow(sasl: MockCluster, mechanism: str) -> None:
    with SaslWire(_sasl_port(sasl)) as w:
        hs = w.handshake(mechanism, 0)
        assert hs.error_code == 0 and mechanism in hs.mechanisms
        answers = w.raw_exchange(mechanism, "bob", "bob-secret")
        assert answers[-1] == b"" if mechanism == "PLAIN" else answers[-1].startswith(b"v=")
        assert _metadata_ok(w)  # Kafka requests again after the raw exchange
        assert "User:bob" in _principals(sasl)


def test_raw_token_flow_with_a_wrong_password_closes(sasl: MockCluster) -> None:
    with SaslWire(_sasl_port(sasl)) as w:
        w.handshake("PLAIN", 0)
        token = b"\x00alice\x00wrong!"
        w.sock.sendall(struct.pack(">i", len(token)) + token)
        assert w.closed_by_peer()


def test_only_api_versions_and_sasl_before_authentication(sasl: MockCluster) -> None:
    with SaslWire(_sasl_port(sasl)) as w:
        w.call(18, 0, AV.ApiVersionsRequest())
        w.send(3, 12, MD.MetadataRequest(topics=None))
        assert w.closed_by_peer()
    with SaslWire(_sasl_port(sasl)) as w:  # SaslAuthenticate before a handshake
        w.send(36, 2, api.request_module(36).SaslAuthenticateRequest(auth_bytes=b"\x00alice\x00alice-secret"))
        assert w.closed_by_peer()


@pytest.mark.parametrize(("mechanism", "user", "password", "message"), [
    ("PLAIN", "alice", "wrong", "Authentication failed: Invalid username or password"),
    ("PLAIN", "nobody", "x", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", "alice", "wrong", "Authentication failed: Invalid user credentials"),
    ("SCRAM-SHA-512", "nobody", "x", "Authentication failed: Invalid user credentials"),
])
def test_failed_authentication_answers_then_closes(sasl: MockCluster, mechanism: str, user: str, password: str,
                                                   message: str) -> None:
    with SaslWire(_sasl_port(sasl)) as w:
        w.handshake(mechanism)
        last = w.authenticate(mechanism, user, password)[-1]
        assert last.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert last.error_message == message
        assert w.closed_by_peer()


def test_unknown_mechanism_lists_the_enabled_ones_then_closes(sasl: MockCluster) -> None:
    with SaslWire(_sasl_port(sasl)) as w:
        hs = w.handshake("GSSAPI", 1)
        assert hs.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM and hs.mechanisms == MECHANISMS
        assert w.closed_by_peer()


def test_sasl_enabled_mechanisms_limits_what_is_accepted() -> None:
    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", sasl_users={"alice": "s"},
                     config={"sasl.enabled.mechanisms": "SCRAM-SHA-512"}) as c:
        with SaslWire(c.server(0).port) as w:
            hs = w.handshake("PLAIN", 0)
            assert hs.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM and hs.mechanisms == ["SCRAM-SHA-512"]
        with SaslWire(c.server(0).port) as w:
            w.login("SCRAM-SHA-512", "alice", "s")


def test_sasl_apis_on_a_listener_without_sasl_are_an_illegal_state(sasl: MockCluster) -> None:
    with SaslWire(sasl.server(0).ports["PLAINTEXT"]) as w:
        for version in (0, 1):
            assert w.handshake("PLAIN", version).error_code == ErrorCode.ILLEGAL_SASL_STATE
        last = w.authenticate("PLAIN", "alice", "alice-secret", 1)[-1]
        assert last.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert _metadata_ok(w)  # the connection stays open


def test_authenticate_again_after_success_is_an_illegal_state(sasl: MockCluster) -> None:
    with SaslWire(_sasl_port(sasl)) as w:
        w.login("PLAIN", "alice", "alice-secret")
        again = w.authenticate("PLAIN", "alice", "alice-secret", 1)[-1]
        assert again.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert _metadata_ok(w)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_reauthentication_on_the_same_connection(sasl: MockCluster, mechanism: str) -> None:
    with SaslWire(_sasl_port(sasl)) as w:
        w.login(mechanism, "alice", "alice-secret")
        assert _metadata_ok(w)
        again = w.login(mechanism, "alice", "alice-secret", 1)
        assert again.session_lifetime_ms == REAUTH_MS
        assert _metadata_ok(w)


def test_reauthentication_as_someone_else_fails_and_closes(sasl: MockCluster) -> None:
    with SaslWire(_sasl_port(sasl)) as w:
        w.login("PLAIN", "alice", "alice-secret")
        w.handshake("PLAIN")
        last = w.authenticate("PLAIN", "bob", "bob-secret")[-1]
        assert last.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert last.error_message == "Cannot change principals during re-authentication from User:alice: User:bob"
        assert w.closed_by_peer()


def test_reauthentication_with_another_mechanism_is_refused(sasl: MockCluster) -> None:
    with SaslWire(_sasl_port(sasl)) as w:
        w.login("PLAIN", "alice", "alice-secret")
        hs = w.handshake("SCRAM-SHA-256")
        assert hs.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM and hs.mechanisms == ["PLAIN"]
        assert w.closed_by_peer()


def test_an_expired_session_closes_on_the_next_request_unless_reauthenticated() -> None:
    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", sasl_users={"alice": "s"},
                     config={"connections.max.reauth.ms": 300}) as c:
        with SaslWire(c.server(0).port) as w:
            assert w.login("SCRAM-SHA-256", "alice", "s").session_lifetime_ms == 300
            time.sleep(0.2)
            w.login("SCRAM-SHA-256", "alice", "s")  # re-authenticated in time: a new session
            time.sleep(0.2)
            assert _metadata_ok(w)  # 0.4 s after the first login, 0.2 s into the second session
            time.sleep(0.2)
            w.send(3, 12, MD.MetadataRequest(topics=None))
            assert w.closed_by_peer()


def test_without_reauth_ms_sessions_do_not_expire() -> None:
    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", sasl_users={"alice": "s"}) as c:
        with SaslWire(c.server(0).port) as w:
            assert w.login("PLAIN", "alice", "s").session_lifetime_ms == 0
            time.sleep(0.1)
            assert _metadata_ok(w)
