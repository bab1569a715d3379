"""Stopping a command the tests started in a session of its own (``start_new_session=True``): the way a
terminal's Ctrl-C reaches a whole job."""

from __future__ import annotations

import os
import signal
import subprocess


def interrupt_group(proc: subprocess.Popen[str], timeout: float = 20) -> None:
    """SIGINT to the process group of ``proc`` (Ctrl-C), SIGKILL when it has not ended within ``timeout``."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
