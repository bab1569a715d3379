"""The pure configuration rewriting (mockbroker.redirect.rewrite): where the bootstrap servers and the registry
URL go, which security keys are dropped, what is kept, and that the caller's dict is never changed."""

from __future__ import annotations

from mockbroker.redirect import rewrite

MOCK = "127.0.0.1:1111,127.0.0.1:2222"


def test_confluent_positional_conf() -> None:
    conf = {"bootstrap.servers": "kafka.prod:9092", "security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN",
            "ssl.ca.location": "/ca.pem", "enable.ssl.certificate.verification": "false", "group.id": "g",
            "enable.idempotence": True}
    done = rewrite.confluent((conf,), {"logger": "log"}, MOCK)
    assert done.args == ({"bootstrap.servers": MOCK, "group.id": "g", "enable.idempotence": True},)
    assert done.kwargs == {"logger": "log"}
    assert done.dropped == ("security.protocol", "sasl.mechanisms", "ssl.ca.location",
                            "enable.ssl.certificate.verification")
    assert done.describe() == (f"kafka.prod:9092 -> {MOCK} (dropped security.protocol, sasl.mechanisms, "
                               "ssl.ca.location, enable.ssl.certificate.verification)")
    assert conf["security.protocol"] == "SASL_SSL"  # the caller's dict is untouched


def test_confluent_keywords_and_aliases() -> None:
    done = rewrite.confluent((), {"metadata.broker.list": "old:9092", "oauth_cb": print, "acks": "all"}, MOCK)
    assert done.args == () and done.kwargs == {"acks": "all", "bootstrap.servers": MOCK}
    assert done.named == "old:9092" and done.dropped == ("oauth_cb",)
    # a conf dict and servers in the keywords too (confluent-kafka merges them): neither survives
    done = rewrite.confluent(({"bootstrap.servers": "a:1"},), {"bootstrap.servers": "b:2", "sasl.password": "x"}, MOCK)
    assert done.args == ({"bootstrap.servers": MOCK},) and done.kwargs == {}
    assert done.named == "a:1,b:2" and done.dropped == ("sasl.password",)


def test_confluent_conf_by_keyword() -> None:
    done = rewrite.confluent((), {"producer_conf": {"bootstrap.servers": "p:1", "ssl.key.location": "k"},
                                  "max_workers": 2}, MOCK)
    assert done.kwargs == {"producer_conf": {"bootstrap.servers": MOCK}, "max_workers": 2}
    assert done.dropped == ("ssl.key.location",)


def test_no_bootstrap_named() -> None:
    assert rewrite.confluent(({},), {}, MOCK).describe() == f"(no bootstrap servers) -> {MOCK}"


def test_python_keywords() -> None:
    kwargs = {"bootstrap_servers": ["a:1", "b:2"], "security_protocol": "SSL", "ssl_cafile": "/ca",
              "sasl_mechanism": "PLAIN", "client_id": "app", "acks": "all"}
    done = rewrite.python(("orders", "payments"), kwargs, MOCK)
    assert done.args == ("orders", "payments")
    assert done.kwargs == {"client_id": "app", "acks": "all", "bootstrap_servers": MOCK.split(",")}
    assert done.named == "a:1,b:2" and done.dropped == ("security_protocol", "ssl_cafile", "sasl_mechanism")
    assert kwargs["bootstrap_servers"] == ["a:1", "b:2"]


def test_python_default_servers() -> None:
    done = rewrite.python((), {}, MOCK)
    assert done.named == "localhost" and done.kwargs == {"bootstrap_servers": MOCK.split(",")}


def test_registry() -> None:
    conf = {"url": "https://sr.prod:8081", "basic.auth.user.info": "k:s", "basic.auth.credentials.source":
            "USER_INFO", "ssl.ca.location": "/ca", "bearer.auth.token": "t", "timeout": 5}
    done = rewrite.registry((conf,), {}, "http://127.0.0.1:3333")
    assert done.args == ({"url": "http://127.0.0.1:3333", "timeout": 5},)
    assert done.describe() == ("https://sr.prod:8081 -> http://127.0.0.1:3333 (dropped basic.auth.user.info, "
                               "basic.auth.credentials.source, ssl.ca.location, bearer.auth.token)")
    assert rewrite.registry((), {"conf": {"url": "x"}}, "http://m").kwargs == {"conf": {"url": "http://m"}}
    assert rewrite.registry((), {}, "http://m").kwargs == {}  # no conf: left for the client to refuse


def test_what_counts_as_security() -> None:
    assert all(map(rewrite.confluent_security, ["security.protocol", "sasl.oauthbearer.method", "ssl_engine_id",
                                                "https.ca.location", "enable.sasl.oauthbearer.unsecure.jwt"]))
    assert not any(map(rewrite.confluent_security, ["client.id", "group.id", "socket.timeout.ms", "acks"]))
    assert all(map(rewrite.python_security, ["security_protocol", "ssl_context", "sasl_oauth_token_provider"]))
    assert not any(map(rewrite.python_security, ["client_id", "api_version", "connections_max_idle_ms"]))
