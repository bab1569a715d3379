"""`mockbroker serve` as a user runs it: prints bootstrap.servers, serves, stops cleanly on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

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
    assert result.returncode == 2  # bad input (tests/test_cli_input.py has the others)
    assert "--port" in result.stderr and "address already in use" in result.stderr


def test_bad_config_value_is_refused() -> None:
    result = subprocess.run([sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--config",
                             "num.partitions=many"], capture_output=True, text=True, timeout=20)
    assert result.returncode == 2
    assert "--config" in result.stderr and "num.partitions" in result.stderr
    assert "Traceback" not in result.stderr


GC_PROBE = r"""
import builtins, gc, os, signal, sys
from mockbroker import __main__ as entry
loading = []
real_import = builtins.__import__
def probe_import(name, *args, **kwargs):  # the collector's state while the command line's modules load
    if name == "mockbroker.cli":
        loading.append(gc.isenabled())
    return real_import(name, *args, **kwargs)
builtins.__import__ = probe_import
real_print = builtins.print
def probe_print(*args, **kwargs):
    real_print(*args, **kwargs)
    if args and str(args[0]).startswith("bootstrap.servers="):
        real_print("loading", loading, "serving", gc.isenabled(), gc.get_freeze_count() > 0, flush=True)
        os.kill(os.getpid(), signal.SIGINT)
builtins.print = probe_print
sys.argv = ["mockbroker", *sys.argv[1:]]
status = entry.run()
builtins.__import__ = real_import
real_print("after", status, gc.isenabled(), flush=True)
"""


def test_collector_is_off_while_modules_load_and_on_once_the_broker_listens() -> None:
    out = subprocess.run([sys.executable, "-c", GC_PROBE, "serve", "--port", "0"], capture_output=True, text=True,
                         timeout=30)
    lines = out.stdout.splitlines()
    assert lines[0].startswith("bootstrap.servers="), out
    assert lines[1] == "loading [False] serving True True", out  # on, and start-up's objects frozen
    assert lines[2] == "after 0 True", out


def test_collector_is_back_on_for_other_commands(tmp_path: Path) -> None:
    frame = tmp_path / "frame.bin"
    frame.write_bytes(bytes.fromhex("0012000000000007000474657374"))  # ApiVersions v0, client "test"
    out = subprocess.run([sys.executable, "-c", GC_PROBE, "decode", str(frame)], capture_output=True, text=True,
                         timeout=30)
    assert "ApiVersions v0" in out.stdout and out.stdout.splitlines()[-1] == "after 0 True", out
