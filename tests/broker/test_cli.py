"""`mockbroker serve` as a user runs it: prints bootstrap.servers, serves, stops cleanly on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from confluent_kafka.admin import AdminClient


def test_serve_prints_bootstrap_serves_and_stops_on_sigint() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mockbroker", "serve", "--brokers", "2", "--port", "0", "--topic", "orders:3",
         "--config", "auto.create.topics.enable=false"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        start = time.monotonic()
        line = proc.stdout.readline().strip()
        assert line.startswith("bootstrap.servers="), line
        assert time.monotonic() - start < 10
        bootstrap = line.split("=", 1)[1]
        assert len(bootstrap.split(",")) == 2
        md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        assert len(md.topics["orders"].partitions) == 3 and sorted(md.brokers) == [0, 1]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_reports_a_port_in_use() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "mockbroker", "serve", "--port", str(port)],
                                capture_output=True, text=True, timeout=20)
    assert result.returncode == 1
    assert "cannot start" in result.stderr


def test_bad_config_value_is_refused() -> None:
    result = subprocess.run([sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--config",
                             "num.partitions=many"], capture_output=True, text=True, timeout=20)
    assert result.returncode == 1
    assert "cannot start" in result.stderr and "num.partitions" in result.stderr
    assert "Traceback" not in result.stderr
