"""DescribeUserScramCredentials v0 and AlterUserScramCredentials v0 over the wire, a user made by the
admin API logging in with SCRAM, and no credential ever reaching the logs or the journal."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from tests.broker.sasl_wire import SaslWire
from tests.broker.wire import WireClient

DESC, ALTER = api.request_module(50), api.request_module(51)
SHA256, SHA512 = 1, 2


@pytest.fixture
def scram() -> Iterator[MockCluster]:
    with MockCluster(listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                     sasl_users={"alice": "alice-secret"}) as c:
        yield c


def _describe(c: MockCluster, names: list[str] | None) -> list[tuple[str, int, str | None, list[tuple[int, int]]]]:
    body = DESC.DescribeUserScramCredentialsRequest(users=None if names is None else
                                                    [DESC.UserName(name=n) for n in names])
    with WireClient(c.server(0).ports["PLAINTEXT"]) as w:
        resp = w.call(50, 0, body)
    assert resp.error_code == 0
    return [(r.user, r.error_code, r.error_message, [(i.mechanism, i.iterations) for i in r.credential_infos])
            for r in resp.results]


def _upsert(name: str, mechanism: int, password: str, iterations: int = 4096, salt: bytes | None = None) -> object:
    salt = salt or os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256" if mechanism == SHA256 else "sha512", password.encode(), salt, iterations)
    return ALTER.ScramCredentialUpsertion(name=name, mechanism=mechanism, iterations=iterations, salt=salt,
                                          salted_password=salted)


def _alter(c: MockCluster, deletions: list[tuple[str, int]] = (), upsertions: list[object] = ()) -> list[tuple]:
    body = ALTER.AlterUserScramCredentialsRequest(
        deletions=[ALTER.ScramCredentialDeletion(name=n, mechanism=m) for n, m in deletions],
        upsertions=list(upsertions))
    with WireClient(c.server(0).ports["PLAINTEXT"]) as w:
        resp = w.call(51, 0, body)
    return [(r.user, r.error_code, r.error_message) for r in resp.results]


def test_describe_all_and_named_users(scram: MockCluster) -> None:
    assert _describe(scram, None) == [("alice", 0, None, [(SHA256, 4096), (SHA512, 4096)])]
    assert _describe(scram, []) == _describe(scram, None)
    assert _describe(scram, ["alice", "ghost", "alice"]) == [
        ("alice", ErrorCode.DUPLICATE_RESOURCE,
         "Cannot describe SCRAM credentials for the same user twice in a single request: alice", []),
        ("ghost", ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: ghost", []),
    ]


def test_a_user_created_by_the_admin_api_logs_in_with_scram(scram: MockCluster) -> None:
    assert _alter(scram, upsertions=[_upsert("carol", SHA256, "carol-pw", 8192)]) == [("carol", 0, None)]
    assert _describe(scram, ["carol"]) == [("carol", 0, None, [(SHA256, 8192)])]
    with SaslWire(scram.server(0).ports["SASL_PLAINTEXT"]) as w:
        w.login("SCRAM-SHA-256", "carol", "carol-pw")
    with SaslWire(scram.server(0).ports["SASL_PLAINTEXT"]) as w:  # only the mechanism it was given
        w.handshake("SCRAM-SHA-512")
        refused = w.authenticate("SCRAM-SHA-512", "carol", "carol-pw")[-1]
        assert refused.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert _alter(scram, upsertions=[_upsert("carol", SHA512, "carol-512")]) == [("carol", 0, None)]
    with SaslWire(scram.server(0).ports["SASL_PLAINTEXT"]) as w:
        w.login("SCRAM-SHA-512", "carol", "carol-512")


def test_deletion_removes_the_login(scram: MockCluster) -> None:
    assert _alter(scram, deletions=[("alice", SHA512)]) == [("alice", 0, None)]
    assert _describe(scram, ["alice"]) == [("alice", 0, None, [(SHA256, 4096)])]
    with SaslWire(scram.server(0).ports["SASL_PLAINTEXT"]) as w:
        w.handshake("SCRAM-SHA-512")
        assert w.authenticate("SCRAM-SHA-512", "alice", "alice-secret")[-1].error_code == \
            ErrorCode.SASL_AUTHENTICATION_FAILED
    assert _alter(scram, deletions=[("alice", SHA512)]) == [
        ("alice", ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")]


def test_alter_refusals(scram: MockCluster) -> None:
    results = _alter(scram, deletions=[("ghost", SHA256), ("", SHA256)], upsertions=[
        _upsert("few", SHA256, "p", 4095), _upsert("many", SHA512, "p", 16385),
        _upsert("odd", 3, "p"), _upsert("twice", SHA256, "p"), _upsert("twice", SHA512, "p"),
        _upsert("ok", SHA512, "p", 16384)])
    assert results == [
        ("ok", 0, None),
        ("ghost", ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        ("", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        ("few", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ("many", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        ("odd", ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        ("twice", ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
    ]
    assert [u for u, *_ in _describe(scram, None)] == ["alice", "ok"]


def test_credentials_never_reach_the_logs_or_the_journal(scram: MockCluster, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    secrets = [b"alice-secret", b"wrong-secret", b"dave-pw"]
    salt = os.urandom(16)
    upsertion = _upsert("dave", SHA512, "dave-pw", 4096, salt)
    secrets += [salt, upsertion.salted_password]
    port = scram.server(0).ports["SASL_PLAINTEXT"]
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        with SaslWire(port) as w:
            w.login(mechanism, "alice", "alice-secret")
        with SaslWire(port) as w:
            w.handshake(mechanism, 0)
            w.raw_exchange(mechanism, "alice", "alice-secret")
        with SaslWire(port) as w:
            w.handshake(mechanism)
            w.authenticate(mechanism, "alice", "wrong-secret")
    assert _alter(scram, upsertions=[upsertion]) == [("dave", 0, None)]
    assert _alter(scram, upsertions=[_upsert("dave", SHA512, "dave-pw", 1, salt)])[0][1] != 0
    with SaslWire(port) as w:
        w.login("SCRAM-SHA-512", "dave", "dave-pw")
    _describe(scram, None)
    journal = scram.journal.to_jsonl()
    assert "SaslAuthenticate" in journal and "AlterUserScramCredentials" in journal
    # user names are not topics: SASL and credential requests carry no facts for rules or the journal
    assert not any(e.about.get("topics") for e in scram.journal.entries() if e.api_key in (17, 36, 50, 51))
    logs = caplog.text + repr(scram.state.credentials) + "".join(repr(r.__dict__) for r in caplog.records)
    assert "Authentication failed" in logs
    for secret in secrets:
        for text in (journal, logs):
            assert secret.decode("latin-1") not in text
            assert secret.hex() not in text and repr(secret)[2:-1] not in text


def test_scram_admin_needs_cluster_rights_when_acls_are_on() -> None:
    """With an authorizer, only a principal allowed ALTER on the cluster changes credentials (DESCRIBE to
    list them); alice, a super user over SASL, may; the anonymous plain connection may not."""
    config = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:alice"}
    with MockCluster(listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                     sasl_users={"alice": "alice-secret"}, config=config) as c:
        assert _alter(c, upsertions=[_upsert("bob", SHA256, "pw")]) == [
            ("bob", ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)]
        with WireClient(c.server(0).ports["PLAINTEXT"]) as w:
            refused = w.call(50, 0, DESC.DescribeUserScramCredentialsRequest(users=None))
        assert refused.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and refused.results == []
        with SaslWire(c.server(0).ports["SASL_PLAINTEXT"]) as w:
            w.login("SCRAM-SHA-256", "alice", "alice-secret")
            allowed = w.call(51, 0, ALTER.AlterUserScramCredentialsRequest(
                deletions=[], upsertions=[_upsert("bob", SHA256, "pw")]))
            assert [(r.user, r.error_code) for r in allowed.results] == [("bob", 0)]
        c.add_acl("CLUSTER", "kafka-cluster", "User:ANONYMOUS", "DESCRIBE")
        assert [u for u, *_ in _describe(c, None)] == ["alice", "bob"]
