"""A ``mockbroker serve`` subprocess for load tests: its addresses, its RSS, a clean stop.

The broker runs in its own process so that its resident memory (VmRSS in /proc/PID/status) is
measured apart from the clients driving it.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any


def rss_bytes(pid: int) -> int:
    """The process's resident set size (VmRSS), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def _soft_nofile(limit: int) -> None:
    """In the child before exec: start it with this soft RLIMIT_NOFILE."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


class BrokerProcess:
    """``python -m mockbroker serve --port 0 --control-port 0 ARGS``; stderr goes to a temporary file;
    ``open_files``: the soft RLIMIT_NOFILE it starts with; ``env``: variables added to its environment
    (``MOCKBROKER_PURE_PYTHON=1`` runs it without the C extensions)."""

    def __init__(self, *args: str, log_level: str = "WARNING", open_files: int | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.stderr = tempfile.NamedTemporaryFile("w+", prefix="mockbroker-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--control-port", "0",
             "--log-level", log_level, *args],
            stdout=subprocess.PIPE, stderr=self.stderr, text=True,
            preexec_fn=None if open_files is None else lambda: _soft_nofile(open_files),
            env=None if env is None else {**os.environ, **env},
        )
        self.bootstrap = ""
        self.control = ""
        assert self.proc.stdout is not None
        for _ in range(4):
            line = self.proc.stdout.readline().strip()
            if not line:
                raise RuntimeError(f"mockbroker serve did not start: {self.log_tail()}")
            key, _, value = line.partition("=")
            if key == "bootstrap.servers":
                self.bootstrap = value
            elif key == "control":
                self.control = value
            if self.bootstrap and self.control:
                break

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def port(self) -> int:
        return int(self.bootstrap.split(",")[0].rsplit(":", 1)[1])

    def rss(self) -> int:
        return rss_bytes(self.proc.pid)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def control_call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.control + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def log_tail(self, lines: int = 30) -> str:
        self.stderr.flush()
        return "\n".join(Path(self.stderr.name).read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()
        Path(self.stderr.name).unlink(missing_ok=True)
        return self.proc.returncode

    def __enter__(self) -> BrokerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
