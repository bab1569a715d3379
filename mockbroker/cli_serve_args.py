"""``mockbroker serve``'s flags: each with its ``MOCKBROKER_*`` variable as default (the Docker image sets them),
checked by the value types of mockbroker.cli_values; ``--kafka-env`` adds the ``KAFKA_*`` ones
(mockbroker.cli_kafka_env)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from mockbroker import cli_values as values


def _env(name: str, default: str | None) -> str | None:
    """``$name`` (a flag's default; argparse checks it with the flag's type), else ``default``."""
    raw = os.environ.get(name)
    return default if raw is None or raw == "" else raw


def _env_flag(name: str) -> bool:
    """A switch's default from ``$name``: true/false, 1/0, yes/no, on/off (empty: off); else one line, exit 2."""
    try:
        return values.switch(os.environ.get(name, ""))
    except ValueError as exc:
        values.fail(f"mockbroker serve: error: ${name}: {exc}")


def _add_security_arguments(serve: Any) -> None:
    env = os.environ.get
    serve.add_argument("--listeners", default=env("MOCKBROKER_LISTENERS"),
                       help="Kafka's listeners, e.g. PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9192 "
                            "(port 0 = free; broker n uses port + n; default: PLAINTEXT on --host/--port; "
                            "$MOCKBROKER_LISTENERS)")
    serve.add_argument("--advertised-listeners", default=env("MOCKBROKER_ADVERTISED_LISTENERS"),
                       help="Kafka's advertised.listeners ($MOCKBROKER_ADVERTISED_LISTENERS)")
    serve.add_argument("--listener-security-protocol-map", default=env("MOCKBROKER_LISTENER_SECURITY_PROTOCOL_MAP"),
                       help="Kafka's listener.security.protocol.map, e.g. CLIENT:SASL_SSL")
    serve.add_argument("--sasl-user", action="append", default=[], metavar="NAME:PASSWORD", type=values.sasl_user,
                       help="a SASL user for PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (repeatable)")
    serve.add_argument("--ssl-certfile", default=env("MOCKBROKER_SSL_CERTFILE"), type=values.existing_file,
                       help="PEM certificate chain (may hold the key) for SSL / SASL_SSL listeners")
    serve.add_argument("--ssl-keyfile", default=env("MOCKBROKER_SSL_KEYFILE"), type=values.existing_file,
                       help="PEM private key")
    serve.add_argument("--ssl-cafile", default=env("MOCKBROKER_SSL_CAFILE"), type=values.existing_file,
                       help="PEM CA of client certificates (mutual TLS)")
    serve.add_argument("--ssl-client-auth", default=env("MOCKBROKER_SSL_CLIENT_AUTH"),
                       choices=("none", "requested", "required"),
                       help="Kafka's ssl.client.auth: SSL listeners only (KIP-684); one listener, SASL_SSL too: "
                            "--config listener.name.<listener>.ssl.client.auth=required")


