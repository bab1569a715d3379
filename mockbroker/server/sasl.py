"""SASL on one connection of a SASL_PLAINTEXT or SASL_SSL listener: Kafka's server-side state machine.

States (Kafka's SaslServerAuthenticator): HANDSHAKE (ApiVersions and SaslHandshake allowed),
AUTHENTICATE (after a handshake: only SaslAuthenticate, or after a v0 handshake bare length-prefixed
SASL tokens that are not Kafka requests), COMPLETE.  Before COMPLETE any other request closes the
connection ("Unexpected Kafka request of type ... during SASL handshake/authentication").  A failed authentication
answers SASL_AUTHENTICATION_FAILED with Kafka's message and closes the connection
``connection.failed.authentication.delay.ms`` (100) later, so clients read the answer first (in the raw
v0 flow it just closes).  An unknown mechanism answers UNSUPPORTED_SASL_MECHANISM with the enabled
mechanisms (``sasl.enabled.mechanisms``) and closes.

KIP-368: with ``connections.max.reauth.ms`` > 0 a session lasts that long, or until the credential expires
when that is sooner (an OAUTHBEARER token's ``exp``, which bounds the session even with re-authentication
off, as Kafka's SaslServerAuthenticator does); SaslAuthenticate v1+ reports it as session_lifetime_ms.
A SaslHandshake on an authenticated connection starts re-authentication: same mechanism (else
UNSUPPORTED_SASL_MECHANISM naming the one in use) and same principal (else SASL_AUTHENTICATION_FAILED
"Cannot change principals during re-authentication").
The first request other than a re-authentication after the session expired closes the connection.

Mechanisms: PLAIN (RFC 4616), SCRAM-SHA-256/512 (RFC 5802/7677, checked as Kafka's ScramSaslServer) and
OAUTHBEARER (KIP-255, Kafka's unsecured validator: mockbroker.server.oauthbearer).
Tokens and passwords are never logged.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import secrets
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.handlers.sasl_common import SaslFailure
from mockbroker.state.credentials import SCRAM_BY_NAME, SCRAM_MECHANISMS

if TYPE_CHECKING:
    from mockbroker.server.oauthbearer_jwks import KeySets
    from mockbroker.server.security import Settings
    from mockbroker.state.credentials import CredentialStore, ScramCredential

log = logging.getLogger("mockbroker.sasl")

HANDSHAKE, AUTHENTICATE, COMPLETE, FAILED = "handshake", "authenticate", "complete", "failed"
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
DEFAULT_MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"  # the mock's sasl.enabled.mechanisms default
HANDSHAKE_APIS = (17, 18)  # SaslHandshake, ApiVersions; after the handshake only SaslAuthenticate (36)


def enabled_mechanisms(config: Settings) -> list[str]:
    text = str(config.get("sasl.enabled.mechanisms", DEFAULT_MECHANISMS))
    return [m.strip().upper() for m in text.split(",") if m.strip()]


class PlainServer:
    """RFC 4616: one token ``authzid NUL authcid NUL password``, checked as Kafka's PlainSaslServer."""

    def __init__(self, credentials: CredentialStore) -> None:
        self.credentials = credentials
        self.user: str | None = None

    def step(self, token: bytes) -> tuple[bool, bytes]:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise SaslFailure("Invalid SASL/PLAIN response: expected 3 tokens, got " + str(len(parts)))
        try:
            authzid, user, password = (p.decode() for p in parts)
        except UnicodeDecodeError:
            raise SaslFailure("Invalid SASL/PLAIN response: not UTF-8") from None
        if not user:
            raise SaslFailure("Authentication failed: username not specified")
        if not password:
            raise SaslFailure("Authentication failed: password not specified")
        if authzid and authzid != user:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is different "
                              "from username")
        if not self.credentials.check_plain(user, password):
            raise SaslFailure("Authentication failed: Invalid username or password")
        self.user = user
        return True, b""


