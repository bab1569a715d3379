"""A MockCluster that cannot start raises one clear error and leaves nothing behind: no pending asyncio
task ("Task was destroyed but it is pending" on stderr), no thread, no listening socket.  Each case runs
in its own Python process, so what the interpreter says at exit is seen too."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from mockbroker.cluster import MockCluster

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import asyncio, gc, socket, sys, threading, warnings
from mockbroker.cluster import MockCluster
warnings.simplefilter("always")
threads = threading.active_count()
TAKEN = int(sys.argv[1])
FIRST = int(sys.argv[2])

def port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True

def attempt(label, make, background):
    try:
        if background:
            with make():
                pass
        else:
            async def run():
                async with make():
                    pass
            asyncio.run(run())
    except Exception as exc:
        print(label + "|" + type(exc).__name__ + " " + str(exc).splitlines()[0])
    else:
        print(label + "|started")
    gc.collect()

for background in (True, False):
    mode = "sync" if background else "async"
    attempt(mode + " topics", lambda: MockCluster(topics={"t": 0}), background)
    attempt(mode + " taken", lambda: MockCluster(brokers=2, port=FIRST), background)
    print(mode + " first-port-free|" + str(port_free(FIRST)))
    attempt(mode + " control", lambda: MockCluster(brokers=2, control_port=TAKEN), background)
    attempt(mode + " replication", lambda: MockCluster(topics={"t": 1}, config={"default.replication.factor": 3}),
            background)
print("threads|" + str(threading.active_count() - threads))
"""


@pytest.fixture
def ports() -> Iterator[tuple[int, int]]:
    """(a listening port, the port just below it, free): broker 1 of a cluster from the second hits the first."""
    for _ in range(20):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = int(taken.getsockname()[1])
            with socket.socket() as below:
                try:
                    below.bind(("127.0.0.1", port - 1))
                except OSError:
                    continue
            yield port, port - 1
            return
    pytest.skip("found no free port just below a free one")


def test_a_failed_start_leaves_no_task_thread_or_socket(ports: tuple[int, int]) -> None:
    taken, first = ports
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(PROBE), str(taken), str(first)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split("|", 1) for line in done.stdout.splitlines())
    for mode in ("sync", "async"):
        assert "topics: topic 't' needs at least 1 partition" in lines[f"{mode} topics"], done.stdout
        assert "address already in use" in lines[f"{mode} taken"] and str(taken) in lines[f"{mode} taken"]
        assert lines[f"{mode} first-port-free"] == "True", done.stdout  # broker 0 closed its socket again
        assert "control API" in lines[f"{mode} control"], done.stdout
        assert "INVALID_REPLICATION_FACTOR" in lines[f"{mode} replication"], done.stdout
    assert lines["threads"] == "0", done.stdout
    assert "Task was destroyed" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "never awaited" not in done.stderr and "ResourceWarning" not in done.stderr, done.stderr


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"topics": {"t": 0}}, "needs at least 1 partition"),
    ({"topics": {"t": "three"}}, "needs at least 1 partition"),
    ({"topics": {"bad name": 1}}, "bad name"),
    ({"brokers": 0}, "at least one broker"),
    ({"port": 70000}, "0 to 65535"),
    ({"port": 65535, "brokers": 2}, "past port 65535"),
    ({"control_port": -1}, "0 to 65535"),
])
def test_bad_arguments_are_refused_before_anything_listens(kwargs: dict[str, object], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        MockCluster(**kwargs)  # type: ignore[arg-type]
