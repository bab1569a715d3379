"""A tiny blocking Kafka client for broker tests: one request, one response, over a real socket."""

from __future__ import annotations

import socket
import struct
from typing import Any

from mockbroker.protocol import api


class WireClient:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.correlation_id = 0

    def send(self, api_key: int, version: int, body: Any) -> int:
        self.correlation_id += 1
        self.sock.sendall(api.to_bytes(api.encode_request(api_key, version, self.correlation_id, body, "wire-test")))
        return self.correlation_id

    def receive(self, api_key: int, version: int) -> tuple[int, Any]:
        head = self._exactly(4)
        size = struct.unpack(">i", head)[0]
        return api.decode_response(api_key, version, self._exactly(size))

    def call(self, api_key: int, version: int, body: Any) -> Any:
        corr = self.send(api_key, version, body)
        got, response = self.receive(api_key, version)
        assert got == corr
        return response

    def closed_by_peer(self) -> bool:
        self.sock.settimeout(5)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def _exactly(self, n: int) -> bytes:
        chunks = []
        got = 0
        while got < n:
            chunk = self.sock.recv(min(n - got, 1 << 20))
            if not chunk:
                raise ConnectionError(f"connection closed after {got} of {n} bytes")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_frame(sock: socket.socket) -> bytes:
    """One whole response frame from ``sock``, its size prefix included."""
    def exactly(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            assert chunk, "connection closed"
            out += chunk
        return out

    head = exactly(4)
    return head + exactly(struct.unpack(">i", head)[0])


def produce_body(version: int, topic: str, partition: int, records: bytes | None, acks: int = 1,
                 topic_id: bytes = b"\x00" * 16) -> Any:
    m = api.request_module(0)
    return m.ProduceRequest(
        acks=acks, timeout_ms=5000,
        topic_data=[m.TopicProduceData(name=topic, topic_id=topic_id,
                                       partition_data=[m.PartitionProduceData(index=partition, records=records)])],
    )


def fetch_body(topic: str, partition: int, offset: int, max_wait_ms: int = 0, min_bytes: int = 1,
               leader_epoch: int = -1, max_bytes: int = 1 << 20, session_id: int = 0, session_epoch: int = -1,
               topic_id: bytes = b"\x00" * 16) -> Any:
    m = api.request_module(1)
    return m.FetchRequest(
        replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
        session_id=session_id, session_epoch=session_epoch,
        topics=[m.FetchTopic(topic=topic, topic_id=topic_id, partitions=[
            m.FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes,
                             current_leader_epoch=leader_epoch)])],
    )


# the journal entry fields a request answered two ways must agree on (not its number, time or latency)
JOURNAL_FIELDS = ("broker", "client_id", "client_software", "api", "api_key", "version", "correlation_id",
                  "about", "errors", "faults", "outcome", "throttle_ms")


def exchange(port: int, frames: list[bytes]) -> list[bytes]:
    """Send each frame (a request without its size) on one connection and read its answer; the answers'
    bytes after the size."""
    answers = []
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        for frame in frames:
            s.sendall(struct.pack(">i", len(frame)) + frame)
            size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
            answers.append(s.recv(size, socket.MSG_WAITALL))
    return answers
