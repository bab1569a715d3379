"""Kafka's secured OAUTHBEARER validator (mockbroker.server.oauthbearer_jwks), unit by unit: tokens from the mock
OIDC provider (mockbroker.oidc, not listening: ``issue`` signs in Python) checked against its JWKS read from a
``file:`` URL, each check of Kafka's ValidatorAccessTokenValidator (jose4j) in turn, the settings read per
listener, the JWKS refresh a token with an unknown ``kid`` starts (once a minute per kid); then the SASL
exchange over the wire."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from mockbroker import jws
from mockbroker.cluster import MockCluster
from mockbroker.oidc import OidcProvider
from mockbroker.server.oauthbearer import InvalidToken, unsecured_jwt
from mockbroker.server.oauthbearer_jwks import JwksKeys, SecuredOptions, validate_signed


def _now_ms() -> int:
    """Now, when a test validates (tokens are issued at the wall clock's now, with nbf = iat = now)."""
    return int(time.time() * 1000)


def _keys(provider: OidcProvider, tmp_path: Path) -> JwksKeys:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(provider.jwks()))
    keys = JwksKeys(path.as_uri(), 0)
    asyncio.run(keys.fetch())
    return keys


async def _keys_async(provider: OidcProvider, tmp_path: Path) -> JwksKeys:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(provider.jwks()))
    keys = JwksKeys(path.as_uri(), 0)
    await keys.fetch()
    return keys


def _options(**changes: Any) -> SecuredOptions:
    settings: dict[str, Any] = {"jwks_url": "file:///jwks.json", "audience": ("kafka",), "issuer": "https://idp"}
    settings.update(changes)
    return SecuredOptions(**settings)


@pytest.fixture(scope="module")
def provider() -> OidcProvider:
    return OidcProvider(issuer="https://idp")


@pytest.mark.parametrize("alg", ["RS256", "PS384", "ES256", "ES512"])
def test_a_good_token_of_each_algorithm(tmp_path: Path, alg: str) -> None:
    provider = OidcProvider(issuer="https://idp", algorithm=alg, scope="read write")
    token = validate_signed(provider.issue("app"), _options(), _keys(provider, tmp_path), _now_ms())
    assert token.principal == "app" and token.scope == {"read write"}  # a string claim: one scope, as Kafka
    assert abs(token.expires_at_ms - (_now_ms() + 3_600_000)) < 5_000


@pytest.mark.parametrize(("claims", "options", "reason"), [
    ({"exp": None}, {}, "No Expiration Time (exp) claim present."),
    ({"iat": None}, {}, "No Issued At (iat) claim present."),
    ({"exp": -31, "iat": -100}, {}, "The JWT is no longer valid"),  # (seconds from now)
    ({"nbf": 31}, {}, "The JWT is not yet valid"),
    ({"aud": None}, {}, "No Audience (aud) claim present."),
    ({"aud": ["a", "b"]}, {}, "Audience (aud) claim ['a', 'b'] doesn't contain an acceptable identifier"),
    ({"iss": None}, {}, "No Issuer (iss) claim present but was expecting https://idp"),
    ({"sub": None}, {}, "sub value must be non-null"),
    ({"sub": "  "}, {}, "sub value must not contain only whitespace"),
    ({"scope": ["a", "a"]}, {}, "scope value must not contain duplicates - a already present"),
    ({}, {"sub_claim": "client"}, "client value must be non-null"),
], ids=["no-exp", "no-iat", "expired", "not-yet-valid", "no-aud", "wrong-aud", "no-iss", "no-sub", "blank-sub",
        "duplicate-scope", "other-sub-claim"])
def test_each_claim_check(provider: OidcProvider, tmp_path: Path, claims: dict[str, Any], options: dict[str, Any],
                          reason: str) -> None:
    now_s = _now_ms() // 1000
    relative = {k: now_s + v if k in ("exp", "iat", "nbf") and v is not None else v for k, v in claims.items()}
    with pytest.raises(InvalidToken) as refused:
        validate_signed(provider.issue("app", **relative), _options(**options), _keys(provider, tmp_path),
                        now_s * 1000)
    assert reason in str(refused.value)
    assert refused.value.challenge() == '{"status":"invalid_token"}'


def test_the_skew_within_bounds_and_no_expectations(provider: OidcProvider, tmp_path: Path) -> None:
    keys = _keys(provider, tmp_path)
    now_s = _now_ms() // 1000
    late = provider.issue("app", exp=now_s - 29, iat=now_s - 100, nbf=None, aud="other", iss="x")
    assert validate_signed(late, _options(audience=(), issuer=None), keys, now_s * 1000).principal == "app"
    with pytest.raises(InvalidToken, match="no longer valid"):
        validate_signed(late, _options(audience=(), issuer=None, skew_s=0), keys, now_s * 1000)


@pytest.mark.parametrize(("token", "reason"), [
    (unsecured_jwt({"sub": "app", "exp": 2**31, "iat": 0}), "Malformed JWT provided"),
    ("", "Empty JWT provided"),
    ("a.b.c.d", "but 4 sections provided"),
    (jws.b64url(b'{"alg":"none"}') + ".e30.c2ln", "'none' is not a permitted algorithm"),
    (jws.b64url(b'{"alg":"HS256"}') + ".e30.c2ln", "HS256 is an unknown, unsupported or unavailable alg"),
], ids=["unsigned", "empty", "four-sections", "alg-none-signed", "hmac"])
def test_tokens_that_are_no_signed_jwt(provider: OidcProvider, tmp_path: Path, token: str, reason: str) -> None:
    with pytest.raises(InvalidToken) as refused:
        validate_signed(token, _options(), _keys(provider, tmp_path), _now_ms())
    assert reason in str(refused.value)


