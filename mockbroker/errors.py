"""KafkaError: what broker state raises when a request cannot be served, carrying a Kafka error code;
CloseConnection: what a handler or the serving path raises when Kafka would close the connection.

The codes and their names come from Kafka's error table (generated into
``mockbroker.protocol.error_table``); ``ErrorCode`` is re-exported here so the state layer can name
codes without touching anything that knows about bytes on the wire.
"""

from __future__ import annotations

from mockbroker.protocol.errors import ErrorCode, error_message, error_name

__all__ = ["CloseConnection", "ErrorCode", "KafkaError"]


class KafkaError(Exception):
    """A Kafka error code with an optional message for the response's error_message field."""

    def __init__(self, code: int, message: str | None = None) -> None:
        self.code = int(code)
        self.message = message
        super().__init__(f"{error_name(self.code)}: {message or error_message(self.code)}")


class CloseConnection(Exception):
    """Raised by dispatch, a handler or a fault rule when Kafka would close the connection; the message is
    logged (mockbroker.server.connection catches it).  Here, below both handlers and server, so that
    either may raise it."""
