"""Bad command-line input: ``mockbroker serve`` (a real subprocess) exits with status 2 and one line on
stderr naming the flag, with no traceback and nothing listening (no "listening" or
``bootstrap.servers=`` line, the port given stays free); ``--version`` and the flags' help."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def mockbroker(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """``python -m mockbroker ARGS`` with a timeout: a bad input that starts a broker anyway hangs
    until it and fails the test."""
    return subprocess.run([sys.executable, "-m", "mockbroker", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=Path(__file__).resolve().parents[1])


def assert_refused(done: subprocess.CompletedProcess[str], flag: str, *words: str) -> None:
    lines = done.stderr.splitlines()
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert flag in lines[0], lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    assert "listening" not in done.stderr and "bootstrap.servers=" not in done.stdout


BAD_INPUTS = [
    (["--config", "auto.create.topic.enable=false"], "--config", ["auto.create.topic.enable",
                                                                   "did you mean 'auto.create.topics.enable'"]),
    (["--config", "num.partitions=-5"], "--config", ["num.partitions", "at least 1"]),
    (["--config", "num.partitions=many"], "--config", ["num.partitions", "number"]),
    (["--config", "compression.type=brotli"], "--config", ["compression.type", "zstd"]),
    (["--config", "retention.ms=1000"], "--config", ["topic config", "log.retention.ms"]),
    (["--config", "no-equals-sign"], "--config", ["KEY=VALUE"]),
    (["--config", "listener.name.nope.ssl.client.auth=required"], "--config", ["no listener 'nope'"]),
    (["--port", "70000"], "--port", ["70000"]),
    (["--port", "ninety"], "--port", ["ninety"]),
    (["--port", "65535", "--brokers", "2"], "--port", ["65535"]),
    (["--log-level", "LOUD"], "--log-level", ["LOUD", "DEBUG"]),
    (["--topic", "orders:0"], "--topic", ["orders:0", "at least 1"]),
    (["--topic", "orders:abc"], "--topic", ["abc"]),
    (["--topic", "bad name"], "--topic", ["bad name"]),
    (["--brokers", "0"], "--brokers", ["0"]),
    (["--brokers", "two"], "--brokers", ["two"]),
    (["--listeners", "PLAINTEXT//127.0.0.1:9092"], "--listeners", ["NAME://host:port"]),
    (["--listeners", "PLAINTEXT://127.0.0.1:99999"], "--listeners", ["99999"]),
    (["--listeners", "PLAINTEXT://127.0.0.1:65535", "--brokers", "2"], "--listeners", ["65535", "go past"]),
    (["--listeners", "CLIENT://127.0.0.1:0"], "--listeners", ["CLIENT", "listener.security.protocol.map"]),
    (["--listener-security-protocol-map", "CLIENT:TLS"], "--listener-security-protocol-map", ["CLIENT:TLS"]),
    (["--ssl-certfile", "/no/such/cert.pem"], "--ssl-certfile", ["/no/such/cert.pem"]),
    (["--sasl-user", "alice"], "--sasl-user", ["NAME:PASSWORD"]),
    (["--racks", "a,b", "--brokers", "3"], "--racks", ["3 broker"]),
    (["--control-port", "-1"], "--control-port", ["-1"]),
    (["--topic", "t:1", "--config", "default.replication.factor=3"], "--config", ["default.replication.factor=3"]),
    (["--host", "192.0.2.1"], "--host", ["192.0.2.1"]),  # TEST-NET-1: an address no interface here has
    (["--ssl-client-auth", "sometimes"], "--ssl-client-auth", ["sometimes"]),
]


@pytest.mark.parametrize(("args", "flag", "words"), BAD_INPUTS, ids=[" ".join(a) for a, _f, _w in BAD_INPUTS])
def test_bad_input_is_one_line_naming_the_flag(args: list[str], flag: str, words: list[str]) -> None:
    assert_refused(mockbroker("serve", "--port", "0", *args), flag, *words)


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_a_port_in_use_is_named(taken_port: int) -> None:
    assert_refused(mockbroker("serve", "--port", str(taken_port)), "--port", str(taken_port), "in use")


def test_a_later_brokers_port_in_use_is_named_and_the_first_is_freed_again(taken_port: int) -> None:
    first = taken_port - 1
    with socket.socket() as probe:  # the port before the taken one must be free for this test to mean anything
        try:
            probe.bind(("127.0.0.1", first))
        except OSError:
            pytest.skip(f"port {first} is in use by something else")
    assert_refused(mockbroker("serve", "--brokers", "2", "--port", str(first)), "--port", str(taken_port))
    with socket.socket() as again:  # broker 0 listened on it, and closed it again
        again.bind(("127.0.0.1", first))


def test_a_listener_port_in_use_names_listeners(taken_port: int) -> None:
    done = mockbroker("serve", "--listeners", f"PLAINTEXT://127.0.0.1:{taken_port}")
    assert_refused(done, "--listeners", str(taken_port))


def test_a_control_port_in_use_is_named(taken_port: int) -> None:
    done = mockbroker("serve", "--port", "0", "--control-port", str(taken_port))
    assert_refused(done, "--control-port", str(taken_port))


def test_a_bad_environment_default_names_the_flag() -> None:
    done = subprocess.run([sys.executable, "-m", "mockbroker", "serve"], capture_output=True, text=True,
                          timeout=30, env={**_env(), "MOCKBROKER_PORT": "nine"})
    assert_refused(done, "--port", "nine")


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("MOCKBROKER_")}


def test_unknown_command_and_no_command_are_one_line() -> None:
    for args in (["bogus"], []):
        done = mockbroker(*args)
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr


def test_version() -> None:
    from mockbroker import __version__

    done = mockbroker("--version")
    assert done.returncode == 0, done.stderr
    name, version = done.stdout.split()
    assert name == "mockbroker" and version.split(".")[0] == __version__.split(".")[0]


def test_version_falls_back_to_the_package_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """A source tree that is not installed (no distribution metadata) still has a version."""
    import importlib.metadata

    from mockbroker import __version__
    from mockbroker.cli import _version

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    assert _version() == __version__


def test_every_serve_flag_has_help() -> None:
    from mockbroker.cli import _parser

    parser = _parser(None)
    sub = next(a for a in parser._actions if a.dest == "command")
    serve = sub.choices["serve"]  # type: ignore[attr-defined]
    missing = [a.option_strings for a in serve._actions if not a.help]
    assert missing == []
    assert all(a.help for a in parser._actions if a.option_strings)


def test_audit_takes_bootstrap_server_and_the_old_alias() -> None:
    pytest.importorskip("pyspark", reason="the audit's parser lives with its Spark job (mockbroker[spark])")
    for flag in ("--bootstrap-server", "--bootstrap"):
        done = mockbroker("audit", flag, "127.0.0.1:1", "--help")
        assert done.returncode == 0 and "--bootstrap-server" in done.stdout and "--topic TOPIC" in done.stdout
    done = mockbroker("audit", "--topic", "t")
    assert_refused(done, "--bootstrap-server")


def test_good_input_still_serves() -> None:
    """The checks refuse only what is wrong: known keys (mock ones, Kafka ones the mock stores, per
    listener ones) pass, and the broker listens on the port given."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--port", str(port), "--topic", "orders:3",
                             "--config", "auto.create.topics.enable=false", "--config", "min.insync.replicas=2",
                             "--config", "mock.journal.max.entries=5", "--config",
                             "listener.name.plaintext.ssl.client.auth=none", "--log-level", "warning"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == f"bootstrap.servers=127.0.0.1:{port}"
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in err
