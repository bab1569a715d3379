"""mock_kafka's scopes: what it patches is restored on exit (also when the body raises), a client made after
exit goes where it names, scopes nest (each producer lands in its scope's cluster), a client made on another
thread is redirected, the INFO line names the redirected classes, and bad arguments get one line."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading

import aiokafka
import confluent_kafka
import confluent_kafka.admin
import confluent_kafka.aio
import kafka
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from mockbroker import mock_kafka
from mockbroker.cluster import MockCluster
from mockbroker.redirect import active_cluster
from tests.mock_kafka import app_orders

pytestmark = pytest.mark.clients

# the originals, kept in a dict: a module global bound to one (like app_orders.Producer) is swapped while active
ORIGINAL = {"Producer": confluent_kafka.Producer, "Consumer": confluent_kafka.Consumer,
            "ShareConsumer": confluent_kafka.ShareConsumer}
PRODUCER = confluent_kafka.Producer  # this module's own global: swapped too, and restored
INITS = {cls: cls.__dict__["__init__"] for cls in (
    kafka.KafkaProducer, kafka.KafkaConsumer, kafka.KafkaAdminClient, aiokafka.AIOKafkaProducer,
    aiokafka.AIOKafkaConsumer, confluent_kafka.SerializingProducer, confluent_kafka.admin.AdminClient,
    confluent_kafka.aio.AIOProducer, SchemaRegistryClient)}


def records(cluster: MockCluster, topic: str) -> int:
    return cluster.call(lambda: sum(p.high_watermark for p in cluster.state.topics[topic].partitions)
                        if topic in cluster.state.topics else 0)


def produce(topic: str, bootstrap: str = app_orders.BOOTSTRAP) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    producer.produce(topic, b"x")
    assert producer.flush(20) == 0


def assert_restored() -> None:
    for name, original in ORIGINAL.items():
        assert getattr(confluent_kafka, name) is original and getattr(confluent_kafka.cimpl, name) is original
    assert app_orders.Producer is ORIGINAL["Producer"] and app_orders.Consumer is ORIGINAL["Consumer"]
    assert PRODUCER is ORIGINAL["Producer"]
    for cls, init in INITS.items():
        assert cls.__dict__["__init__"] is init, cls


def test_restored_on_exit_and_swapped_while_active() -> None:
    with mock_kafka(schema_registry=False):
        swapped = confluent_kafka.Producer
        assert swapped is not ORIGINAL["Producer"] and issubclass(swapped, ORIGINAL["Producer"])
        assert app_orders.Producer is swapped and PRODUCER is swapped  # names bound before activation
        assert confluent_kafka.cimpl.Consumer is confluent_kafka.Consumer is not ORIGINAL["Consumer"]
        assert kafka.KafkaProducer.__dict__["__init__"] is not INITS[kafka.KafkaProducer]
    assert_restored()


def test_restored_when_the_body_raises() -> None:
    with pytest.raises(ZeroDivisionError), mock_kafka(schema_registry=False):
        _ = 1 / 0
    assert_restored()

    @mock_kafka(schema_registry=False)
    def fails() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        fails()
    assert_restored()


def test_a_client_made_after_exit_goes_where_it_names(caplog: pytest.LogCaptureFixture) -> None:
    with mock_kafka(schema_registry=False):
        pass
    caplog.set_level(logging.DEBUG, logger="mockbroker.mock_kafka")
    with pytest.raises(kafka.errors.KafkaTimeoutError, match=r"Unable to bootstrap from 127\.0\.0\.1:1$"):
        kafka.KafkaProducer(bootstrap_servers="127.0.0.1:1", bootstrap_timeout_ms=500)  # nothing listens there
    with MockCluster() as plain:
        produce("named", plain.bootstrap_servers)
        assert records(plain, "named") == 1
    assert not [r for r in caplog.records if r.name == "mockbroker.mock_kafka"]  # nothing redirected


def test_scopes_nest() -> None:
    with mock_kafka(schema_registry=False) as outer:
        produce("first")
        with mock_kafka(schema_registry=False) as inner:
            produce("second")
            assert active_cluster() is inner
        produce("third")
        assert active_cluster() is outer
        assert confluent_kafka.Producer is not ORIGINAL["Producer"]  # still patched for the outer scope
        assert [records(outer, t) for t in ("first", "second", "third")] == [1, 0, 1]
        assert [records(inner, t) for t in ("first", "second", "third")] == [0, 1, 0]
    assert_restored()


def test_a_client_made_on_another_thread_is_redirected() -> None:
    failures: list[BaseException] = []

    def work() -> None:
        try:
            app_orders.produce_kafka_python("from-thread", [b"t"])
        except BaseException as exc:
            failures.append(exc)

    with mock_kafka(schema_registry=False) as cluster:
        thread = threading.Thread(target=work)
        thread.start()
        thread.join(30)
        assert not thread.is_alive() and not failures
        assert records(cluster, "from-thread") == 1


def test_the_info_line_names_the_redirected_classes(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mockbroker.mock_kafka")
    mocked = mock_kafka()
    with mocked as cluster:
        bootstrap, registry = cluster.bootstrap_servers, cluster.schema_registry_url
    lines = [r.getMessage() for r in caplog.records if r.name == "mockbroker.mock_kafka"]
    assert len(lines) == 1
    line = lines[0]
    assert line.startswith("mock_kafka: redirecting confluent_kafka.Producer, confluent_kafka.Consumer")
    for name in ("confluent_kafka.admin.AdminClient", "kafka.KafkaProducer", "aiokafka.AIOKafkaConsumer"):
        assert name in line
    assert f" to {bootstrap}; schema registry clients " in line
    assert "confluent_kafka.schema_registry.SchemaRegistryClient" in line
    assert line.endswith(f"to {registry}")
    assert all(name in line for name in mocked.redirected) and len(mocked.redirected) == 17


def test_without_a_registry_the_line_says_so(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mockbroker.mock_kafka")
    mocked = mock_kafka(schema_registry=False)
    with mocked as cluster:
        assert cluster.schema_registry_url is None
    assert caplog.records[-1].getMessage().endswith("schema registry clients not redirected (schema_registry=False)")
    assert not any("schema_registry" in name for name in mocked.redirected)


def test_each_redirected_construction_logs_a_debug_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mockbroker.mock_kafka")
    with mock_kafka(topics={"orders": 1}) as cluster:
        app_orders.produce_confluent("orders", [b"x"])
        bootstrap = cluster.bootstrap_servers
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert debug == [f"mock_kafka: confluent_kafka.Producer kafka.prod.internal:9092 -> {bootstrap} "
                     "(dropped security.protocol, sasl.mechanism, sasl.username, sasl.password, ssl.ca.location)"]


def test_bad_arguments_get_one_line() -> None:
    with pytest.raises(TypeError, match=r"^mock_kafka\(\) got an unexpected keyword argument 'topic' "
                                        r"\(did you mean 'topics'\?\)$"):
        mock_kafka(topic={"orders": 1})
    with pytest.raises(TypeError, match="did you mean 'brokers'"):
        mock_kafka(broker=3)
    with pytest.raises(TypeError, match="keyword arguments only"):
        mock_kafka(3)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="not the class"):
        mock_kafka(type("Suite", (), {}))
    with pytest.raises(ValueError, match="schema_registry must be True, False or a port"):
        mock_kafka(schema_registry="yes")
    with pytest.raises(TypeError, match="pass brokers to its MockCluster"):
        mock_kafka(cluster=MockCluster(), brokers=2)
    with pytest.raises(RuntimeError, match="not active here"):
        _ = mock_kafka().cluster


def test_the_cluster_keyword_redirects_to_a_running_cluster() -> None:
    with MockCluster(topics={"kept": 1}) as running:
        with mock_kafka(cluster=running, schema_registry=False) as got:
            assert got is running
            produce("kept")
        assert running.brokers  # left running
        produce("kept", running.bootstrap_servers)
        assert records(running, "kept") == 2
    assert_restored()


def test_import_mockbroker_stays_cheap() -> None:
    check = ("import sys, mockbroker\n"
             "assert 'mockbroker.redirect' not in sys.modules and 'mockbroker.cluster' not in sys.modules\n"
             "from mockbroker import mock_kafka\n"
             "from mockbroker.redirect import MockKafka\n"
             "assert isinstance(mock_kafka, MockKafka) and mockbroker.mock_kafka is mock_kafka\n"
             "assert 'confluent_kafka' not in sys.modules  # the libraries load when activated\n")
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_cluster_without_a_plaintext_listener_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^mock_kafka: the cluster has no PLAINTEXT listener \(listeners: "
                                         r"SASL_PLAINTEXT=SASL_PLAINTEXT\)"):
        with mock_kafka(listeners="SASL_PLAINTEXT://127.0.0.1:0", sasl_users={"alice": "pw"},
                        config={"sasl.enabled.mechanisms": "PLAIN"}, schema_registry=False):
            pass
    assert_restored()
    with mock_kafka(listeners="SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0", sasl_users={"alice": "pw"},
                    config={"sasl.enabled.mechanisms": "PLAIN"}, schema_registry=False) as cluster:
        produce("through-plaintext")  # the second listener, the PLAINTEXT one
        assert records(cluster, "through-plaintext") == 1
