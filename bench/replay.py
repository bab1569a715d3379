"""Record one client load's requests once, then replay the same bytes to brokers and compare their CPU.

Real-client runs on a shared two-vCPU VM move by more than the few percent one change is worth (the
client's own threads compete with the broker and with each other).  A replay sends the frames a real
client sent, one request at a time from a plain socket, and reads each answer; the broker's own CPU
(every thread, from /proc/<pid>/task/*/schedstat) is then steady enough to compare two source trees
or a tree and a peer broker.

    python -m bench.replay record c1m /tmp/c1m.replay          # confluent-kafka 1M x 100 B lz4
    python -m bench.replay run /tmp/c1m.replay --tree . --tree /tmp/old --peer mock --repeat 8

Recording puts a forwarding proxy in front of a mockbroker that advertises the proxy's port, so every
connection the client opens passes through it.  Topics are recorded from the CreateTopics requests and
made beforehand on every broker the replay runs against (CreateTopics frames are not replayed: the C
mock has none); requests that get no answer (Produce with acks=0) are sent without waiting.
"""

from __future__ import annotations

import argparse
import os
import pickle
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench import loads
from bench.peers import (
    BROKER_CONFIG,
    PARTITIONS,
    Peer,
    _admin_create,
    cpu_reading,
    free_port,
    start_rdkafka_mock,
    start_tansu,
)
from mockbroker.protocol import api

CREATE_TOPICS = 19
PRODUCE = 0
# the broker settings the benchmark gives mockbroker (bench.peers.start_mockbroker)
CONFIG_ARGS = [arg for kv in (*BROKER_CONFIG, f"num.partitions={PARTITIONS}") for arg in ("--config", kv)]

LOADS: dict[str, Callable[[Peer], object]] = {
    "c100k": lambda peer: loads.produce_consume(peer, "c100k", 100_000, 100, 4),
    "c1m": lambda peer: loads.produce_consume(peer, "c1m", 1_000_000, 100, 16, "lz4"),
    "c1m-produce": lambda peer: (peer.create_topic("c1m", 16),
                                 loads._produce(peer, "c1m", 1_000_000, 100, 16,
                                                {"acks": 1, "linger.ms": 5, "compression.type": "lz4"})),
    "aio100k": lambda peer: loads.aiokafka_produce_consume(peer, "aio", 100_000, 100, 4),
    "big": lambda peer: loads.large_messages(peer, "big", 256, 64),
    "tiny": lambda peer: loads.produce_consume(peer, "tiny", 2_000, 100, 2, "lz4"),  # the harness's own test
}


@dataclass
class Recording:
    load: str
    topics: list[tuple[str, int]] = field(default_factory=list)
    frames: list[tuple[int, bytes]] = field(default_factory=list)  # (connection number, whole frame)


def save(rec: Recording, path: str) -> None:
    with open(path, "wb") as f:
        pickle.dump({"load": rec.load, "topics": rec.topics, "frames": rec.frames}, f)


def load(path: str) -> Recording:
    with open(path, "rb") as f:
        return Recording(**pickle.load(f))


# -- recording -------------------------------------------------------------------------------------
class _Proxy:
    """Forwards every connection on ``port`` to ``target``; keeps each whole client frame in order."""

    def __init__(self, port: int, target: int) -> None:
        self.target = target
        self.frames: list[tuple[int, bytes]] = []
        self.lock = threading.Lock()
        self.server = socket.create_server(("127.0.0.1", port))
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            number = self.connections
            self.connections += 1
            threading.Thread(target=self._requests, args=(number, client, upstream), daemon=True).start()
            threading.Thread(target=self._answers, args=(upstream, client), daemon=True).start()

    def _requests(self, number: int, client: socket.socket, upstream: socket.socket) -> None:
        pending = b""
        while chunk := _recv(client):
            upstream.sendall(chunk)
            pending += chunk
            while len(pending) >= 4 and len(pending) >= 4 + (size := struct.unpack_from(">i", pending)[0]):
                with self.lock:
                    self.frames.append((number, pending[:4 + size]))
                pending = pending[4 + size:]
        upstream.close()

    @staticmethod
    def _answers(upstream: socket.socket, client: socket.socket) -> None:
        while chunk := _recv(upstream):
            client.sendall(chunk)
        client.close()


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(1 << 20)
    except OSError:
        return b""


