"""SASL/OAUTHBEARER with signed tokens, end to end with no identity server: the cluster's mock OIDC provider
(MockCluster(oidc=...)) issues RS256/ES256 tokens for the client credentials grant, and the broker validates them
against the provider's JWKS as Kafka's OAuthBearerValidatorCallbackHandler does.  confluent-kafka fetches its
tokens itself (``sasl.oauthbearer.method=oidc``); kafka-python and aiokafka through a token provider.  Refused tokens
(expired, wrong audience, wrong issuer, unknown kid, bad signature, unsigned) get Kafka's
``{"status":"invalid_token"}``; a provider that refuses gives the client's own error; the clock skew is honoured."""

from __future__ import annotations

import base64
import json
import logging
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer

from mockbroker.cluster import MockCluster
from mockbroker.state.clock import SystemClock
from tests.clients.round_trip import consume_confluent, kafka_python_round_trip

pytestmark = pytest.mark.clients
ISSUER = "https://idp.example"
INVALID = '{"status":"invalid_token"}'


@pytest.fixture(scope="module")
def oidc() -> Iterator[MockCluster]:
    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", oidc={"clients": {"app": "s3cret"}, "issuer": ISSUER},
                     config={"sasl.enabled.mechanisms": "OAUTHBEARER", "sasl.oauthbearer.expected.audience": "kafka",
                             "sasl.oauthbearer.expected.issuer": ISSUER}) as c:
        yield c


@pytest.fixture(autouse=True)
def _provider_reset(oidc: MockCluster) -> Iterator[None]:
    yield
    assert oidc.oidc is not None
    oidc.oidc.reset()


def _rdkafka(c: MockCluster, listener: str = "SASL_PLAINTEXT", **extra: Any) -> dict[str, Any]:
    assert c.oidc is not None
    return {"bootstrap.servers": c.bootstrap_for(listener), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.client.id": "app", "sasl.oauthbearer.client.secret": "s3cret",
            "sasl.oauthbearer.token.endpoint.url": c.oidc.token_url, **extra}


def _first_error(config: dict[str, Any]) -> Any:
    errors: list[Any] = []
    producer = Producer({**config, "error_cb": errors.append})
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    del producer
    return errors[0] if errors else None


def _produces(config: dict[str, Any], topic: str) -> bool:
    producer = Producer({**config, "message.timeout.ms": 8000})
    producer.produce(topic, b"x")
    return producer.flush(10) == 0


def _refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("OAUTHBEARER token refused")]


def test_confluent_kafka_oidc_produces_and_consumes(oidc: MockCluster) -> None:
    oidc.create_topic("oidc-confluent", 2)
    producer = Producer(_rdkafka(oidc))
    for i in range(10):
        producer.produce("oidc-confluent", f"m{i}".encode())
    assert producer.flush(15) == 0
    principals = oidc.call(lambda: {conn.principal for b in oidc.brokers for conn in b.connections})
    assert "User:app" in principals  # the token's sub: the client id
    got = consume_confluent(_rdkafka(oidc), "oidc-confluent", 10)
    assert sorted(got) == sorted(f"m{i}".encode() for i in range(10))
    assert oidc.oidc is not None and oidc.oidc.tokens_issued >= 2


@pytest.mark.parametrize(("change", "reason"), [
    ({"audience": "billing"}, "Audience (aud) claim ['billing'] doesn't contain an acceptable identifier"),
    ({"issuer": "https://other.example"}, "Issuer (iss) claim value (https://other.example) doesn't match"),
    ({"unknown_key": True}, "Unable to find a suitable verification key"),
    ({"bad_signature": True}, "JWS signature is invalid"),
], ids=["wrong-audience", "wrong-issuer", "unknown-kid", "bad-signature"])
def test_confluent_kafka_refused_tokens(oidc: MockCluster, caplog: pytest.LogCaptureFixture,
                                       change: dict[str, Any], reason: str) -> None:
    caplog.set_level(logging.INFO, logger="mockbroker.sasl")
    assert oidc.oidc is not None
    oidc.oidc.set(**change)
    error = _first_error(_rdkafka(oidc))
    assert error is not None and error.code() == KafkaError._AUTHENTICATION, error
    assert f"SASL authentication error: {INVALID}" in error.str()
    assert any(reason in line for line in _refusals(caplog)), _refusals(caplog)


