"""Wire helpers for SASL tests: a WireClient that authenticates (SaslHandshake v0 raw tokens or v1 +
SaslAuthenticate) with PLAIN or SCRAM, computing the client side with ``scramp``."""

from __future__ import annotations

import struct
from typing import Any

import scramp

from mockbroker.protocol import api
from tests.broker.wire import WireClient

HS, AUTH = api.request_module(17), api.request_module(36)


def client_steps(mechanism: str, user: str, password: str) -> Any:
    """A generator: send() the server's token, get the next client token (first next() gives the first)."""
    if mechanism == "PLAIN":
        yield b"\x00" + user.encode() + b"\x00" + password.encode()
        return
    client = scramp.ScramClient([mechanism], user, password)
    server_first = yield client.get_client_first().encode()
    client.set_server_first(server_first.decode())
    server_final = yield client.get_client_final().encode()
    client.set_server_final(server_final.decode())


class SaslWire(WireClient):
    def handshake(self, mechanism: str, version: int = 1) -> Any:
        return self.call(17, version, HS.SaslHandshakeRequest(mechanism=mechanism))

    def authenticate(self, mechanism: str, user: str, password: str, version: int = 2) -> list[Any]:
        """SaslAuthenticate requests until the mechanism is done or the broker refuses; the responses."""
        steps = client_steps(mechanism, user, password)
        token = next(steps)
        answers = []
        while True:
            resp = self.call(36, version, AUTH.SaslAuthenticateRequest(auth_bytes=token))
            answers.append(resp)
            if resp.error_code:
                return answers
            try:
                token = steps.send(resp.auth_bytes)
            except StopIteration:
                return answers
            except scramp.ScramException:  # a bad server signature
                raise

    def raw_exchange(self, mechanism: str, user: str, password: str) -> list[bytes]:
        """The v0 flow: bare length-prefixed tokens both ways; the server's tokens."""
        steps = client_steps(mechanism, user, password)
        token = next(steps)
        answers = []
        while True:
            self.sock.sendall(struct.pack(">i", len(token)) + token)
            answer = self._exactly(struct.unpack(">i", self._exactly(4))[0])
            answers.append(answer)
            try:
                token = steps.send(answer)
            except StopIteration:
                return answers

    def login(self, mechanism: str, user: str, password: str, version: int = 2) -> Any:
        assert self.handshake(mechanism).error_code == 0
        answers = self.authenticate(mechanism, user, password, version)
        assert answers[-1].error_code == 0, answers[-1].error_message
        return answers[-1]