def record(load: str) -> Recording:
    port, proxy_port = free_port(), free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--port", str(port), "--log-level", "WARNING",
                             "--advertised-listeners", f"PLAINTEXT://127.0.0.1:{proxy_port}", *CONFIG_ARGS],
                            stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()  # type: ignore[union-attr]
    proxy = _Proxy(proxy_port, port)
    bootstrap = f"127.0.0.1:{proxy_port}"
    peer = Peer("mockbroker (recorded)", bootstrap, proc, _admin_create(bootstrap))
    try:
        LOADS[load](peer)
        time.sleep(0.5)  # the last answers' frames through the proxy
    finally:
        peer.stop()
    rec = Recording(load)
    for number, frame in proxy.frames:
        if struct.unpack_from(">h", frame, 4)[0] == CREATE_TOPICS:
            body = api.decode_request(memoryview(frame)[4:], allow_trailing=True).body
            rec.topics += [(t.name, t.num_partitions) for t in body.topics]
        else:
            rec.frames.append((number, frame))
    return rec


# -- replaying -------------------------------------------------------------------------------------
def broker_cpu_ns(pid: int) -> int:
    """The broker's CPU so far, summed over its live threads (bench.peers.cpu_reading)."""
    return round(cpu_reading(pid)[0] * 1e9)


CALLGRIND = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/tmp/replay-callgrind.%p"]


class Meter:
    """The broker's CPU time (every thread, ns) or, under callgrind, the instructions it executed."""

    def __init__(self, pid: int, instructions: bool) -> None:
        self.pid = pid
        self.instructions = instructions

    def start(self) -> int:
        if self.instructions:
            subprocess.run(["callgrind_control", "--instr=on", str(self.pid)], check=True, stdout=subprocess.DEVNULL)
            return 0
        return broker_cpu_ns(self.pid)

    def read(self) -> int:
        if not self.instructions:
            return broker_cpu_ns(self.pid)
        subprocess.run(["callgrind_control", "--dump", str(self.pid)], check=True, stdout=subprocess.DEVNULL)
        dumps = sorted(Path("/tmp").glob(f"replay-callgrind.{self.pid}.*"), key=lambda p: p.stat().st_mtime)
        for line in dumps[-1].read_text().splitlines():
            if line.startswith("summary:"):
                return int(line.split()[1])
        raise RuntimeError(f"no summary in {dumps[-1]}")


def start_tree(tree: str, prefix: list[str] | None = None) -> Peer:
    """mockbroker from the source tree ``tree`` (its C modules built in place), as the benchmark runs it."""
    env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()), MOCKBROKER_PURE_PYTHON="0")
    proc = subprocess.Popen([*(prefix or []), sys.executable, "-m", "mockbroker", "serve", "--port", "0",
                             "--log-level", "WARNING", *CONFIG_ARGS],
                            stdout=subprocess.PIPE, text=True, env=env, cwd=tree)
    line = proc.stdout.readline().strip()  # type: ignore[union-attr]
    if not line.startswith("bootstrap.servers="):
        proc.kill()
        raise RuntimeError(f"mockbroker in {tree} did not start: {line!r}")
    bootstrap = line.split("=", 1)[1]
    return Peer(f"tree {tree}", bootstrap, proc, _admin_create(bootstrap))


def _expects_answer(frame: bytes) -> bool:
    if struct.unpack_from(">h", frame, 4)[0] != PRODUCE:
        return True
    return api.decode_request(memoryview(frame)[4:], allow_trailing=True).body.acks != 0


def replay(rec: Recording, peer: Peer, window: int = 1, instructions: bool = False) -> dict[str, float]:
    """Send the recording's frames to ``peer`` in order, at most ``window`` unanswered per connection;
    return the broker's CPU ms (or, under callgrind, millions of instructions) in all and, for window 1
    and CPU time, per API."""
    for name, partitions in rec.topics:
        peer.create(name, partitions)
    host, port = peer.bootstrap.split(",")[0].rsplit(":", 1)
    sockets: dict[int, socket.socket] = {}
    sent: dict[int, list[bytes]] = {}  # each connection's requests still waiting for their answers
    per_api: dict[str, int] = {}
    pid = peer.proc.pid
    time.sleep(0.2)
    meter = Meter(pid, instructions)
    start = meter.start()
    by_api = window == 1 and not instructions
    for number, frame in rec.frames:
        sock = sockets.get(number)
        if sock is None:
            sock = sockets[number] = socket.create_connection((host, int(port)), timeout=60)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sent[number] = []
        unanswered = sent[number]
        before = broker_cpu_ns(pid) if by_api else 0
        if len(unanswered) >= window:
            _read_answer(sock, unanswered.pop(0))
        sock.sendall(frame)
        if _expects_answer(frame):
            unanswered.append(frame)
        if by_api:
            while unanswered:
                _read_answer(sock, unanswered.pop(0))
            name = api.api_name(struct.unpack_from(">h", frame, 4)[0])
            per_api[name] = per_api.get(name, 0) + broker_cpu_ns(pid) - before
    for number, sock in sockets.items():
        while sent[number]:
            _read_answer(sock, sent[number].pop(0))
    total = meter.read() - start
    for sock in sockets.values():
        sock.close()
    out = {name: ns / 1e6 for name, ns in sorted(per_api.items(), key=lambda kv: -kv[1])}
    out["all"] = total / 1e6
    return out


