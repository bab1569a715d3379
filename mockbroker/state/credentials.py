"""SASL users: PLAIN passwords and SCRAM credentials, and Kafka's rules for altering them.

A user added with a password (``MockCluster(sasl_users={"alice": "secret"})``) can log in with PLAIN
and with both SCRAM mechanisms (SCRAM credentials of 4096 iterations are derived for each).  Users
made by AlterUserScramCredentials have only the SCRAM credential the request gave (salt and salted
password; the mock, like Kafka, keeps only the stored key and server key derived from it), so they
log in with that SCRAM mechanism and not with PLAIN.

Nothing here logs or returns a password, salt or key: reprs hide them.

Kafka's checks (KRaft ScramControlManager): empty name UNACCEPTABLE_CREDENTIAL; a mechanism other
than 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512) UNSUPPORTED_SASL_MECHANISM; a user altered twice in one
request (any mechanisms) DUPLICATE_RESOURCE; iterations outside 4096..16384 UNACCEPTABLE_CREDENTIAL;
deleting a credential that does not exist RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from mockbroker.errors import ErrorCode, KafkaError

# ScramMechanism enum of the admin APIs -> (SASL name, hashlib name)
SCRAM_MECHANISMS: dict[int, tuple[str, str]] = {1: ("SCRAM-SHA-256", "sha256"), 2: ("SCRAM-SHA-512", "sha512")}
SCRAM_BY_NAME = {name: code for code, (name, _h) in SCRAM_MECHANISMS.items()}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What a broker keeps of a SCRAM password (RFC 5802): salt, stored key, server key, iterations."""

    salt: bytes = field(repr=False)
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    iterations: int

    @classmethod
    def from_salted_password(cls, hash_name: str, salt: bytes, salted: bytes, iterations: int) -> ScramCredential:
        import hashlib  # hashlib and hmac load with the first SASL user, not at every broker start
        import hmac

        client_key = hmac.new(salted, b"Client Key", hash_name).digest()
        stored_key = hashlib.new(hash_name, client_key).digest()
        server_key = hmac.new(salted, b"Server Key", hash_name).digest()
        return cls(salt, stored_key, server_key, iterations)

    @classmethod
    def from_password(cls, hash_name: str, password: str, iterations: int = DEFAULT_ITERATIONS,
                      salt: bytes | None = None) -> ScramCredential:
        import hashlib

        salt = salt if salt is not None else os.urandom(32)
        salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)
        return cls.from_salted_password(hash_name, salt, salted, iterations)


@dataclass(frozen=True, slots=True)
class Upsertion:
    name: str
    mechanism: int
    iterations: int
    salt: bytes = field(repr=False)
    salted_password: bytes = field(repr=False)


