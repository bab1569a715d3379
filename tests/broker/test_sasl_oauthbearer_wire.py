"""SASL/OAUTHBEARER over the wire (KIP-255, Kafka's unsecured validator): the RFC 7628 client message,
the error challenge ``{"status":...}`` then ``\\x01`` then SASL_AUTHENTICATION_FAILED, each token check,
authzid, the JAAS and mock options, and the KIP-368 session lifetime bounded by the token's ``exp``.
Unit tests of the token checks and the message parser are at the end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.protocol import api
from mockbroker.server.oauthbearer import (
    INVALID_FIRST_MESSAGE,
    InvalidToken,
    ValidatorOptions,
    client_first_message,
    jaas_options,
    parse_client_first,
    unsecured_jwt,
    validate,
)
from mockbroker.state.clock import ManualClock
from tests.broker.sasl_wire import SaslWire

MD, AUTH = api.request_module(3), api.request_module(36)
NOW_S = 1_700_000_000  # the ManualClock's start, in seconds
REAUTH_MS = 60_000
INVALID = '{"status":"invalid_token"}'


@pytest.fixture(scope="module")
def oauth() -> Iterator[MockCluster]:
    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", clock=ManualClock(), topics={"t": 1},
                     sasl_users={"alice": "s"},
                     config={"sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER", "connections.max.reauth.ms": REAUTH_MS,
                             "mock.oauthbearer.required.scope": "kafka"}) as c:
        yield c


def _token(**claims: Any) -> str:
    base: dict[str, Any] = {"sub": "alice", "exp": NOW_S + 3600, "iat": NOW_S, "scope": ["kafka", "other"]}
    base.update(claims)
    return unsecured_jwt({k: v for k, v in base.items() if v is not None})


def _auth(w: SaslWire, message: bytes, version: int = 2) -> Any:
    return w.call(36, version, AUTH.SaslAuthenticateRequest(auth_bytes=message))


def _login(w: SaslWire, token: str, authzid: str = "") -> Any:
    hs = w.handshake("OAUTHBEARER")
    assert hs.error_code == 0 and "OAUTHBEARER" in hs.mechanisms
    return _auth(w, client_first_message(token, authzid))


def _metadata_ok(w: SaslWire) -> bool:
    return w.call(3, 12, MD.MetadataRequest(topics=None)).cluster_id == "mockbroker-cluster"


def _principals(c: MockCluster) -> list[str]:
    return c.call(lambda: sorted(conn.principal for conn in c.server(0).connections))


def test_a_valid_token_authenticates_with_the_session_bounded_by_reauth_ms(oauth: MockCluster) -> None:
    with SaslWire(oauth.server(0).port) as w:
        assert w.handshake("OAUTHBEARER").mechanisms == ["PLAIN", "OAUTHBEARER"]
        answer = _auth(w, client_first_message(_token(), "alice"))
        assert answer.error_code == 0 and answer.auth_bytes == b""
        assert answer.session_lifetime_ms == REAUTH_MS  # sooner than the token's hour
        assert _metadata_ok(w)
        assert "User:alice" in _principals(oauth)


def test_the_token_expiry_bounds_the_session_when_sooner(oauth: MockCluster) -> None:
    with SaslWire(oauth.server(0).port) as w:
        assert _login(w, _token(exp=NOW_S + 5)).session_lifetime_ms == 5000


def test_the_session_expires_with_the_token_even_without_reauth_ms() -> None:
    clock = ManualClock()
    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", clock=clock,
                     config={"sasl.enabled.mechanisms": "OAUTHBEARER"}) as c:
        with SaslWire(c.server(0).port) as w:
            assert _login(w, _token(exp=NOW_S + 10)).session_lifetime_ms == 10_000  # Kafka: exp - now
            assert _metadata_ok(w)
            clock.advance(10_000)
            w.send(3, 12, MD.MetadataRequest(topics=None))
            assert w.closed_by_peer()


@pytest.mark.parametrize(("token", "challenge"), [
    (_token(exp=NOW_S - 1), INVALID),  # expired
    (_token(exp=NOW_S), INVALID),  # "on or after the Expiration Time"
    (_token(exp=None), INVALID),  # no exp
    (_token(exp="soon"), INVALID),  # exp not a number
    (_token(sub=None), INVALID),  # no principal
    (_token(sub="  "), INVALID),  # a blank principal
    (_token(sub=42), INVALID),  # not a string
    (_token(iat=NOW_S + 60), INVALID),  # issued in the future
    (_token(iat=NOW_S + 3600), INVALID),  # in the future and exp not after iat
    (_token(scope=["other"]), '{"status":"insufficient_scope", "scope":"kafka"}'),
    (_token(scope=None), '{"status":"insufficient_scope", "scope":"kafka"}'),
    (_token(scope="kafka other"), '{"status":"insufficient_scope", "scope":"kafka"}'),  # a string is one scope
    ("not-a-jws", INVALID),
    ("e30.e30.", INVALID),  # {} header: no alg
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.", INVALID),  # alg HS256
    (_token() + "c2ln", INVALID),  # a signature
    ("a..b", INVALID),
    ("eyJhbGciOiJub25lIn0.bm90LWpzb24.", INVALID),  # the payload is not JSON
], ids=["expired", "exp-now", "no-exp", "exp-string", "no-sub", "blank-sub", "sub-number", "iat-future",
        "exp-not-after-iat", "missing-scope", "no-scope", "scope-string", "not-jws", "no-alg", "signed-alg",
        "signature", "double-dot", "payload-not-json"])
def test_a_refused_token_gets_the_json_challenge_then_fails(oauth: MockCluster, token: str, challenge: str) -> None:
    with SaslWire(oauth.server(0).port) as w:
        first = _login(w, token)
        assert first.error_code == 0 and first.auth_bytes == challenge.encode()
        last = _auth(w, b"\x01")
        assert last.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and last.error_message == challenge
        assert w.closed_by_peer()


def test_a_new_token_after_the_challenge_may_still_authenticate(oauth: MockCluster) -> None:
    with SaslWire(oauth.server(0).port) as w:
        assert _login(w, _token(exp=NOW_S - 1)).auth_bytes == INVALID.encode()
        again = _auth(w, client_first_message(_token()))  # Kafka's server resets and evaluates it
        assert again.error_code == 0 and again.auth_bytes == b""
        assert _metadata_ok(w)


def test_an_authzid_other_than_the_principal_fails(oauth: MockCluster) -> None:
    with SaslWire(oauth.server(0).port) as w:
        answer = _login(w, _token(), authzid="bob")
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert answer.error_message == ("Authentication failed: Client requested an authorization id (bob) that is "
                                        "different from the token's principal name (alice)")
        assert w.closed_by_peer()


@pytest.mark.parametrize("message", [
    b"n,,auth=Bearer abc",  # no \x01 separators
    b"y,,\x01auth=Bearer abc\x01\x01",  # channel binding flag
    b"n,,\x01auth=Basic abc\x01\x01",  # another scheme
    b"n,,\x01user=alice\x01\x01",  # no auth
    b"\xff\xfe",
], ids=["no-separators", "gs2-y", "basic-scheme", "no-auth", "not-utf8"])
def test_a_malformed_client_message_fails_at_once(oauth: MockCluster, message: bytes) -> None:
    with SaslWire(oauth.server(0).port) as w:
        w.handshake("OAUTHBEARER")
        answer = _auth(w, message)
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert answer.error_message == INVALID_FIRST_MESSAGE
        assert w.closed_by_peer()


def test_raw_v0_flow(oauth: MockCluster) -> None:
    with SaslWire(oauth.server(0).port) as w:
        assert w.handshake("OAUTHBEARER", 0).error_code == 0
        w.sock.sendall(len(msg := client_first_message(_token())).to_bytes(4, "big") + msg)
        assert w._exactly(int.from_bytes(w._exactly(4), "big")) == b""
        assert _metadata_ok(w)


def test_reauthentication_and_a_changed_principal(oauth: MockCluster) -> None:
    with SaslWire(oauth.server(0).port) as w:
        assert _login(w, _token()).error_code == 0
        again = _login(w, _token(exp=NOW_S + 30))
        assert again.error_code == 0 and again.session_lifetime_ms == 30_000
        assert oauth.call(lambda: max(c.sasl.reauthentications for c in oauth.server(0).connections)) >= 1
        other = _login(w, _token(sub="bob"))
        assert other.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert other.error_message == "Cannot change principals during re-authentication from User:alice: User:bob"
        assert w.closed_by_peer()


def test_oauthbearer_is_offered_only_when_enabled() -> None:
    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", sasl_users={"alice": "s"}) as c:
        with SaslWire(c.server(0).port) as w:
            hs = w.handshake("OAUTHBEARER")
            assert hs.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
            assert hs.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
            assert w.closed_by_peer()


def test_listener_jaas_options_win_over_the_mock_keys() -> None:
    jaas = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
            'unsecuredValidatorPrincipalClaimName="user" unsecuredValidatorRequiredScope="write read" '
            'unsecuredValidatorAllowableClockSkewMs="120000";')
    with MockCluster(listeners="CLIENT://127.0.0.1:0", listener_security_protocol_map="CLIENT:SASL_PLAINTEXT",
                     clock=ManualClock(), config={
                         "sasl.enabled.mechanisms": "OAUTHBEARER", "mock.oauthbearer.required.scope": "never",
                         "listener.name.client.oauthbearer.sasl.jaas.config": jaas}) as c:
        with SaslWire(c.server(0).port) as w:  # expired a minute ago: inside the 2 minutes of skew
            token = unsecured_jwt({"user": "carol", "exp": NOW_S - 60, "scope": ["read", "write"]})
            assert _login(w, token).error_code == 0
            assert "User:carol" in _principals(c)
        with SaslWire(c.server(0).port) as w:
            token = unsecured_jwt({"user": "carol", "exp": NOW_S + 60, "scope": ["read"]})
            assert _login(w, token).auth_bytes == b'{"status":"insufficient_scope", "scope":"write"}'


def test_a_negative_clock_skew_is_refused() -> None:
    with pytest.raises(KafkaError, match=r"mock\.oauthbearer\.allowable\.clock\.skew\.ms: value must be at least 0"):
        MockCluster(config={"mock.oauthbearer.allowable.clock.skew.ms": -1})


# -- pure unit tests -------------------------------------------------------------------------------
def test_parse_client_first_reads_authzid_and_ignores_extensions() -> None:
    message = client_first_message("a.b.", authzid="x,y=z", extensions={"traceId": "123"})
    assert parse_client_first(message) == ("x,y=z", "a.b.")
    assert parse_client_first(b"n,,\x01auth=bearer   tok\x01\x01") == ("", "tok")
    with pytest.raises(ValueError, match="Invalid scheme in OAUTHBEARER client first message: Basic"):
        parse_client_first(b"n,,\x01auth=Basic tok\x01\x01")


def test_validate_returns_the_principal_and_expiry() -> None:
    token = validate(_token(scope="kafka"), ValidatorOptions(required_scope="kafka"), NOW_S * 1000)
    assert (token.principal, token.expires_at_ms, token.scope) == ("alice", (NOW_S + 3600) * 1000, {"kafka"})
    with pytest.raises(InvalidToken, match="No principal name in JWT claim: upn"):
        validate(_token(), ValidatorOptions(principal_claim="upn"), NOW_S * 1000)
    with pytest.raises(InvalidToken, match="No expiration time in JWT"):
        validate(_token(exp=None), ValidatorOptions(), NOW_S * 1000)


def test_jaas_options() -> None:
    assert jaas_options('M required a="1 2" b=3;') == {"a": "1 2", "b": "3"}
    assert jaas_options(None) == {}
    with pytest.raises(ValueError, match="unsecuredValidatorAllowableClockSkewMs must be a number"):
        ValidatorOptions.from_config({"listener.name.x.oauthbearer.sasl.jaas.config":
                                      'M required unsecuredValidatorAllowableClockSkewMs="soon";'}, "X")
