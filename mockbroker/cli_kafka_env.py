"""``mockbroker serve --kafka-env`` (``$MOCKBROKER_KAFKA_ENV``, on in the Docker image): the environment of Kafka's
images (mockbroker.kafka_env) becomes serve's settings, so a compose service that ran ``apache/kafka``,
``confluentinc/cp-kafka`` or ``confluentinc/cp-schema-registry`` runs mockbroker by changing its image line.

Precedence: a flag on the command line, then a ``KAFKA_*`` variable, then a ``MOCKBROKER_*`` variable, then the
default.  Three shapes of service:

- a broker (any ``KAFKA_*`` or ``CLUSTER_ID``): the mock cluster, with the listeners and configs the variables say,
  and the registry on ``SCHEMA_REGISTRY_LISTENERS`` when those are set too;
- a schema registry (``SCHEMA_REGISTRY_*`` only): a registry keeping ``_schemas`` on the cluster
  ``SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS`` names (mockbroker.registry.remote);
- a KRaft controller alone (``KAFKA_PROCESS_ROLES=controller``): nothing to serve; the process says so and waits
  to be stopped, so the services that depend on it start as before.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Mapping
from typing import Any, NoReturn

from mockbroker import early_signals
from mockbroker.cli_values import fail
from mockbroker.kafka_env import KafkaEnv, KafkaEnvError, mounted_dir, read_env

log = logging.getLogger("mockbroker.kafka_env")


def _fail(message: str) -> NoReturn:
    fail(f"mockbroker serve: error: --kafka-env: {message}")


def read(environ: Mapping[str, str]) -> KafkaEnv:
    """The environment read (and apache/kafka's mounted server.properties: mockbroker.kafka_env.mounted_dir), or one
    line and exit status 2."""
    try:
        return read_env(environ, mounted_dir(environ))
    except KafkaEnvError as exc:
        _fail(str(exc))


def serve_defaults(kenv: KafkaEnv) -> dict[str, Any]:
    """Defaults for serve's flags from the variables (flags given on the command line still win)."""
    out: dict[str, Any] = {}
    if kenv.listeners:
        out["listeners"] = kenv.listeners
    if kenv.advertised_listeners:
        out["advertised_listeners"] = kenv.advertised_listeners
    if kenv.protocol_map:
        out["listener_security_protocol_map"] = kenv.protocol_map
    if kenv.configs:  # before the --config items, which win (a later item of the same key overrides)
        out["config"] = sorted(kenv.configs.items())
    if kenv.registry is not None:
        out["schema_registry_host"] = kenv.registry.host
        out["schema_registry_port"] = kenv.registry.port
    return out


def announce(kenv: KafkaEnv) -> None:
    """Log what the variables set and what they ask for that a mock needs not; warn of a multi-node cluster."""
    for line in kenv.summary():
        log.info("%s", line)
    if kenv.voters > 1 and not kenv.controller_only:
        log.warning("kafka-env: KAFKA_CONTROLLER_QUORUM_VOTERS names %d nodes, but mockbroker processes do not join "
                    "each other: this one answers as a cluster of its own; run one service with "
                    "MOCKBROKER_BROKERS=N for N brokers", kenv.voters)


def special_service(kenv: KafkaEnv) -> int | None:
    """Run a schema-registry-only or a controller-only service to its end (an exit status), or None for a broker."""
    if kenv.controller_only:
        announce(kenv)
        log.info("kafka-env: KAFKA_PROCESS_ROLES=controller: a KRaft controller serves no client and mockbroker "
                 "needs none; this process waits to be stopped")
        print("controller=idle", flush=True)
        return _run(_until_signal())
    if kenv.registry is not None and not kenv.kafka_given:
        announce(kenv)
        return _run(_registry_only(kenv))
    return None


def _run(coro: Any) -> int:
    early_signals.defer()
    try:
        result: int = asyncio.run(coro)
        return result
    finally:
        early_signals.ignore()


async def _until_signal() -> int:
    await early_signals.stop_event().wait()
    return 0


async def _registry_only(kenv: KafkaEnv) -> int:
    from mockbroker.registry import missing_extra

    registry_env = kenv.registry
    assert registry_env is not None
    if not registry_env.kafkastore:
        _fail("SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS is not set: the registry needs the cluster that keeps "
              "_schemas (as cp-schema-registry does)")
    missing = missing_extra()
    if missing:
        _fail(missing)
    from mockbroker.registry.remote import StoreUnreachable, create_schemas_topic
    from mockbroker.registry.server import SchemaRegistry

    stop = early_signals.stop_event()
    if stop.is_set():
        return 0
    loop = asyncio.get_running_loop()
    log.info("kafka-env: waiting for the Kafka store at %s", registry_env.kafkastore)
    try:
        created = await loop.run_in_executor(None, lambda: create_schemas_topic(
            registry_env.kafkastore or "", registry_env.init_timeout_s, stop=stop.is_set))
    except StoreUnreachable as exc:
        print(f"mockbroker serve: error: --kafka-env: {exc}", file=sys.stderr, flush=True)
        return 2
    if not created:  # stopped while waiting
        return 0
    registry = SchemaRegistry(lambda: None, registry_env.kafkastore, registry_env.host, registry_env.port)
    registry.default_compatibility(registry_env.compatibility)
    try:
        await registry.start()
    except OSError as exc:
        print(f"mockbroker serve: error: --kafka-env: SCHEMA_REGISTRY_LISTENERS: cannot listen: "
              f"{exc.strerror or exc}", file=sys.stderr, flush=True)
        return 2
    except StoreUnreachable as exc:  # _schemas could not be read back
        print(f"mockbroker serve: error: --kafka-env: {exc}", file=sys.stderr, flush=True)
        return 2
    print(f"schema.registry.url={registry.url}", flush=True)
    try:
        await stop.wait()
    finally:
        await registry.stop()
    return 0
