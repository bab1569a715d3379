"""The pure half of mock_kafka: how one client's configuration is pointed at the mock cluster.

Three styles of configuration, one function each; each returns the rewritten arguments and what it did
(:class:`Rewrite`: what the client named, where it goes, which keys were dropped), and never changes the
caller's dict:

- ``confluent``: confluent-kafka's clients (a librdkafka config dict, first positional argument or
  ``conf=`` / ``producer_conf=`` / ``consumer_conf=``, plus config keys passed as keyword arguments):
  ``bootstrap.servers`` (and its alias ``metadata.broker.list``) -> the cluster's; ``security.protocol``,
  ``sasl.*``, ``ssl.*``, ``ssl_*``, ``https.*``, ``enable.ssl.certificate.verification``,
  ``enable.sasl.oauthbearer.unsecure.jwt`` and ``oauth_cb`` dropped.
- ``python``: kafka-python's and aiokafka's keyword arguments: ``bootstrap_servers`` -> the cluster's (a
  list of ``host:port``); ``security_protocol``, ``sasl_*`` and ``ssl_*`` dropped.
- ``registry``: confluent-kafka's Schema Registry clients: ``url`` -> the mock registry's;
  ``basic.auth.*``, ``bearer.auth.*`` and ``ssl.*`` dropped.

The mock cluster's default listener is PLAINTEXT, so the client's security settings are dropped for it to
connect at all; every other setting is kept (the mock checks it as strictly as ever).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

CONFLUENT = "confluent"
PYTHON = "python"
REGISTRY = "registry"

CONFLUENT_BOOTSTRAP = ("bootstrap.servers", "metadata.broker.list")
CONFLUENT_SECURITY_PREFIXES = ("sasl.", "ssl.", "ssl_", "https.")
CONFLUENT_SECURITY_KEYS = frozenset({"security.protocol", "enable.ssl.certificate.verification",
                                     "enable.sasl.oauthbearer.unsecure.jwt", "oauth_cb"})
PYTHON_SECURITY_PREFIXES = ("sasl_", "ssl_")
PYTHON_SECURITY_KEYS = frozenset({"security_protocol"})
REGISTRY_DROPPED_PREFIXES = ("basic.auth.", "bearer.auth.", "ssl.")
CONF_KEYWORDS = ("conf", "producer_conf", "consumer_conf")  # how confluent-kafka's Python classes name it
PYTHON_DEFAULT = "localhost"  # kafka-python's and aiokafka's default bootstrap_servers


@dataclass(frozen=True)
class Rewrite:
    """One construction's rewritten arguments, and what the client named -> where it goes now."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    named: str
    goes_to: str
    dropped: tuple[str, ...]

    def describe(self) -> str:
        """``kafka.prod.internal:9092 -> 127.0.0.1:40123 (dropped security.protocol, sasl.mechanism)``."""
        dropped = f" (dropped {', '.join(self.dropped)})" if self.dropped else ""
        return f"{self.named} -> {self.goes_to}{dropped}"


def confluent_security(key: str) -> bool:
    """Whether a librdkafka config key is a security setting the mock's PLAINTEXT listener cannot honour."""
    return key in CONFLUENT_SECURITY_KEYS or key.startswith(CONFLUENT_SECURITY_PREFIXES)


def python_security(key: str) -> bool:
    """Whether a kafka-python / aiokafka keyword is a security setting (``security_protocol``, ``sasl_*``,
    ``ssl_*``)."""
    return key in PYTHON_SECURITY_KEYS or key.startswith(PYTHON_SECURITY_PREFIXES)


def registry_dropped(key: str) -> bool:
    """Whether a Schema Registry client key is dropped (its credentials and TLS files)."""
    return key.startswith(REGISTRY_DROPPED_PREFIXES)


def _without(conf: Mapping[str, Any], drop: Any) -> tuple[dict[str, Any], list[str]]:
    kept = {key: value for key, value in conf.items() if not drop(key)}
    return kept, [key for key in conf if drop(key)]


def _conf_position(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int | str | None:
    """Where the config dict is: 0 (first positional), a keyword of CONF_KEYWORDS, or None (keywords only)."""
    if args and isinstance(args[0], Mapping):
        return 0
    return next((k for k in CONF_KEYWORDS if isinstance(kwargs.get(k), Mapping)), None)


def _named(values: list[Any]) -> str:
    return ",".join(str(v) for v in values if v is not None) or "(no bootstrap servers)"


def confluent(args: tuple[Any, ...], kwargs: Mapping[str, Any], bootstrap_servers: str) -> Rewrite:
    """A confluent-kafka client's arguments with ``bootstrap.servers`` the cluster's and no security keys."""
    where = _conf_position(args, kwargs)
    new_kwargs, dropped = _without(kwargs, lambda k: k in CONFLUENT_BOOTSTRAP or confluent_security(k))
    named = [kwargs.get(k) for k in CONFLUENT_BOOTSTRAP]
    dropped = [k for k in dropped if k not in CONFLUENT_BOOTSTRAP]
    new_args = args
    if where is None:  # config keys as keyword arguments only: Producer(**{"bootstrap.servers": ...})
        new_kwargs["bootstrap.servers"] = bootstrap_servers
    else:
        conf: Mapping[str, Any] = args[0] if where == 0 else kwargs[str(where)]
        named = [conf.get(k) for k in CONFLUENT_BOOTSTRAP] + named
        new_conf, conf_dropped = _without(conf, lambda k: k in CONFLUENT_BOOTSTRAP or confluent_security(k))
        dropped = [k for k in conf_dropped if k not in CONFLUENT_BOOTSTRAP] + dropped
        new_conf["bootstrap.servers"] = bootstrap_servers
        if where == 0:
            new_args = (new_conf, *args[1:])
        else:
            new_kwargs[str(where)] = new_conf
    return Rewrite(new_args, new_kwargs, _named(named), bootstrap_servers, tuple(dropped))


def python(args: tuple[Any, ...], kwargs: Mapping[str, Any], bootstrap_servers: str) -> Rewrite:
    """A kafka-python / aiokafka client's arguments with ``bootstrap_servers`` the cluster's (a list) and no
    security keywords; positional arguments (a consumer's topics) are kept."""
    new_kwargs, dropped = _without(kwargs, python_security)
    named = kwargs.get("bootstrap_servers", PYTHON_DEFAULT)
    if isinstance(named, (list, tuple)):
        named = ",".join(str(n) for n in named)
    new_kwargs["bootstrap_servers"] = bootstrap_servers.split(",")
    return Rewrite(args, new_kwargs, str(named), bootstrap_servers, tuple(dropped))


def registry(args: tuple[Any, ...], kwargs: Mapping[str, Any], url: str) -> Rewrite:
    """A Schema Registry client's arguments with ``url`` the mock registry's and no credentials / TLS files."""
    where = _conf_position(args, kwargs)
    if where is None:  # no config dict: the client refuses that itself
        return Rewrite(args, dict(kwargs), "(no conf)", "(unchanged)", ())
    conf: Mapping[str, Any] = args[0] if where == 0 else kwargs[str(where)]
    new_conf, dropped = _without(conf, registry_dropped)
    new_conf["url"] = url
    new_args, new_kwargs = args, dict(kwargs)
    if where == 0:
        new_args = (new_conf, *args[1:])
    else:
        new_kwargs[str(where)] = new_conf
    return Rewrite(new_args, new_kwargs, str(conf.get("url", "(no url)")), url, tuple(dropped))