def _read_answer(sock: socket.socket, request: bytes) -> None:
    """Read the answer to ``request``; a Produce answer must name no error (else the replay measured a
    broker refusing, not storing)."""
    size = struct.unpack(">i", loads._recv_exact(sock, 4))[0]
    answer = loads._recv_exact(sock, size)
    api_key, version, correlation_id = struct.unpack_from(">hhi", request, 4)
    if struct.unpack_from(">i", answer)[0] != correlation_id:
        raise RuntimeError(f"answer to correlation id {correlation_id} expected, got another")
    if api_key == PRODUCE:
        for topic in api.decode_response(api_key, version, answer)[1].responses:
            for part in topic.partition_responses:
                if part.error_code:
                    raise RuntimeError(f"Produce to {topic.name}[{part.index}] answered error {part.error_code}")


PEER_STARTS: dict[str, Callable[[list[str] | None], Peer]] = {"mock": start_rdkafka_mock, "tansu": start_tansu}


def run(path: str, trees: list[str], peers: list[str], repeat: int, window: int, instructions: bool) -> None:
    rec = load(path)
    print(f"{rec.load}: {len(rec.frames)} frames, {sum(len(f) for _, f in rec.frames) / 1e6:.1f} MB, "
          f"topics {rec.topics}")
    prefix = CALLGRIND if instructions else None
    cases: list[tuple[str, Callable[[], Peer]]] = [(t, lambda t=t: start_tree(t, prefix)) for t in trees]
    cases += [(p, lambda p=p: PEER_STARTS[p](prefix)) for p in peers]
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in cases}
    for i in range(repeat):
        for name, start in cases[i % len(cases):] + cases[:i % len(cases)]:
            peer = start()
            try:
                results[name].append(replay(rec, peer, window, instructions))
            finally:
                peer.stop()
        print(f"round {i + 1}: " + ", ".join(f"{n} {r[-1]['all']:.0f}" for n, r in results.items()), flush=True)
    unit = "M instructions" if instructions else "ms CPU"
    first = statistics.median(r["all"] for r in results[cases[0][0]])
    for name, runs in results.items():
        med = statistics.median(r["all"] for r in runs)
        apis = {a: statistics.median(r.get(a, 0.0) for r in runs) for a in runs[0] if a != "all"}
        top = ", ".join(f"{a} {ms:.0f}" for a, ms in list(apis.items())[:4])
        print(f"{name:>24}: median {med:7.1f} {unit} (min {min(r['all'] for r in runs):.1f}), "
              f"x{med / first:.3f} of the first; {top}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("load", choices=sorted(LOADS))
    rec.add_argument("path")
    play = sub.add_parser("run")
    play.add_argument("path")
    play.add_argument("--tree", action="append", default=[], help="a source tree to run mockbroker from")
    play.add_argument("--peer", action="append", default=[], choices=sorted(PEER_STARTS))
    play.add_argument("--repeat", type=int, default=5)
    play.add_argument("--window", type=int, default=1, help="requests sent before waiting for an answer "
                      "(per connection; librdkafka keeps up to 5 in flight)")
    play.add_argument("--instructions", action="store_true",
                      help="run each broker under callgrind and count the instructions it executes "
                      "(steady where CPU time is not; the kernel's share is not counted)")
    args = parser.parse_args()
    if args.command == "record":
        recording = record(args.load)
        save(recording, args.path)
        print(f"{len(recording.frames)} frames on {len({n for n, _ in recording.frames})} connections, "
              f"topics {recording.topics}")
    else:
        run(args.path, args.tree or ["."], args.peer, args.repeat, args.window, args.instructions)


if __name__ == "__main__":
    main()