class ScramServer:
    """RFC 5802 server as Kafka's ScramSaslServer: client-first -> server-first, client-final ->
    server-final.  As Kafka, the client-final nonce need only *end with* the server's nonce: librdkafka
    2.0 (Debian's kcat) sends the client nonce twice and Kafka accepts it, so a strict RFC check (scramp's
    server) would lock those clients out.  The SCRAM clients in the tests are scramp's."""

    def __init__(self, credentials: CredentialStore, mechanism: str) -> None:
        self.mechanism = mechanism
        self.hash = SCRAM_MECHANISMS[SCRAM_BY_NAME[mechanism]][1]
        self.credentials = credentials
        self.user: str | None = None
        self._round = 0
        self._cred: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    def _invalid(self) -> SaslFailure:
        return SaslFailure(f"Authentication failed during authentication due to invalid credentials with SASL "
                           f"mechanism {self.mechanism}")

    def step(self, token: bytes) -> tuple[bool, bytes]:
        self._round += 1
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise self._invalid() from None
        if self._round == 1:
            return False, self._first(text).encode()
        if self._round == 2:
            return True, self._final(text).encode()
        raise self._invalid()

    def _first(self, text: str) -> str:
        gs2, _, bare = text.partition(",")
        authzid, _, bare = bare.partition(",")
        if gs2 not in ("n", "y") or (authzid and not authzid.startswith("a=")):
            raise self._invalid()
        fields = _scram_fields(bare)
        name, client_nonce = fields.get("n"), fields.get("r")
        if not name or not client_nonce:
            raise self._invalid()
        name = name.replace("=2C", ",").replace("=3D", "=")  # Kafka's saslname decoding
        if authzid and authzid[2:] != name:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is different "
                              "from username")
        self.user = name
        self._cred = self.credentials.scram(name, self.mechanism)
        salt, iterations = (self._cred.salt, self._cred.iterations) if self._cred else (os.urandom(16), 4096)
        self._client_first_bare = bare
        self._nonce = client_nonce + secrets.token_urlsafe(18)
        self._server_first = f"r={self._nonce},s={base64.b64encode(salt).decode()},i={iterations}"
        return self._server_first

    def _final(self, text: str) -> str:
        without_proof, _, proof_field = text.rpartition(",")
        fields = _scram_fields(without_proof)
        if not proof_field.startswith("p=") or not fields.get("r", "").endswith(self._nonce):
            raise self._invalid()
        cred = self._cred
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        try:
            proof = base64.b64decode(proof_field[2:], validate=True)
        except ValueError:
            raise self._invalid() from None
        if cred is None:
            raise SaslFailure("Authentication failed: Invalid user credentials")
        signature = hmac.new(cred.stored_key, auth_message, self.hash).digest()
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=False))
        if len(proof) != len(signature) or not hmac.compare_digest(
                hashlib.new(self.hash, client_key).digest(), cred.stored_key):
            raise SaslFailure("Authentication failed: Invalid user credentials")
        return "v=" + base64.b64encode(hmac.new(cred.server_key, auth_message, self.hash).digest()).decode()


