"""``mockbroker serve --data-dir`` as a process of its own, killed with SIGKILL while an idempotent
confluent-kafka producer (acks=all) writes 100k records, then started again on the same port and folder:
every acknowledged record is there exactly once (the producer, still running, resends what was not
acknowledged; the rebuilt producer state answers a resent batch that was stored as a duplicate).  Also:
a second live process on the same folder exits 2 with one line, and a cut-short last write is cut and
reported in one line as the process starts."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from mockbroker.store import segment_files as files

ROOT = Path(__file__).resolve().parents[2]
TOTAL = 100_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(port: int, data_dir: Path, *extra: str) -> tuple[subprocess.Popen[str], list[str]]:
    """Start ``mockbroker serve``; wait for its bootstrap line (or its end); the lines it printed."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--port", str(port), "--data-dir",
                             str(data_dir), "--topic", "load:1", *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    lines: list[str] = []
    deadline = time.monotonic() + 30
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith("bootstrap.servers="):
            return proc, lines
    proc.wait(timeout=10)
    return proc, lines


def _kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def _read_all(bootstrap: str, want: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False})
    consumer.assign([TopicPartition("load", 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(values) < want and time.monotonic() < deadline:
        for msg in consumer.consume(10_000, 0.5):
            if not msg.error():
                values.append(bytes(msg.value()))
    consumer.close()
    return values


def test_acknowledged_records_survive_sigkill_exactly_once(tmp_path: Path) -> None:
    port, data_dir = _free_port(), tmp_path / "data"
    server, lines = _serve(port, data_dir)
    assert server.poll() is None, lines
    acked: list[bytes] = []
    failed: list[Any] = []

    def delivered(err: Any, msg: Any) -> None:
        (failed.append(err) if err is not None else acked.append(bytes(msg.value())))

    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "enable.idempotence": True, "acks": "all",
                         "linger.ms": 5, "message.timeout.ms": 60_000, "reconnect.backoff.max.ms": 200})
    try:
        for i in range(TOTAL):
            while True:
                try:
                    producer.produce("load", value=b"%08d" % i + b"x" * 92, partition=0, on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
        deadline = time.monotonic() + 60
        while len(acked) < TOTAL // 3 and time.monotonic() < deadline:
            producer.poll(0.001)
        assert len(acked) < TOTAL, "the load ended before the kill"
        _kill(server)  # mid-load: records in flight, some written and not acknowledged
        at_kill = len(acked)
        server, lines = _serve(port, data_dir)
        assert server.poll() is None, lines
        assert producer.flush(60) == 0
        assert failed == []
        assert at_kill < len(acked) == TOTAL
        values = _read_all(f"127.0.0.1:{port}", TOTAL)
        assert len(values) == len(set(values)) == TOTAL  # every acknowledged record, exactly once
        assert set(values) == set(acked)
    finally:
        _kill(server)


def test_a_second_live_process_on_the_folder_exits_2_with_one_line(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first, lines = _serve(_free_port(), data_dir)
    try:
        assert first.poll() is None, lines
        second = subprocess.run([sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--data-dir",
                                 str(data_dir)], capture_output=True, text=True, timeout=60,
                                env=dict(os.environ, PYTHONPATH=str(ROOT)))
        assert second.returncode == 2
        assert second.stderr.strip().splitlines() == [
            f"mockbroker serve: error: data dir {data_dir} is in use by another live process (pid {first.pid})"]
    finally:
        _kill(first)
    again, lines = _serve(_free_port(), data_dir)  # the killed process's lock went with it
    try:
        assert again.poll() is None, lines
    finally:
        _kill(again)


def test_a_cut_short_last_write_is_cut_and_reported_in_one_line(tmp_path: Path) -> None:
    port, data_dir = _free_port(), tmp_path / "data"
    server, lines = _serve(port, data_dir)
    try:
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "acks": "all"})
        for i in range(5):
            producer.produce("load", value=b"record-%d" % i, partition=0)
            assert producer.flush(15) == 0
    finally:
        _kill(server)
    path = data_dir / "load-0" / files.file_name(0)
    good = path.stat().st_size
    with open(path, "ab") as f:
        f.write(path.read_bytes()[:50])  # half a batch: a write the kill cut short
    server, lines = _serve(port, data_dir)
    try:
        assert server.poll() is None, lines
        cut = [line for line in lines if "cut at byte" in line]
        assert len(cut) == 1, lines
        assert "load-0/00000000000000000000.log" in cut[0] and f"cut at byte {good}" in cut[0]
        assert path.stat().st_size == good
        values = _read_all(f"127.0.0.1:{port}", 5)
        assert values == [b"record-%d" % i for i in range(5)]
    finally:
        _kill(server)
