"""Helpers for the hostile-input tests: a well-behaved bystander client, raw sockets, log checks.

The bystander is a WireClient on its own thread doing Produce v9 + Fetch v12 round trips on topic
``calm`` (one record per round, read back and compared) while a test attacks the broker on other
connections.  ``Harness.case`` wraps one hostile case: it notes the bystander's progress, runs the
case, waits for the broker's log line naming the problem, then asserts the bystander made fresh
progress with no error and bounded latency.
"""

from __future__ import annotations

import logging
import re
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster

from .wire import WireClient, fetch_body, produce_body

CALM = "calm"


class Bystander(threading.Thread):
    """Produce/fetch round trips on one connection until stopped; errors and latencies are kept."""

    def __init__(self, port: int, topic: str = CALM) -> None:
        super().__init__(name="bystander", daemon=True)
        self.port, self.topic = port, topic
        self.rounds = 0
        self.errors: list[str] = []
        self.latencies: list[float] = []  # one per round, in order
        self._stop_event = threading.Event()

    def run(self) -> None:
        try:
            with WireClient(self.port, timeout=15) as c:
                while not self._stop_event.is_set():
                    self._round(c)
                    time.sleep(0.005)
        except Exception as exc:  # any failure is what the tests assert against
            self.errors.append(f"round {self.rounds}: {exc!r}")

    def _round(self, c: WireClient) -> None:
        n = self.rounds
        value = f"calm-{n}".encode()
        start = time.monotonic()
        produced = c.call(0, 9, produce_body(9, self.topic, 0, rec.build_batch([(None, value)])))
        part = produced.responses[0].partition_responses[0]
        if part.error_code or part.base_offset != n:
            self.errors.append(f"round {n}: produce answered {part.error_code} at offset {part.base_offset}")
        fetched = c.call(1, 12, fetch_body(self.topic, 0, n)).responses[0].partitions[0]
        _, records = rec.decode_batch(next(rec.iter_batches(fetched.records))[2])
        if fetched.error_code or bytes(records[0].value) != value:
            self.errors.append(f"round {n}: fetch answered {fetched.error_code}, {records[0].value!r}")
        self.latencies.append(time.monotonic() - start)
        self.rounds = n + 1

    def stop(self) -> None:
        self._stop_event.set()
        self.join(20)

    def assert_progress(self, since: int, rounds: int = 3, max_latency_s: float = 2.0, wait_s: float = 15) -> None:
        """At least ``rounds`` more round trips after round ``since``, none failed, none slow."""
        deadline = time.monotonic() + wait_s
        while self.rounds < since + rounds and not self.errors and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not self.errors, self.errors
        assert self.rounds >= since + rounds, f"bystander stalled at round {self.rounds} (from {since})"
        worst = max(self.latencies[since:])
        assert worst < max_latency_s, f"a bystander round trip took {worst:.2f}s"


@dataclass
class Harness:
    cluster: MockCluster
    bystander: Bystander
    caplog: pytest.LogCaptureFixture

    @property
    def port(self) -> int:
        return self.cluster.brokers[0].port

    @contextmanager
    def case(self, log_pattern: str, max_latency_s: float = 2.0) -> Iterator[None]:
        """Run one hostile case: the broker must log ``log_pattern`` and the bystander keep going."""
        mark, seen = self.bystander.rounds, len(self.caplog.records)
        yield
        self.expect_log(log_pattern, seen)
        self.bystander.assert_progress(mark, max_latency_s=max_latency_s)

    def expect_log(self, pattern: str, start: int = 0, wait_s: float = 5) -> str:
        regex = re.compile(pattern)
        deadline = time.monotonic() + wait_s
        while True:
            for record in self.caplog.records[start:]:
                if record.name.startswith("mockbroker") and regex.search(record.getMessage()):
                    return record.getMessage()
            if time.monotonic() > deadline:
                names = [r.getMessage() for r in self.caplog.records[start:] if r.name.startswith("mockbroker")]
                raise AssertionError(f"no mockbroker log line matches {pattern!r}; got {names[-10:]}")
            time.sleep(0.02)

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=10)


@contextmanager
def harness(caplog: pytest.LogCaptureFixture, config: dict[str, Any] | None = None,
            topics: dict[str, int] | None = None) -> Iterator[Harness]:
    """A one-broker cluster with topic ``calm`` and a running bystander (checked at the end too)."""
    caplog.set_level(logging.INFO, logger="mockbroker")
    caplog.set_level(logging.DEBUG, logger="mockbroker.server")  # last: it also sets caplog's handler level
    with MockCluster(brokers=1, topics={CALM: 1, **(topics or {})}, config=config or {}) as cluster:
        bystander = Bystander(cluster.brokers[0].port)
        bystander.start()
        try:
            bystander.assert_progress(0)
            yield Harness(cluster, bystander, caplog)
            bystander.assert_progress(bystander.rounds, rounds=2)
        finally:
            bystander.stop()


def closed_by_peer(sock: socket.socket, wait_s: float = 5) -> bool:
    """True once the broker has closed the connection (EOF or reset); anything it sent first is skipped."""
    sock.settimeout(wait_s)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def raw_header(api_key: int, version: int, correlation_id: int = 7, client_id: bytes = b"hostile") -> bytes:
    """A request header (v1 layout: key, version, correlation id, client id) without a size prefix."""
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def read_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError(f"closed after {len(out)} of {n} bytes")
            out += chunk
        return out

    return exactly(struct.unpack(">i", exactly(4))[0])