class CredentialStore:
    """The cluster's SASL users."""

    def __init__(self) -> None:
        self._plain: dict[str, str] = {}
        self._scram: dict[str, dict[int, ScramCredential]] = {}

    def __repr__(self) -> str:
        return f"CredentialStore(users={sorted(set(self._plain) | set(self._scram))})"

    # -- users with passwords (MockCluster sasl_users, mockbroker serve --sasl-user) ----------------
    def add_user(self, name: str, password: str, iterations: int = DEFAULT_ITERATIONS) -> None:
        if not name:
            raise ValueError("a SASL user needs a name")
        self._plain[name] = password
        self._scram[name] = {code: ScramCredential.from_password(h, password, iterations)
                             for code, (_n, h) in SCRAM_MECHANISMS.items()}

    def add_plain_user(self, name: str, password: str) -> None:
        """A PLAIN user alone (Kafka's PlainLoginModule ``user_NAME="password"`` options): no SCRAM credential."""
        if not name:
            raise ValueError("a SASL user needs a name")
        self._plain[name] = password

    def remove_user(self, name: str) -> None:
        self._plain.pop(name, None)
        self._scram.pop(name, None)

    def users(self) -> list[str]:
        return sorted(set(self._plain) | set(self._scram))

    def check_plain(self, name: str, password: str) -> bool:
        import hmac

        expected = self._plain.get(name)
        return expected is not None and hmac.compare_digest(expected.encode(), password.encode())

    def scram(self, name: str, mechanism: str) -> ScramCredential | None:
        code = SCRAM_BY_NAME.get(mechanism)
        return self._scram.get(name, {}).get(code) if code is not None else None

    # -- what a restart keeps (mockbroker.store.metadata) ---------------------------------------------
    def scram_credentials(self) -> dict[str, dict[int, ScramCredential]]:
        """Every user's SCRAM credentials by mechanism code (a copy): what Kafka's metadata log keeps."""
        return {name: dict(creds) for name, creds in self._scram.items() if creds}

    def put_scram(self, name: str, mechanism: int, credential: ScramCredential) -> None:
        """Keep ``credential`` (salt, stored key, server key, iterations as kept) for ``name`` and ``mechanism``."""
        self._check_name_and_mechanism(name, mechanism)
        self._scram.setdefault(name, {})[mechanism] = credential

    # -- DescribeUserScramCredentials ----------------------------------------------------------
    def describe(self, names: Iterable[str] | None) -> list[tuple[str, int, str | None, list[tuple[int, int]]]]:
        """(user, error code, message, [(mechanism, iterations)]) per user; ``None``: every user with a
        SCRAM credential."""
        if names is None:
            return [(u, 0, None, self._infos(u)) for u in sorted(self._scram) if self._scram[u]]
        out: list[tuple[str, int, str | None, list[tuple[int, int]]]] = []
        wanted = list(names)
        for name in dict.fromkeys(wanted):
            if wanted.count(name) > 1:
                out.append((name, ErrorCode.DUPLICATE_RESOURCE,
                            f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}",
                            []))
            elif not self._scram.get(name):
                out.append((name, ErrorCode.RESOURCE_NOT_FOUND,
                            f"Attempt to describe a user credential that does not exist: {name}", []))
            else:
                out.append((name, 0, None, self._infos(name)))
        return out

    def _infos(self, name: str) -> list[tuple[int, int]]:
        return [(code, cred.iterations) for code, cred in sorted(self._scram.get(name, {}).items())]

    # -- AlterUserScramCredentials ---------------------------------------------------------------
    def alter(self, deletions: list[tuple[str, int]], upsertions: list[Upsertion]) -> list[tuple[str, int, str | None]]:
        """Kafka's ScramControlManager.alterCredentials: a user may be named once per request (a second
        alteration of the same user, whatever the mechanism, is DUPLICATE_RESOURCE and cancels the first);
        valid ones are applied.  Returns (user, error code, message): deletions done, upsertions done,
        then the refused users."""
        to_delete: dict[str, int] = {}
        to_upsert: dict[str, Upsertion] = {}
        errors: dict[str, KafkaError] = {}
        twice = KafkaError(ErrorCode.DUPLICATE_RESOURCE,
                           "A user credential cannot be altered twice in the same request")
        for name, mechanism in deletions:
            if name in errors:
                continue
            if to_delete.pop(name, None) is not None:
                errors[name] = twice
                continue
            try:
                self._check_deletion(name, mechanism)
                to_delete[name] = mechanism
            except KafkaError as exc:
                errors[name] = exc
        for up in upsertions:
            if up.name in errors:
                continue
            if to_delete.pop(up.name, None) is not None or to_upsert.pop(up.name, None) is not None:
                errors[up.name] = twice
                continue
            try:
                self._check_upsertion(up)
                to_upsert[up.name] = up
            except KafkaError as exc:
                errors[up.name] = exc
        results: list[tuple[str, int, str | None]] = []
        for name, mechanism in to_delete.items():
            creds = self._scram[name]
            del creds[mechanism]
            if not creds:
                del self._scram[name]
            results.append((name, 0, None))
        for name, up in to_upsert.items():
            self._scram.setdefault(name, {})[up.mechanism] = ScramCredential.from_salted_password(
                SCRAM_MECHANISMS[up.mechanism][1], up.salt, up.salted_password, up.iterations)
            results.append((name, 0, None))
        results.extend((name, exc.code, exc.message) for name, exc in errors.items())
        return results

    @staticmethod
    def _check_name_and_mechanism(name: str, mechanism: int) -> None:
        if not name:
            raise KafkaError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        if mechanism not in SCRAM_MECHANISMS:
            raise KafkaError(ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")

    def _check_deletion(self, name: str, mechanism: int) -> None:
        self._check_name_and_mechanism(name, mechanism)
        if mechanism not in self._scram.get(name, {}):
            raise KafkaError(ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")

    def _check_upsertion(self, up: Upsertion) -> None:
        self._check_name_and_mechanism(up.name, up.mechanism)
        if up.iterations < MIN_ITERATIONS:
            raise KafkaError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        if up.iterations > MAX_ITERATIONS:
            raise KafkaError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
