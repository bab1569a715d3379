"""Listeners: Kafka's ``listeners``, ``advertised.listeners`` and ``listener.security.protocol.map``.

A listener is ``NAME://host:port``; its name is one of the four security protocols (PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL) or any name ``listener.security.protocol.map`` maps to one (``CLIENT:SASL_SSL``).
Port 0 means any free port; a non-zero port is broker 0's and broker n listens on port + n (each mock
broker needs its own port on the one host).  ``advertised.listeners`` says what Metadata,
FindCoordinator and DescribeCluster tell clients for each listener (default: the listen address, with
a wildcard host replaced by the cluster's advertised host, and the port actually bound).

As in Kafka, a broker answers those requests with the endpoints of the listener the request arrived
on, so a client connected to the SASL port is only ever sent to SASL ports.
"""

from __future__ import annotations

import re

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.plain import FrozenSlotted

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_LISTENER = "PLAINTEXT"
_LISTENER = re.compile(r"^([A-Za-z0-9_]+)://(\[[^\]]*\]|[^:/]*):(\d+)$")
WILDCARDS = ("0.0.0.0", "::", "")


class ListenerSpec(FrozenSlotted):
    """One listener of every broker: its name, security protocol and listen address."""

    __slots__ = ("host", "name", "port", "protocol")
    host: str
    name: str
    port: int
    protocol: str

    def __init__(self, name: str, protocol: str, host: str, port: int) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "protocol", protocol)
        object.__setattr__(self, "host", host)
        object.__setattr__(self, "port", port)  # 0: any free port; otherwise broker 0's (broker n: port + n)

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def uses_ssl(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")


def _bad(message: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_CONFIG, message)


def parse_protocol_map(text: str | None) -> dict[str, str]:
    """``CLIENT:SASL_SSL,INTERNAL:PLAINTEXT`` -> {"CLIENT": "SASL_SSL", ...}; the four protocols map to
    themselves unless overridden (Kafka's default map)."""
    mapping = {p: p for p in PROTOCOLS}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or protocol not in PROTOCOLS:
            raise _bad(f"Invalid value {item} for configuration listener.security.protocol.map: "
                       f"the protocol must be one of {', '.join(PROTOCOLS)}")
        mapping[name] = protocol
    return mapping


def _split(text: str, config_name: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        match = _LISTENER.match(item)
        if match is None:
            raise _bad(f"Invalid value {item} for configuration {config_name}: expected NAME://host:port")
        name, host, port = match.group(1).upper(), match.group(2).strip("[]"), int(match.group(3))
        if port > 65535:
            raise _bad(f"Invalid value {item} for configuration {config_name}: port {port} is out of range")
        if any(name == seen for seen, _h, _p in out):
            raise _bad(f"Each listener must have a different name, {config_name} has {name} twice")
        out.append((name, host, port))
    return out


def parse_listeners(text: str | None, protocol_map: str | None = None,
                    default_host: str = "127.0.0.1", default_port: int = 0) -> list[ListenerSpec]:
    """The listeners of every broker, in order (the first one is where ``bootstrap_servers`` points)."""
    if not text:
        return [ListenerSpec(DEFAULT_LISTENER, DEFAULT_LISTENER, default_host, default_port)]
    mapping = parse_protocol_map(protocol_map)
    specs = []
    for name, host, port in _split(text, "listeners"):
        protocol = mapping.get(name)
        if protocol is None:
            raise _bad(f"No security protocol defined for listener {name} "
                       "(add it to listener.security.protocol.map)")
        specs.append(ListenerSpec(name, protocol, host, port))
    if not specs:
        raise _bad("listeners must name at least one listener")
    return specs


def parse_advertised(text: str | None, listeners: list[ListenerSpec]) -> dict[str, tuple[str, int]]:
    """``advertised.listeners`` by listener name: (host, port); a port of 0 means the port bound."""
    if not text:
        return {}
    names = {spec.name for spec in listeners}
    out: dict[str, tuple[str, int]] = {}
    for name, host, port in _split(text, "advertised.listeners"):
        if name not in names:
            raise _bad(f"advertised.listeners listener name {name} is not in listeners")
        out[name] = (host, port)
    return out


def broker_port(spec: ListenerSpec, node_id: int) -> int:
    """The port broker ``node_id`` listens on for this listener (0 = any)."""
    return spec.port + node_id if spec.port else 0
