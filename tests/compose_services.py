"""Compose services without a Docker engine: a service that runs the mockbroker image is the image's entrypoint and
command run here as a process, with the image's environment and the service's, its fixed ports moved to free
loopback ones and the compose file's host names made 127.0.0.1 (what the compose network would resolve).  Used by
tests/kafka_env/ and by tests/test_docs.py for the ```yaml compose files the docs show."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any

from tests.test_dockerfile import image_env, one

FIRST_LINES = ("bootstrap.servers=", "schema.registry.url=", "controller=")
CLEARED = ("KAFKA_", "SCHEMA_REGISTRY_", "MOCKBROKER_", "CLUSTER_ID")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def moved(env: Mapping[str, Any], hosts: tuple[str, ...], ports: dict[int, int]) -> dict[str, str]:
    """``env`` with each fixed port given a free one (the same one everywhere it appears, kept in ``ports``) and
    the compose hosts named 127.0.0.1."""
    def port(match: re.Match[str]) -> str:
        number = int(match.group(1))
        if number not in ports:
            ports[number] = free_port()
        return f":{ports[number]}"

    out = {}
    for key, value in env.items():
        text = re.sub(r":(\d{4,5})\b", port, str(value))
        for host in hosts:
            text = re.sub(rf"(?<=[/@,]){re.escape(host)}(?=:)|^{re.escape(host)}(?=:)", "127.0.0.1", text)
        out[key] = text
    return out


class Served:
    """A started service: its stdout lines read on demand, its stderr collected in the background."""

    def __init__(self, proc: subprocess.Popen[str], env: Mapping[str, str]) -> None:
        self.proc = proc
        self.env = dict(env)
        self.lines: list[str] = []
        self.log: list[str] = []
        self._stderr = threading.Thread(target=self._drain, daemon=True)
        self._stderr.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line.rstrip("\n"))

    def read_until(self, *prefixes: str) -> str:
        """The value of the first stdout line starting with one of ``prefixes`` (a start that fails ends stdout)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.strip())
            if line.startswith(prefixes):
                return line.strip().split("=", 1)[1]
        raise AssertionError(f"no {' / '.join(prefixes)} line: {self.lines} {self.log}")

    def healthy(self) -> subprocess.CompletedProcess[str]:
        """The image's HEALTHCHECK command run with the service's environment."""
        health = json.loads(one("HEALTHCHECK").split(" CMD ", 1)[1])
        return subprocess.run(health, env=self.env, capture_output=True, text=True, timeout=30)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(20)
        self._stderr.join(5)
        return code


def process_env(env: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without the image's and Kafka's variables, then ``env``; the venv's bin first."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(CLEARED)}
    full.update(env)
    full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
    return full


@contextmanager
def serve(env: Mapping[str, str], command: list[str]) -> Iterator[Served]:
    """``command`` run with ``env`` (on top of :func:`process_env`); SIGTERM at the end, which must exit 0."""
    full = process_env(env)
    proc = subprocess.Popen(command, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    served = Served(proc, full)
    try:
        yield served
    finally:
        assert served.stop() == 0, served.log


def loopback_image_env() -> dict[str, str]:
    """The image's environment with every listen address on loopback and the image's fixed ports free ones."""
    return {**image_env(), "MOCKBROKER_HOST": "127.0.0.1", "MOCKBROKER_CONTROL_HOST": "127.0.0.1",
            "MOCKBROKER_SCHEMA_REGISTRY_HOST": "127.0.0.1", "MOCKBROKER_PORT": str(free_port()),
            "MOCKBROKER_CONTROL_PORT": str(free_port()), "MOCKBROKER_SCHEMA_REGISTRY_PORT": str(free_port())}


def image_command(service: Mapping[str, Any]) -> list[str]:
    """The image's ENTRYPOINT with the service's command, else the image's CMD."""
    command = service.get("command") or json.loads(one("CMD"))
    if isinstance(command, str):
        import shlex

        command = shlex.split(command)
    return json.loads(one("ENTRYPOINT")) + list(command)


@contextmanager
def compose_up(compose: Mapping[str, Any]) -> Iterator[tuple[dict[str, Served], dict[int, int]]]:
    """Every service of ``compose`` whose image is mockbroker's, started in file order and each waited for (its first
    line: bootstrap servers, registry URL or the idle controller's); the services by name and the ports moved."""
    hosts = tuple(compose["services"])
    ports: dict[int, int] = {}
    started: dict[str, Served] = {}
    with ExitStack() as stack:
        for name, service in compose["services"].items():
            if not str(service.get("image", "")).startswith("mockbroker"):
                continue
            env = {**loopback_image_env(), **moved(service.get("environment") or {}, hosts, ports)}
            for key in ("SCHEMA_REGISTRY_LISTENERS",):  # loopback only in tests
                if key in env:
                    env[key] = env[key].replace("0.0.0.0", "127.0.0.1")
            served = stack.enter_context(serve(env, image_command(service)))
            served.read_until(*FIRST_LINES)
            started[name] = served
        yield started, ports
