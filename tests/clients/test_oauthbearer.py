"""SASL/OAUTHBEARER (KIP-255) with real clients on a SASL_PLAINTEXT listener: confluent-kafka (librdkafka's
unsecured JWT, ``enable.sasl.oauthbearer.unsecure.jwt``), kafka-python and aiokafka (token providers that
build an unsecured JWT) produce and consume as ``User:<sub>``; ACLs apply to that principal; refused
tokens (expired, no sub, missing scope, malformed) reach each client as Kafka's authentication error;
librdkafka re-authenticates (KIP-368) again and again on one connection."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer

from mockbroker.cluster import MockCluster
from mockbroker.server.oauthbearer import unsecured_jwt
from tests.clients.round_trip import consume_confluent, kafka_python_round_trip

pytestmark = pytest.mark.clients
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture(scope="module")
def oauth() -> Iterator[MockCluster]:
    with MockCluster(brokers=2, listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                     config={"sasl.enabled.mechanisms": "OAUTHBEARER,PLAIN",
                             "mock.oauthbearer.required.scope": "kafka"}) as c:
        yield c


def _token(**claims: Any) -> str:
    now = int(time.time())
    base: dict[str, Any] = {"sub": "alice", "iat": now, "exp": now + 3600, "scope": ["kafka"]}
    base.update(claims)
    return unsecured_jwt({k: v for k, v in base.items() if v is not None})


def _rdkafka(c: MockCluster, principal: str = "alice", scope: str = "kafka,extra") -> dict[str, Any]:
    return {"bootstrap.servers": c.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": f"principal={principal} scope={scope}"}


def _principals(c: MockCluster) -> set[str]:
    return c.call(lambda: {conn.principal for b in c.brokers for conn in b.connections})


class Provider:
    """kafka-python's and aiokafka's token provider: an unsecured JWT for ``claims``."""

    def __init__(self, **claims: Any) -> None:
        self.value = _token(**claims)

    def token(self) -> str:
        return self.value

    def extensions(self) -> dict[str, str]:
        return {"traceId": "t1"}  # sent and ignored, as by Kafka's unsecured validator


def _kafka_python_provider(**claims: Any) -> Any:
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class KafkaPythonProvider(Provider, AbstractTokenProvider):
        pass

    return KafkaPythonProvider(**claims)


def test_confluent_kafka(oauth: MockCluster) -> None:
    oauth.create_topic("oauth-confluent", 2)
    producer = Producer(_rdkafka(oauth))
    for i in range(20):
        producer.produce("oauth-confluent", f"m{i}".encode())
    assert producer.flush(15) == 0
    assert "User:alice" in _principals(oauth)
    got = consume_confluent(_rdkafka(oauth), "oauth-confluent", 20)
    assert sorted(got) == sorted(f"m{i}".encode() for i in range(20))


def test_kafka_python(oauth: MockCluster, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mockbroker.sasl")
    oauth.create_topic("oauth-kafka-python", 2)
    auth = {"bootstrap_servers": oauth.bootstrap_for("SASL_PLAINTEXT"), "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": _kafka_python_provider(sub="kp")}
    assert kafka_python_round_trip(auth, "oauth-kafka-python") == sorted(f"k{i}".encode() for i in range(10))
    assert "authenticated as User:kp (OAUTHBEARER" in caplog.text  # the clients are closed by now


def test_aiokafka(oauth: MockCluster, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mockbroker.sasl")
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.abc import AbstractTokenProvider

    class AioProvider(AbstractTokenProvider):
        def __init__(self) -> None:
            self.value = _token(sub="aio")

        async def token(self) -> str:
            return self.value

    topic = "oauth-aiokafka"
    oauth.create_topic(topic, 2)
    auth = {"bootstrap_servers": oauth.bootstrap_for("SASL_PLAINTEXT"), "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": AioProvider()}

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**auth)
        await producer.start()
        try:
            for i in range(10):
                await producer.send_and_wait(topic, f"a{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, **auth, auto_offset_reset="earliest", group_id="g-oauth-aio")
        await consumer.start()
        got: list[bytes] = []
        try:
            while len(got) < 10:
                batches = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 20)
                got += [m.value for msgs in batches.values() for m in msgs]
        finally:
            await consumer.stop()
        return got

    assert sorted(asyncio.run(run())) == sorted(f"a{i}".encode() for i in range(10))
    assert "authenticated as User:aio (OAUTHBEARER" in caplog.text


def _confluent_error(config: dict[str, Any]) -> Any:
    errors: list[Any] = []
    producer = Producer({**config, "error_cb": errors.append})
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    return errors[0] if errors else None


@pytest.mark.parametrize(("claims", "status"), [
    ({"exp": int(time.time()) - 60, "iat": int(time.time()) - 120}, '{"status":"invalid_token"}'),
    ({"sub": None}, '{"status":"invalid_token"}'),
    ({"scope": ["other"]}, '{"status":"insufficient_scope", "scope":"kafka"}'),
], ids=["expired", "no-sub", "missing-scope"])
def test_confluent_kafka_refused_tokens(oauth: MockCluster, claims: dict[str, Any], status: str) -> None:
    token = _token(**claims)
    config = {**_rdkafka(oauth), "enable.sasl.oauthbearer.unsecure.jwt": False, "sasl.oauthbearer.config": "",
              "oauth_cb": lambda _config: (token, time.time() + 3600)}
    error = _confluent_error(config)
    assert error is not None and error.code() == KafkaError._AUTHENTICATION
    assert status in error.str()


def test_confluent_kafka_malformed_token(oauth: MockCluster) -> None:
    config = {**_rdkafka(oauth), "enable.sasl.oauthbearer.unsecure.jwt": False, "sasl.oauthbearer.config": "",
              "oauth_cb": lambda _config: ("not-a-jws", time.time() + 3600)}
    error = _confluent_error(config)
    assert error is not None and error.code() == KafkaError._AUTHENTICATION
    assert '{"status":"invalid_token"}' in error.str()


def test_confluent_kafka_unsecured_jwt_without_the_required_scope(oauth: MockCluster) -> None:
    error = _confluent_error(_rdkafka(oauth, scope="read"))
    assert error is not None and error.code() == KafkaError._AUTHENTICATION
    assert '{"status":"insufficient_scope", "scope":"kafka"}' in error.str()


@pytest.mark.parametrize("claims", [{"exp": int(time.time()) - 60}, {"sub": None}, {"scope": []}],
                         ids=["expired", "no-sub", "missing-scope"])
def test_kafka_python_refused_tokens(oauth: MockCluster, claims: dict[str, Any],
                                     caplog: pytest.LogCaptureFixture) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError

    caplog.set_level(logging.WARNING, logger="kafka")
    with pytest.raises(KafkaTimeoutError):
        KafkaProducer(bootstrap_servers=oauth.bootstrap_for("SASL_PLAINTEXT"), security_protocol="SASL_PLAINTEXT",
                      sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=_kafka_python_provider(**claims),
                      bootstrap_timeout_ms=2000)
    assert "SaslAuthenticationFailedError" in caplog.text and '"status":' in caplog.text


def test_acls_apply_to_the_token_principal() -> None:
    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", topics={"orders": 1},
                     config={"sasl.enabled.mechanisms": "OAUTHBEARER", "authorizer.class.name": AUTHORIZER}) as c:
        c.add_acl("TOPIC", "orders", "User:alice", "WRITE")
        ok = Producer({**_rdkafka(c), "bootstrap.servers": c.bootstrap_servers})
        ok.produce("orders", b"from alice")
        assert ok.flush(15) == 0
        results: list[Any] = []
        denied = Producer({**_rdkafka(c, principal="mallory"), "bootstrap.servers": c.bootstrap_servers,
                           "message.timeout.ms": 5000})
        denied.produce("orders", b"from mallory", on_delivery=lambda err, _msg: results.append(err))
        denied.flush(15)
        assert results and results[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        assert c.call(lambda: c.state.partition("orders", 0).high_watermark) == 1


def test_confluent_kafka_reauthenticates() -> None:
    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", topics={"r": 1},
                     config={"sasl.enabled.mechanisms": "OAUTHBEARER", "connections.max.reauth.ms": 2000}) as c:
        errors: list[Any] = []
        producer = Producer({**_rdkafka(c), "bootstrap.servers": c.bootstrap_servers, "error_cb": errors.append})
        sent = 0

        def reauthentications() -> int:
            return c.call(lambda: max((conn.sasl.reauthentications for conn in c.server(0).connections), default=0))

        deadline = time.monotonic() + 30
        while reauthentications() < 3 and time.monotonic() < deadline:  # three re-authentications on one connection
            producer.produce("r", f"{sent}".encode())
            assert producer.flush(10) == 0
            sent += 1
            time.sleep(0.1)
        assert reauthentications() >= 3
        producer.produce("r", b"last")
        assert producer.flush(10) == 0
        per_connection: dict[str, int] = {}
        for entry in c.journal.entries(api="SaslHandshake"):
            per_connection[entry.connection] = per_connection.get(entry.connection, 0) + 1
        assert max(per_connection.values()) >= 4  # the login and three re-authentications, on one connection
        assert not [e for e in c.journal.entries(api="SaslAuthenticate") if e.errors]
        assert not errors
        assert c.call(lambda: c.state.partition("r", 0).high_watermark) == sent + 1


def test_confluent_kafka_refreshes_its_token_before_the_token_bound_session_ends() -> None:
    """Re-authentication off: the token's exp (librdkafka's lifeSeconds) alone bounds the session, as
    in Kafka; librdkafka makes a new token and re-authenticates on the same connection before it ends.
    (A 3-second token is too short: librdkafka re-authenticates with its old token until that expires,
    and would against Kafka too.)"""
    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", topics={"r": 1},
                     config={"sasl.enabled.mechanisms": "OAUTHBEARER"}) as c:
        errors: list[Any] = []
        config = {**_rdkafka(c), "bootstrap.servers": c.bootstrap_servers, "error_cb": errors.append,
                  "sasl.oauthbearer.config": "principal=alice scope=kafka lifeSeconds=6"}
        producer = Producer(config)

        def sessions() -> list[tuple[int, int]]:
            return c.call(lambda: [(conn.sasl.reauthentications, conn.sasl.lifetime_ms)
                                   for conn in c.server(0).connections if conn.sasl.principal])

        deadline, sent = time.monotonic() + 40, 0
        while max((r for r, _ in sessions()), default=0) < 2 and time.monotonic() < deadline:
            producer.produce("r", f"{sent}".encode())
            assert producer.flush(10) == 0
            sent += 1
            time.sleep(0.2)
        assert max(r for r, _ in sessions()) >= 2
        assert all(0 < lifetime <= 6000 for _, lifetime in sessions())  # bounded by the token, not unlimited
        assert not errors