def test_a_bad_signature_and_a_key_of_another_type(tmp_path: Path) -> None:
    provider = OidcProvider(issuer="https://idp")
    keys = _keys(provider, tmp_path)
    provider.set(bad_signature=True)
    with pytest.raises(InvalidToken, match="JWS signature is invalid"):
        validate_signed(provider.issue("app"), _options(), keys, _now_ms())
    provider.reset()
    header, claims, _signature = provider.issue("app").split(".")
    es_header = jws.b64url(json.dumps({**json.loads(jws.b64url_decode(header)), "alg": "ES256"}).encode())
    with pytest.raises(InvalidToken, match="Unable to find a suitable verification key"):  # an RSA kid for ES256
        validate_signed(f"{es_header}.{claims}.{_signature}", _options(), keys, _now_ms())


async def test_an_unknown_kid_refreshes_the_jwks_once_a_minute(tmp_path: Path) -> None:
    provider = OidcProvider(issuer="https://idp")
    keys = await _keys_async(provider, tmp_path)
    assert keys.fetches == 1
    provider.set(algorithm="ES256")  # a new key, not yet in the broker's copy of the JWKS
    (tmp_path / "jwks.json").write_text(json.dumps(provider.jwks()))
    token = provider.issue("app")
    with pytest.raises(InvalidToken, match="Unable to find a suitable verification key"):
        validate_signed(token, _options(), keys, _now_ms())
    for _ in range(50):
        if keys.fetches == 2:
            break
        await asyncio.sleep(0.01)
    assert keys.fetches == 2  # fetched again in the background: the next attempt passes
    assert validate_signed(token, _options(), keys, _now_ms()).principal == "app"
    provider.set(unknown_key=True)
    for _ in range(2):
        with pytest.raises(InvalidToken):
            validate_signed(provider.issue("app"), _options(), keys, _now_ms())
    await asyncio.sleep(0.05)
    assert keys.fetches == 3  # one refresh for that kid, not one per token
    keys.close()


def test_settings_per_listener_and_kafkas_names() -> None:
    config = {"sasl.oauthbearer.jwks.endpoint.url": "https://idp/jwks", "sasl.oauthbearer.expected.audience": "a, b",
              "listener.name.client.oauthbearer.sasl.oauthbearer.clock.skew.seconds": "5",
              "listener.name.client.oauthbearer.sasl.oauthbearer.sub.claim.name": "client_id"}
    client = SecuredOptions.from_config(config, "CLIENT")
    other = SecuredOptions.from_config(config, "OTHER")
    assert client is not None and other is not None
    assert (client.skew_s, client.sub_claim, client.audience) == (5, "client_id", ("a", "b"))
    assert (other.skew_s, other.sub_claim, other.jwks_url) == (30, "sub", "https://idp/jwks")
    assert SecuredOptions.from_config({}, "CLIENT") is None  # no JWKS: Kafka's unsecured validator
    assert SecuredOptions.from_config({}, "CLIENT", "http://127.0.0.1:1/jwks") is not None  # the cluster's provider
    with pytest.raises(ValueError, match="must be at least 0"):
        SecuredOptions.from_config({**config, "sasl.oauthbearer.clock.skew.seconds": "-1"}, "OTHER")


def test_over_the_wire_a_signed_token_logs_in_and_a_refused_one_gets_the_challenge() -> None:
    """The SASL exchange with the secured validator, byte for byte as with the unsecured one: a good token
    gives a session bounded by its exp; a refused one the JSON challenge, then SASL_AUTHENTICATION_FAILED."""
    from mockbroker.errors import ErrorCode
    from mockbroker.protocol import api
    from mockbroker.server.oauthbearer import client_first_message
    from tests.broker.sasl_wire import SaslWire

    auth = api.request_module(36)
    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", oidc={"lifetime_s": 600},
                     config={"sasl.enabled.mechanisms": "OAUTHBEARER",
                             "sasl.oauthbearer.expected.audience": "kafka"}) as c:
        assert c.oidc is not None
        with SaslWire(c.server(0).port) as w:
            assert w.handshake("OAUTHBEARER").error_code == 0
            answer = w.call(36, 2, auth.SaslAuthenticateRequest(auth_bytes=client_first_message(
                c.oidc.issue("app"), "app")))
            assert answer.error_code == 0 and answer.auth_bytes == b""
            assert 590_000 < answer.session_lifetime_ms <= 600_000  # the token's exp
        c.oidc.set(audience="billing")
        with SaslWire(c.server(0).port) as w:
            assert w.handshake("OAUTHBEARER").error_code == 0
            first = w.call(36, 2, auth.SaslAuthenticateRequest(auth_bytes=client_first_message(c.oidc.issue("app"))))
            assert first.error_code == 0 and first.auth_bytes == b'{"status":"invalid_token"}'
            last = w.call(36, 2, auth.SaslAuthenticateRequest(auth_bytes=b"\x01"))
            assert last.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert last.error_message == '{"status":"invalid_token"}'
            assert w.closed_by_peer()
