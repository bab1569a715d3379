"""Incremental fetch sessions (KIP-227), one cache per broker.

A session remembers the partitions a consumer fetches and what it was last told about each, so an
incremental fetch names only what changed and is answered with only what changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mockbroker.errors import ErrorCode, KafkaError

INITIAL_EPOCH = 0
FINAL_EPOCH = -1

Key = tuple[str, int]  # (topic name, partition)


@dataclass
class SessionPartition:
    topic_id: bytes
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_sent: tuple[int, int, int, int] | None = None  # (hw, lso, log start, error) last answered


@dataclass
class FetchSession:
    session_id: int
    next_epoch: int
    partitions: dict[Key, SessionPartition] = field(default_factory=dict)


class FetchSessionCache:
    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.sessions: dict[int, FetchSession] = {}
        self._next_id = 1

    def open(self) -> FetchSession | None:
        """A new session, or None when the cache is full (the fetch is then sessionless)."""
        if len(self.sessions) >= self.slots:
            return None
        session = FetchSession(self._next_id, 1)
        self._next_id = self._next_id % (2**31 - 1) + 1
        self.sessions[session.session_id] = session
        return session

    def close(self, session_id: int) -> None:
        self.sessions.pop(session_id, None)

    def resume(self, session_id: int, epoch: int) -> FetchSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise KafkaError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, f"no fetch session {session_id}")
        if epoch != session.next_epoch:
            raise KafkaError(
                ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                f"fetch session {session_id} expected epoch {session.next_epoch}, got {epoch}",
            )
        session.next_epoch = session.next_epoch + 1 if session.next_epoch < 2**31 - 1 else 1
        return session