def _scram_fields(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1:
            out.setdefault(key, value)
    return out


class SaslSession:
    """The SASL state of one connection."""

    __slots__ = ("authenticated_at", "config", "credentials", "enabled", "expires_at_ms", "key_sets", "lifetime_ms",
                 "listener", "mechanism", "principal", "raw_tokens", "reauth_ms", "reauthenticating",
                 "reauthentications", "server", "state")

    def __init__(self, credentials: CredentialStore, enabled: list[str], reauth_ms: int, config: Settings | None = None,
                 listener: str = "", key_sets: KeySets | None = None) -> None:
        self.credentials = credentials
        self.key_sets = key_sets  # the cluster's JWKS (signed OAUTHBEARER tokens: server.oauthbearer_jwks)
        self.config = config  # the broker config (OAUTHBEARER's validator options), None in unit tests
        self.listener = listener
        self.lifetime_ms = 0  # what SaslAuthenticate v1+ reports (0: the session does not expire)
        self.reauthentications = 0  # completed KIP-368 re-authentications on this connection
        self.enabled = enabled
        self.reauth_ms = reauth_ms
        self.state = HANDSHAKE
        self.mechanism: str | None = None
        self.server: Any = None  # PlainServer, ScramServer or oauthbearer.OAuthBearerServer
        self.raw_tokens = False  # after SaslHandshake v0: bare SASL tokens, no Kafka headers
        self.principal: str | None = None
        self.reauthenticating = False
        self.expires_at_ms: int | None = None
        self.authenticated_at = 0

    # -- the gate in front of every request -----------------------------------------------------
    def refusal(self, api_key: int, api_name: str, now_ms: int) -> str | None:
        """Why this request closes the connection (None: let it through)."""
        if self.state == FAILED:
            return "SASL authentication failed on this connection"
        if self.state == HANDSHAKE:
            if api_key not in HANDSHAKE_APIS:
                return f"Unexpected Kafka request of type {api_name} during SASL handshake."
            return None
        if self.state == AUTHENTICATE:
            if api_key != 36:
                return f"Unexpected Kafka request of type {api_name} during SASL authentication."
            return None
        if api_key == 17:  # a handshake starts re-authentication, even past expiry
            return None
        if self.expires_at_ms is not None and now_ms >= self.expires_at_ms:
            return (f"the SASL session of {self.principal} expired (session lifetime {self.lifetime_ms} ms, "
                    f"connections.max.reauth.ms={self.reauth_ms}) without re-authentication")
        return None

    # -- SaslHandshake -------------------------------------------------------------------------
    def handshake(self, mechanism: str, version: int) -> None:
        """Choose the mechanism; raises KafkaError (UNSUPPORTED_SASL_MECHANISM / ILLEGAL_SASL_STATE)."""
        if self.state == COMPLETE:
            if self.mechanism != mechanism:
                raise KafkaError(ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                 f"SASL mechanism '{mechanism}' requested by client is not supported for "
                                 f"re-authentication of mechanism '{self.mechanism}'")
            self.reauthenticating = True
        elif self.state != HANDSHAKE:
            raise KafkaError(ErrorCode.ILLEGAL_SASL_STATE, "Unexpected SaslHandshake request in SASL state "
                             + self.state)
        elif mechanism not in self.enabled or mechanism not in SUPPORTED_MECHANISMS:
            raise KafkaError(ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                             f"Unsupported SASL mechanism {mechanism}")
        self.mechanism = mechanism
        self.server = self._server_for(mechanism)
        self.state = AUTHENTICATE
        self.raw_tokens = version == 0

    def _server_for(self, mechanism: str) -> Any:
        if mechanism == "PLAIN":
            return PlainServer(self.credentials)
        if mechanism == "OAUTHBEARER":
            from mockbroker.server.oauthbearer import OAuthBearerServer, ValidatorOptions
            from mockbroker.server.oauthbearer_jwks import SecuredOptions

            try:
                options = ValidatorOptions.from_config(self.config or {}, self.listener)
                secured = SecuredOptions.from_config(self.config or {}, self.listener,
                                                     self.key_sets.default_url if self.key_sets is not None else None)
            except ValueError as exc:  # a bad option: every OAUTHBEARER login fails, the broker says why
                log.error("OAUTHBEARER on listener %s: %s", self.listener, exc)
                raise KafkaError(ErrorCode.UNSUPPORTED_SASL_MECHANISM, f"OAUTHBEARER is misconfigured: {exc}") from None
            if secured is None:
                return OAuthBearerServer(options)
            keys = self.key_sets.keys_for(secured) if self.key_sets is not None else None
            return OAuthBearerServer(options, secured, keys)
        return ScramServer(self.credentials, mechanism)

    # -- SaslAuthenticate or a raw token -------------------------------------------------------
    def authenticate(self, token: bytes, now_ms: int) -> tuple[bytes, bool]:
        """One SASL step: (token to send back, finished).  Raises SaslFailure (the state is FAILED)."""
        if self.state != AUTHENTICATE or self.server is None:
            raise KafkaError(ErrorCode.ILLEGAL_SASL_STATE,
                             "SaslAuthenticate request received after successful authentication"
                             if self.state == COMPLETE else "Unexpected SaslAuthenticate request")
        if self.mechanism == "OAUTHBEARER":
            self.server.now_ms = now_ms
        try:
            done, answer = self.server.step(token)
            if not done:
                if self.mechanism == "OAUTHBEARER":
                    log.info("OAUTHBEARER token refused: %s", self.server.reason)
                return answer, False
            principal = f"User:{self.server.user}"
            if self.reauthenticating and principal != self.principal:
                raise SaslFailure(f"Cannot change principals during re-authentication from {self.principal}: "
                                  f"{principal}")
        except SaslFailure:
            self.state = FAILED
            self.raw_tokens = False
            raise
        if self.reauthenticating:
            self.reauthentications += 1
        self.principal = principal
        self.state = COMPLETE
        self.raw_tokens = False
        self.reauthenticating = False
        credential_expires = getattr(self.server, "expires_at_ms", None)
        self.server = None
        self.authenticated_at = now_ms
        # Kafka's SaslServerAuthenticator: the sooner of the credential's expiry and connections.max.reauth.ms
        if credential_expires is None and self.reauth_ms <= 0:
            self.lifetime_ms, self.expires_at_ms = 0, None
        else:
            lifetimes = [self.reauth_ms] if self.reauth_ms > 0 else []
            if credential_expires is not None:
                lifetimes.append(credential_expires - now_ms)
            self.lifetime_ms = max(0, min(lifetimes))
            self.expires_at_ms = now_ms + self.lifetime_ms
        return answer, True

    @property
    def session_lifetime_ms(self) -> int:
        return self.lifetime_ms

