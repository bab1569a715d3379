"""What the SASL handlers (k17 SaslHandshake, k36 SaslAuthenticate) share with the serving path's SASL
session (mockbroker.server.sasl): the failure its mechanisms raise and the handlers answer, and how long
a refused connection stays open.  Here, below the server, so that handlers need nothing from it."""

from __future__ import annotations

from typing import Any


class SaslFailure(Exception):
    """Authentication failed; the message is what Kafka puts in the SaslAuthenticate response."""


def failed_auth_delay_s(config: Any) -> float:
    """Kafka's connection.failed.authentication.delay.ms: how long a refused connection stays open."""
    return int(config.get("connection.failed.authentication.delay.ms", 100)) / 1000
