"""KIP-714 client telemetry payloads: the OTLP protobuf reader (mockbroker.telemetry.otlp)."""
