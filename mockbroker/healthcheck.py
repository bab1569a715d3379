"""The Docker image's healthcheck (``python -m mockbroker.healthcheck``): exit 0 when the service this container
runs answers.  A broker answers on its control API's ``/health`` ($MOCKBROKER_CONTROL_PORT); a schema-registry-only
service (``--kafka-env`` with only ``SCHEMA_REGISTRY_*`` variables) on its listener's ``/``; a KRaft-controller-only
service has nothing to ask, and is healthy while it runs.  Anything else: one line on stderr, exit 1."""

from __future__ import annotations

import os
import sys
import urllib.request
from collections.abc import Mapping

from mockbroker.cli_values import switch
from mockbroker.kafka_env import KafkaEnvError, mounted_dir, read_env
from mockbroker.server.listeners import WILDCARDS


def _target(environ: Mapping[str, str]) -> str | None:
    """The URL to ask, or None when there is nothing to ask (a controller-only service)."""
    if _switched_on(environ.get("MOCKBROKER_KAFKA_ENV", "")):
        kenv = read_env(environ, mounted_dir(environ))
        if kenv.controller_only:
            return None
        if kenv.registry is not None and not kenv.kafka_given:
            host = "127.0.0.1" if kenv.registry.host in WILDCARDS else kenv.registry.host
            return f"http://{host}:{kenv.registry.port}/"
    return f"http://127.0.0.1:{environ.get('MOCKBROKER_CONTROL_PORT', '9644')}/health"


def _switched_on(text: str) -> bool:
    """serve --kafka-env's default read as serve reads it (a value serve would refuse counts as off here)."""
    try:
        return switch(text)
    except ValueError:
        return False


def main() -> int:
    try:
        url = _target(os.environ)
    except KafkaEnvError as exc:
        print(f"unhealthy: {exc}", file=sys.stderr)
        return 1
    if url is None:
        return 0
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return 0 if answer.status == 200 else 1
    except OSError as exc:
        print(f"unhealthy: {url}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
