"""SASL PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 with real clients on a SASL_PLAINTEXT listener:
confluent-kafka, kafka-python, aiokafka and kcat produce then consume; a wrong password gives each
client its authentication error; librdkafka re-authenticates (KIP-368); confluent-kafka's admin API
makes a SCRAM user that then logs in; ``mockbroker serve --sasl-user`` works end to end."""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from mockbroker.cluster import MockCluster
from tests.clients.round_trip import consume_confluent, kafka_python_round_trip

pytestmark = pytest.mark.clients
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
KCAT = shutil.which("kcat")
LISTENERS = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"


@pytest.fixture(scope="module")
def sasl() -> Iterator[MockCluster]:
    with MockCluster(brokers=2, listeners=LISTENERS, sasl_users={"alice": "alice-secret"}) as c:
        yield c


def _bootstrap(c: MockCluster) -> str:
    return c.bootstrap_for("SASL_PLAINTEXT")


def _rdkafka(c: MockCluster, mechanism: str, password: str = "alice-secret", user: str = "alice") -> dict[str, Any]:
    return {"bootstrap.servers": _bootstrap(c), "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password}



def _principals(c: MockCluster) -> set[str]:
    return c.call(lambda: {conn.principal for b in c.brokers for conn in b.connections})


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka(sasl: MockCluster, mechanism: str) -> None:
    topic = f"confluent-{mechanism}"
    sasl.create_topic(topic, 2)
    producer = Producer(_rdkafka(sasl, mechanism))
    for i in range(20):
        producer.produce(topic, f"m{i}".encode())
    assert producer.flush(15) == 0
    assert "User:alice" in _principals(sasl)
    got = consume_confluent(_rdkafka(sasl, mechanism), topic, 20)
    assert sorted(got) == sorted(f"m{i}".encode() for i in range(20))


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_wrong_password(sasl: MockCluster, mechanism: str) -> None:
    errors: list[Any] = []
    producer = Producer({**_rdkafka(sasl, mechanism, "wrong"), "error_cb": errors.append})
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors and errors[0].name() == "_AUTHENTICATION"
    assert "Authentication failed" in errors[0].str()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python(sasl: MockCluster, mechanism: str) -> None:
    topic = f"kafka-python-{mechanism}"
    sasl.create_topic(topic, 2)
    auth = {"bootstrap_servers": _bootstrap(sasl), "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism,
            "sasl_plain_username": "alice", "sasl_plain_password": "alice-secret"}
    assert kafka_python_round_trip(auth, topic) == sorted(f"k{i}".encode() for i in range(10))


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_kafka_python_wrong_password(sasl: MockCluster, mechanism: str, caplog: pytest.LogCaptureFixture) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError

    caplog.set_level(logging.WARNING, logger="kafka")
    with pytest.raises(KafkaTimeoutError):
        KafkaProducer(bootstrap_servers=_bootstrap(sasl), security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism,
                      sasl_plain_username="alice", sasl_plain_password="wrong", bootstrap_timeout_ms=2000)
    assert "SaslAuthenticationFailedError" in caplog.text and "Authentication failed" in caplog.text


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka(sasl: MockCluster, mechanism: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    topic = f"aiokafka-{mechanism}"
    sasl.create_topic(topic, 2)
    auth = {"bootstrap_servers": _bootstrap(sasl), "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism,
            "sasl_plain_username": "alice", "sasl_plain_password": "alice-secret"}

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**auth)
        await producer.start()
        try:
            for i in range(10):
                await producer.send_and_wait(topic, f"a{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, **auth, auto_offset_reset="earliest", group_id=f"g-{topic}")
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


def test_aiokafka_wrong_password(sasl: MockCluster, caplog: pytest.LogCaptureFixture) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaConnectionError

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=_bootstrap(sasl), security_protocol="SASL_PLAINTEXT",
                                    sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice",
                                    sasl_plain_password="wrong")
        try:
            await producer.start()
        finally:
            await producer.stop()

    caplog.set_level(logging.ERROR, logger="aiokafka")
    with pytest.raises(KafkaConnectionError):
        asyncio.run(run())
    assert "SaslAuthenticationFailed: Authentication failed: Invalid user credentials" in caplog.text


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install kcat; .ci/install-clients.sh)")
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kcat(sasl: MockCluster, mechanism: str) -> None:
    topic = f"kcat-{mechanism}"
    sasl.create_topic(topic, 1)
    auth = ["-b", _bootstrap(sasl), "-X", "security.protocol=SASL_PLAINTEXT", "-X", f"sasl.mechanisms={mechanism}",
            "-X", "sasl.username=alice"]
    ok = subprocess.run([KCAT, *auth, "-X", "sasl.password=alice-secret", "-P", "-t", topic], input="one\ntwo\n",
                        capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0, ok.stderr
    out = subprocess.run([KCAT, *auth, "-X", "sasl.password=alice-secret", "-C", "-t", topic, "-o", "beginning", "-e",
                          "-q"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.split() == ["one", "two"], out.stderr
    bad = subprocess.run([KCAT, *auth, "-X", "sasl.password=wrong", "-L", "-m", "5"], capture_output=True, text=True,
                         timeout=30)
    assert bad.returncode != 0 and "Authentication failed" in bad.stderr


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_clients_reauthenticate_before_the_session_expires(client: str) -> None:
    with MockCluster(listeners="SASL_PLAINTEXT://127.0.0.1:0", sasl_users={"alice": "s"}, topics={"r": 1},
                     config={"connections.max.reauth.ms": 1500}) as c:
        if client == "confluent-kafka":
            producer = Producer({"bootstrap.servers": c.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                                 "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice", "sasl.password": "s"})

            def send(value: bytes) -> None:
                producer.produce("r", value)
                assert producer.flush(10) == 0
        else:
            from kafka import KafkaProducer

            kp = KafkaProducer(bootstrap_servers=c.bootstrap_servers, security_protocol="SASL_PLAINTEXT",
                               sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice", sasl_plain_password="s")

            def send(value: bytes) -> None:
                kp.send("r", value).get(10)
        deadline, sent = time.monotonic() + 5, 0  # three session lifetimes on one connection
        while time.monotonic() < deadline:
            send(f"{sent}".encode())
            sent += 1
            time.sleep(0.1)
        per_connection: dict[str, int] = {}
        for entry in c.journal.entries(api="SaslHandshake"):
            per_connection[entry.connection] = per_connection.get(entry.connection, 0) + 1
        assert max(per_connection.values()) >= 3  # the same connection authenticated again and again
        assert not [e for e in c.journal.entries(api="SaslAuthenticate") if e.errors]
        assert c.call(lambda: c.state.partition("r", 0).high_watermark) == sent


def test_a_user_made_with_the_admin_api_logs_in(sasl: MockCluster) -> None:
    admin = AdminClient({"bootstrap.servers": sasl.bootstrap_servers})  # the PLAINTEXT listener
    upsert = UserScramCredentialUpsertion("erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"erin-pw")
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(10)
    described = admin.describe_user_scram_credentials(["erin"])["erin"].result(10)
    info = described.scram_credential_infos[0]
    assert (info.mechanism, info.iterations) == (ScramMechanism.SCRAM_SHA_512, 8192)
    producer = Producer(_rdkafka(sasl, "SCRAM-SHA-512", "erin-pw", "erin"))
    producer.produce("erin-topic", b"hello")
    assert producer.flush(15) == 0
    assert "User:erin" in _principals(sasl)
    delete = UserScramCredentialDeletion("erin", ScramMechanism.SCRAM_SHA_512)
    for future in admin.alter_user_scram_credentials([delete]).values():
        future.result(10)
    with pytest.raises(Exception, match=r"RESOURCE_NOT_FOUND|does not exist"):
        admin.describe_user_scram_credentials(["erin"])["erin"].result(10)


def test_serve_with_listeners_and_sasl_users() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--listeners", LISTENERS,
                             "--sasl-user", "alice:alice-secret", "--topic", "cli:1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline().strip() for _ in range(3)]
        assert lines[0].startswith("bootstrap.servers=") and lines[1].startswith("listener.PLAINTEXT=")
        assert lines[2].startswith("listener.SASL_PLAINTEXT=")
        bootstrap = lines[2].split("=", 1)[1]
        producer = Producer({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                             "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice",
                             "sasl.password": "alice-secret"})
        producer.produce("cli", b"x")
        assert producer.flush(15) == 0
    finally:
        proc.terminate()
        proc.wait(10)