def test_an_unsigned_token_is_refused_when_a_jwks_is_configured(oidc: MockCluster) -> None:
    config = {k: v for k, v in _rdkafka(oidc).items() if not k.startswith("sasl.oauthbearer.")}
    config.update({"enable.sasl.oauthbearer.unsecure.jwt": True, "sasl.oauthbearer.config": "principal=app"})
    error = _first_error(config)
    assert error is not None and error.code() == KafkaError._AUTHENTICATION
    assert INVALID in error.str()


def test_an_expired_token_from_the_provider_is_refused_by_librdkafka_itself(oidc: MockCluster) -> None:
    assert oidc.oidc is not None
    oidc.oidc.set(expired=True)  # librdkafka does not send a token it knows has expired
    error = _first_error(_rdkafka(oidc))
    assert error is not None and "Must supply an unexpired token" in error.str(), error


@pytest.mark.parametrize(("status", "words"), [(401, "invalid_client"), (400, "invalid_request")])
def test_a_refusing_provider_gives_the_clients_error(oidc: MockCluster, status: int, words: str) -> None:
    assert oidc.oidc is not None
    issued_before = oidc.oidc.tokens_issued
    oidc.oidc.set(refuse=status)
    error = _first_error(_rdkafka(oidc))
    assert error is not None, "no error"
    assert error.code() == KafkaError._AUTHENTICATION
    # librdkafka's words, then the provider's answer (RFC 6749's error body)
    assert error.str().startswith(f'Failed to acquire SASL OAUTHBEARER token: {{"error": "{words}"'), error.str()
    assert oidc.oidc.token_requests > 0 and oidc.oidc.tokens_issued == issued_before


def test_a_wrong_client_secret_is_refused_by_the_provider(oidc: MockCluster) -> None:
    error = _first_error(_rdkafka(oidc, **{"sasl.oauthbearer.client.secret": "guess"}))
    assert error is not None and error.code() == KafkaError._AUTHENTICATION
    assert error.str() == ('Failed to acquire SASL OAUTHBEARER token: {"error": "invalid_client", '
                           '"error_description": "unknown client \'app\' or wrong secret"}'), error.str()


class _Behind(SystemClock):
    """The broker's wall clock two minutes behind the client's and the provider's."""

    def now_ms(self) -> int:
        return super().now_ms() - 120_000


def test_the_clock_skew_is_honoured(caplog: pytest.LogCaptureFixture) -> None:
    """The broker's clock is 120 s behind the provider's, so a fresh token's ``nbf`` lies 120 s in its future:
    beyond Kafka's default 30 s of skew on one listener, within the other's 300 s (listener-prefixed)."""
    caplog.set_level(logging.INFO, logger="mockbroker.sasl")
    with MockCluster(listeners="STRICT://127.0.0.1:0,LENIENT://127.0.0.1:0", clock=_Behind(), topics={"t": 1},
                     listener_security_protocol_map="STRICT:SASL_PLAINTEXT,LENIENT:SASL_PLAINTEXT", oidc=True,
                     config={"sasl.enabled.mechanisms": "OAUTHBEARER",
                             "listener.name.lenient.oauthbearer.sasl.oauthbearer.clock.skew.seconds": 300}) as c:
        error = _first_error(_rdkafka(c, "STRICT"))
        assert error is not None and INVALID in error.str(), error
        assert any("The JWT is not yet valid" in line for line in _refusals(caplog)), _refusals(caplog)
        assert _produces(_rdkafka(c, "LENIENT"), "t")