def add_serve_parser(sub: Any) -> argparse.ArgumentParser:
    serve: argparse.ArgumentParser = sub.add_parser(
        "serve", help="run mock brokers until Ctrl-C",
        description="Options default to MOCKBROKER_* environment variables (the Docker image sets them), then to the "
                    "values shown. Ctrl-C or SIGTERM stops the brokers (exit status 0); bad input exits with status 2.")
    serve.add_argument("--brokers", type=values.broker_count, default=_env("MOCKBROKER_BROKERS", "1"),
                       help="number of brokers (default 1; $MOCKBROKER_BROKERS)")
    serve.add_argument("--host", default=os.environ.get("MOCKBROKER_HOST", "127.0.0.1"),
                       help="address to listen on (default 127.0.0.1; $MOCKBROKER_HOST)")
    serve.add_argument("--advertised-host", default=os.environ.get("MOCKBROKER_ADVERTISED_HOST"),
                       help="host name Metadata gives clients (default: --host, or 127.0.0.1 for a wildcard; "
                            "$MOCKBROKER_ADVERTISED_HOST)")
    serve.add_argument("--port", type=values.port, default=_env("MOCKBROKER_PORT", "9092"),
                       help="first broker's port; the others follow it (0 = free ports; $MOCKBROKER_PORT)")
    serve.add_argument("--topic", action="append", default=[], metavar="NAME[:PARTITIONS]", type=values.topic,
                       help="create this topic at start, with PARTITIONS partitions (default: num.partitions); "
                            "repeatable")
    serve.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", type=values.config_item,
                       help="broker config, Kafka names (e.g. auto.create.topics.enable=false); repeatable; "
                            "an unknown key is refused")
    serve.add_argument("--latency", default=os.environ.get("MOCKBROKER_LATENCY") or None, type=values.latency,
                       metavar="PRESET",
                       help="realistic: every API as slow as Kafka's in one data centre (replicated writes 3 ms, "
                            "metadata changes 10 ms, the rest 1 ms; $MOCKBROKER_LATENCY)")
    serve.add_argument("--racks", default=os.environ.get("MOCKBROKER_RACKS") or None, metavar="RACK,RACK,...",
                       help="each broker's broker.rack, one per broker in node id order (e.g. a,b,c; "
                            "$MOCKBROKER_RACKS)")
    serve.add_argument("--control-port", type=values.port, default=_env("MOCKBROKER_CONTROL_PORT", None),
                       help="serve the HTTP control API on this port (0 = a free port; $MOCKBROKER_CONTROL_PORT)")
    serve.add_argument("--control-host", default=os.environ.get("MOCKBROKER_CONTROL_HOST", "127.0.0.1"),
                       help="control API address (default 127.0.0.1; $MOCKBROKER_CONTROL_HOST)")
    serve.add_argument("--control-token", default=os.environ.get("MOCKBROKER_CONTROL_TOKEN"),
                       help="require 'Authorization: Bearer TOKEN' on the control API "
                            "(default: $MOCKBROKER_CONTROL_TOKEN)")
    serve.add_argument("--schema-registry-port", type=values.port,
                       default=_env("MOCKBROKER_SCHEMA_REGISTRY_PORT", None),
                       help="serve a Confluent-compatible Schema Registry on this port (0 = a free port; "
                            "$MOCKBROKER_SCHEMA_REGISTRY_PORT; needs mockbroker[schema-registry])")
    for flag, what in (("", "load records from a JSON Lines file or folder (docs/seed-and-dump.md)"),
                       ("-value-schema", "frame the seed's values with this .avsc / JSON Schema"),
                       ("-key-schema", "frame the seed's keys with this .avsc / JSON Schema")):
        serve.add_argument(f"--seed{flag}", action="append", default=[], metavar="TOPIC=PATH",
                           type=values.config_item, help=what + " (repeatable)")
    serve.add_argument("--schema-registry-host", default=os.environ.get("MOCKBROKER_SCHEMA_REGISTRY_HOST", "127.0.0.1"),
                       help="Schema Registry address (default 127.0.0.1; $MOCKBROKER_SCHEMA_REGISTRY_HOST)")
    serve.add_argument("--oidc-port", type=values.port, default=_env("MOCKBROKER_OIDC_PORT", None),
                       help="serve a mock OIDC provider (client credentials token endpoint and JWKS) for "
                            "SASL/OAUTHBEARER on this port; brokers validate its signed tokens (0 = a free port; "
                            "$MOCKBROKER_OIDC_PORT)")
    serve.add_argument("--oidc-host", default=os.environ.get("MOCKBROKER_OIDC_HOST", "127.0.0.1"),
                       help="OIDC provider address (default 127.0.0.1; $MOCKBROKER_OIDC_HOST)")
    _add_security_arguments(serve)
    serve.add_argument("--data-dir", default=os.environ.get("MOCKBROKER_DATA_DIR") or None, type=values.folder_path,
                       metavar="DIR", help="keep every partition's log (Kafka's segment files) and the cluster's "
                       "metadata in DIR, written before each answer leaves, and read back at start: what was "
                       "acknowledged survives the process being killed (mock.data.fsync=true: power loss too); "
                       "one live process per DIR ($MOCKBROKER_DATA_DIR; docs/data-dir-and-snapshots.md)")
    serve.add_argument("--snapshot", default=os.environ.get("MOCKBROKER_SNAPSHOT") or None, type=values.folder_path,
                       metavar="PATH", help="start from the snapshot at PATH (MockCluster.snapshot): a copy in memory, "
                       "the snapshot never written to; with --data-dir, copied into it when it is empty "
                       "($MOCKBROKER_SNAPSHOT)")
    serve.add_argument("--report", default=os.environ.get("MOCKBROKER_REPORT") or None, type=values.report_path,
                       metavar="PATH", help="when stopped, write an HTML report of what the brokers saw (topics, "
                       "records, groups, journal, fault rules) to PATH, one file that opens without a server "
                       "($MOCKBROKER_REPORT)")
    serve.add_argument("--kafka-env", action="store_true", default=_env_flag("MOCKBROKER_KAFKA_ENV"),
                       help="read the environment as Kafka's images do: KAFKA_* variables (KAFKA_LISTENERS, "
                       "KAFKA_ADVERTISED_LISTENERS, KAFKA_NUM_PARTITIONS -> num.partitions, ...), CLUSTER_ID and "
                       "cp-schema-registry's SCHEMA_REGISTRY_*; flags still win ($MOCKBROKER_KAFKA_ENV; on in the "
                       "Docker image)")
    serve.add_argument("--log-level", default="INFO", type=values.log_level, metavar="LEVEL",
                       help=f"log level: {', '.join(values.LOG_LEVELS)} (default INFO)")
    return serve
