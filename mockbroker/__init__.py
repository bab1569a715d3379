"""mockbroker: an in-memory mock Kafka broker that speaks the real Kafka wire protocol."""

__version__ = "0.1.0"