def test_es256_tokens() -> None:
    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", oidc={"algorithm": "ES256"}, topics={"t": 1},
                     config={"sasl.enabled.mechanisms": "OAUTHBEARER"}) as c:
        assert c.oidc is not None
        assert [k["kty"] for k in c.oidc.jwks()["keys"]] == ["EC"]
        assert _produces(_rdkafka(c), "t")


def _fetch_token(url: str, client_id: str = "app", secret: str = "s3cret") -> str:
    basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    request = urllib.request.Request(url, data=b"grant_type=client_credentials", method="POST", headers={
        "Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return str(json.load(answer)["access_token"])


def _kafka_python_provider(url: str) -> Any:
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class OidcTokens(AbstractTokenProvider):
        def token(self) -> str:
            return _fetch_token(url)

    return OidcTokens()


def test_kafka_python_with_a_signed_token(oidc: MockCluster) -> None:
    assert oidc.oidc is not None
    oidc.create_topic("oidc-kafka-python", 1)
    auth = {"bootstrap_servers": oidc.bootstrap_servers, "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": _kafka_python_provider(oidc.oidc.token_url)}
    assert kafka_python_round_trip(auth, "oidc-kafka-python") == sorted(f"k{i}".encode() for i in range(10))


def test_kafka_python_with_an_expired_token(oidc: MockCluster, caplog: pytest.LogCaptureFixture) -> None:
    """kafka-python sends what its provider gives: the broker refuses the expired token."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError

    assert oidc.oidc is not None
    oidc.oidc.set(expired=True)
    caplog.set_level(logging.INFO)
    with pytest.raises(KafkaTimeoutError):
        KafkaProducer(bootstrap_servers=oidc.bootstrap_servers, security_protocol="SASL_PLAINTEXT",
                      sasl_mechanism="OAUTHBEARER", bootstrap_timeout_ms=2000,
                      sasl_oauth_token_provider=_kafka_python_provider(oidc.oidc.token_url))
    assert "SaslAuthenticationFailedError" in caplog.text and INVALID in caplog.text
    assert any("The JWT is no longer valid" in line for line in _refusals(caplog)), _refusals(caplog)


def test_the_unsecured_validator_class_keeps_a_listener_on_unsigned_tokens() -> None:
    unsecured = "org.apache.kafka.common.security.oauthbearer.internals.unsecured." \
                "OAuthBearerUnsecuredValidatorCallbackHandler"
    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", oidc=True, topics={"t": 1},
                     config={"sasl.enabled.mechanisms": "OAUTHBEARER",
                             "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": unsecured}
                     ) as c:
        config = {"bootstrap.servers": c.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
                  "sasl.oauthbearer.config": "principal=alice"}
        assert _produces(config, "t")


@pytest.mark.parametrize(("config", "message"), [
    ({"sasl.server.callback.handler.class": "com.example.MyValidator"},
     "sasl.server.callback.handler.class 'com.example.MyValidator': the mock runs Kafka's own validators only"),
    ({"sasl.oauthbearer.jwks.endpoint.url": "ftp://idp.example/jwks"},
     "contains an invalid protocol (ftp)"),
    ({"sasl.oauthbearer.jwks.endpoint.url": "http://127.0.0.1:9/jwks"},
     "could not fetch the JWKS from http://127.0.0.1:9/jwks"),
    ({"sasl.server.callback.handler.class":
      "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"},
     "The OAuth configuration option sasl.oauthbearer.jwks.endpoint.url value must be non-null"),
], ids=["custom-handler", "bad-scheme", "unreachable-jwks", "validator-without-jwks"])
def test_bad_settings_stop_the_start_in_one_line(config: dict[str, str], message: str) -> None:
    cluster = MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0",
                          config={"sasl.enabled.mechanisms": "OAUTHBEARER", **config})
    with pytest.raises(ValueError) as refused:
        cluster.start_background()
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_a_bad_provider_setting_names_the_nearest() -> None:
    with pytest.raises(ValueError) as refused:
        MockCluster(oidc={"expird": True})
    assert str(refused.value) == "unknown OIDC provider setting 'expird': did you mean 'expired'?"


def test_serve_with_an_oidc_provider() -> None:
    """``mockbroker serve --oidc-port 0`` prints the token and JWKS URLs; a client given the first produces."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--listeners", "SASL_PLAINTEXT://127.0.0.1:0",
                             "--config", "sasl.enabled.mechanisms=OAUTHBEARER", "--topic", "t:1", "--oidc-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        printed = dict(proc.stdout.readline().strip().split("=", 1) for _ in range(3))
        assert set(printed) == {"bootstrap.servers", "sasl.oauthbearer.token.endpoint.url",
                                "sasl.oauthbearer.jwks.endpoint.url"}, printed
        with urllib.request.urlopen(printed["sasl.oauthbearer.jwks.endpoint.url"], timeout=10) as answer:
            assert [key["kty"] for key in json.load(answer)["keys"]] == ["RSA"]
        assert _produces({"bootstrap.servers": printed["bootstrap.servers"], "security.protocol": "SASL_PLAINTEXT",
                          "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
                          "sasl.oauthbearer.client.id": "any", "sasl.oauthbearer.client.secret": "any",
                          "sasl.oauthbearer.token.endpoint.url": printed["sasl.oauthbearer.token.endpoint.url"]}, "t")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_marker_starts_a_provider(pytester: pytest.Pytester) -> None:
    pytester.makepyfile('''
        import pytest

        @pytest.mark.mockbroker(oidc={"audience": "orders"}, config={
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "OAUTHBEARER"})
        def test_provider(mock_cluster):
            assert mock_cluster.oidc.settings["audience"] == "orders"
            assert mock_cluster.oidc.token_url.startswith("http://127.0.0.1:")
    ''')
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.runpytest_inprocess("-p", "no:xdist", "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_the_provider_from_the_control_api() -> None:
    from tests.control.openapi_check import Client

    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", oidc={"clients": {"app": "s3cret"}}, control_port=0,
                     config={"sasl.enabled.mechanisms": "OAUTHBEARER"}) as c:
        assert c.control_url is not None
        api = Client(c.control_url)
        state = api.call("GET", "/oidc").json()
        assert state["token_url"] == _rdkafka(c)["sasl.oauthbearer.token.endpoint.url"]
        assert state["settings"]["clients"] == ["app"]  # no secrets
        assert api.call("POST", "/oidc", {"refuse": 401}).json()["settings"]["refuse"] == 401
        error = _first_error(_rdkafka(c))
        assert error is not None and '"error": "invalid_client"' in error.str(), error
        assert api.call("POST", "/oidc/reset").json()["settings"]["refuse"] is None
        assert api.call("POST", "/oidc", {"unknown_key": True}).status == 200
        error = _first_error(_rdkafka(c))
        assert error is not None and INVALID in error.str(), error
        bad = api.call("POST", "/oidc", {"expird": True})
        assert bad.status == 400 and bad.json()["error"] == ("unknown OIDC provider setting 'expird': "
                                                             "did you mean 'expired'?")
        assert api.call("POST", "/oidc", {"expired": "yes"}).status == 400
    with MockCluster(control_port=0) as c:
        assert c.control_url is not None
        assert Client(c.control_url).call("GET", "/oidc").status == 404


def test_aiokafka_with_a_signed_token(oidc: MockCluster) -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer
    from aiokafka.abc import AbstractTokenProvider

    assert oidc.oidc is not None
    url = oidc.oidc.token_url

    class OidcTokens(AbstractTokenProvider):
        async def token(self) -> str:
            return await asyncio.to_thread(_fetch_token, url)

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=oidc.bootstrap_servers, security_protocol="SASL_PLAINTEXT",
                                    sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=OidcTokens())
        await producer.start()
        try:
            await producer.send_and_wait("oidc-aiokafka", b"x")
        finally:
            await producer.stop()

    oidc.create_topic("oidc-aiokafka", 1)
    asyncio.run(run())
    assert oidc.call(lambda: oidc.state.partition("oidc-aiokafka", 0).high_watermark) == 1
