"""KafkaError: what broker state raises when a request cannot be served, carrying a Kafka error code.

The codes and their names come from Kafka's error table (generated into
``mockbroker.protocol.error_table``); ``ErrorCode`` is re-exported here so the state layer can name
codes without touching anything that knows about bytes on the wire.
"""

from __future__ import annotations

from mockbroker.protocol.errors import ErrorCode, error_message, error_name

__all__ = ["ErrorCode", "KafkaError"]


class KafkaError(Exception):
    """A Kafka error code with an optional message for the response's error_message field."""

    def __init__(self, code: int, message: str | None = None) -> None:
        self.code = int(code)
        self.message = message
        super().__init__(f"{error_name(self.code)}: {message or error_message(self.code)}")
