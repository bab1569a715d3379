"""One blocking connection to one broker, speaking the project's own codec.

Versions are negotiated once with ApiVersions: each request goes out at the highest version both sides
know, capped by what the caller asks for (so the client works against Kafka, mockbroker and Tansu alike).
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from mockbroker.protocol import api

_SIZE = struct.Struct(">i")
API_VERSIONS = 18


class BrokerError(Exception):
    """The broker could not be reached or answered something unusable."""


class Connection:
    def __init__(self, host: str, port: int, client_id: str = "mockbroker-client", timeout: float = 30.0) -> None:
        self.address = f"{host}:{port}"
        self.client_id = client_id
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            reason = " ".join((exc.strerror or str(exc) or type(exc).__name__).split())  # no "[Errno 111]"
            raise BrokerError(f"cannot connect to {self.address}: {reason}") from exc
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._correlation = 0
        self.versions: dict[int, tuple[int, int]] = {}
        answer = self.call(API_VERSIONS, 0, api.request_module(API_VERSIONS).ApiVersionsRequest())
        if answer.error_code:
            raise BrokerError(f"{self.address}: ApiVersions answered error {answer.error_code}")
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}

    def version(self, api_key: int, wanted: int) -> int:
        """The version to use: ``wanted``, or lower when the broker or our codec stops earlier."""
        theirs = self.versions.get(api_key)
        ours = api.version_range(api_key)
        if theirs is None:
            raise BrokerError(f"{self.address} does not support {api.api_name(api_key)}")
        chosen = min(wanted, theirs[1], ours[1])
        if chosen < max(theirs[0], ours[0]):
            raise BrokerError(f"{self.address}: no common version of {api.api_name(api_key)}")
        return chosen

    def request(self, api_key: int, wanted: int, body: Any) -> Any:
        return self.call(api_key, self.version(api_key, wanted), body)

    def call(self, api_key: int, version: int, body: Any) -> Any:
        self._correlation += 1
        frame = api.encode_request(api_key, version, self._correlation, body, self.client_id)
        try:
            self.sock.sendall(api.to_bytes(frame))
            size = _SIZE.unpack(self._exactly(4))[0]
            data = self._exactly(size)
        except OSError as exc:
            self.close()
            raise BrokerError(f"{self.address}: {exc}") from exc
        correlation, answer = api.decode_response(api_key, version, data)
        if correlation != self._correlation:
            raise BrokerError(f"{self.address}: answer {correlation} to request {self._correlation}")
        return answer

    def send_only(self, api_key: int, wanted: int, body: Any) -> None:
        """A request that gets no answer (Produce with acks=0)."""
        self._correlation += 1
        version = self.version(api_key, wanted)
        self.sock.sendall(api.to_bytes(api.encode_request(api_key, version, self._correlation, body, self.client_id)))

    def _exactly(self, n: int) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            read = self.sock.recv_into(view[got:], n - got)
            if not read:
                raise ConnectionError(f"connection closed after {got} of {n} bytes")
            got += read
        return bytes(buf)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
