"""KIP-932 share sessions: the broker's cache of ShareFetch sessions, keyed by (group id, member id).

As Kafka's SharePartitionManager.newContext / acknowledgeSessionUpdate and ShareSessionCache do:
- ShareFetch epoch 0 opens a session (dropping the member's old one first) holding the request's
  partitions; it may carry no acknowledgements (INVALID_REQUEST).  A broker that already holds
  ``group.share.max.share.sessions`` sessions refuses a new one with SHARE_SESSION_LIMIT_REACHED.
- Any other epoch names the member's session (SHARE_SESSION_NOT_FOUND when there is none) and must be
  the epoch the session expects next (INVALID_SHARE_SESSION_EPOCH); the request's partitions are added,
  its ForgottenTopicsData removed, and the expected epoch moves on (1, 2, ... Integer.MAX_VALUE, 1, ...).
- Epoch -1 closes the session: the request is served, then the session goes and the caller releases
  the member's acquired records on the partitions the session held.
- ShareAcknowledge may not open a session (epoch 0: INVALID_SHARE_SESSION_EPOCH); otherwise it is checked
  and moves the epoch on like a ShareFetch, and -1 closes the session.
Partitions are (topic id, partition index) pairs, in the order they were added.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mockbroker.errors import ErrorCode, KafkaError

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
INT32_MAX = 2**31 - 1
# Kafka 4.1's SHARE_SESSION_LIMIT_REACHED; the generated error table may not list it yet
SHARE_SESSION_LIMIT_REACHED = int(getattr(ErrorCode, "SHARE_SESSION_LIMIT_REACHED", 133))
SharePartitionKey = tuple[Any, int]  # (topic id, partition)


def next_epoch(epoch: int) -> int:
    """Kafka's ShareRequestMetadata.nextEpoch: -1 stays -1, the largest int32 wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == INT32_MAX else epoch + 1


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int  # the epoch the next request must carry
    partitions: dict[SharePartitionKey, None] = field(default_factory=dict)  # an ordered set

    def partition_list(self) -> list[SharePartitionKey]:
        return list(self.partitions)


@dataclass
class SessionUpdate:
    """What one accepted request did to its member's session."""

    session: ShareSession
    added: list[SharePartitionKey]
    removed: list[SharePartitionKey]
    closed: bool = False  # epoch -1: the session is gone once this request is served
    replaced: list[SharePartitionKey] = field(default_factory=list)  # epoch 0: the old session's partitions


class ShareSessions:
    """The share sessions one broker holds."""

    def __init__(self, max_sessions: Callable[[], int] | int = 2000) -> None:
        # group.share.max.share.sessions, read when a session would be created
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def __len__(self) -> int:
        return len(self.sessions)

    def _limit(self) -> int:
        return self.max_sessions() if callable(self.max_sessions) else self.max_sessions

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.get((group_id, member_id))

    # -- ShareFetch --------------------------------------------------------------------------------
    def accept(self, group_id: str, member_id: str, epoch: int, added: Iterable[SharePartitionKey] = (),
               forgotten: Iterable[SharePartitionKey] = (), has_acknowledgements: bool = False) -> SessionUpdate:
        """A ShareFetch's session bookkeeping; raises KafkaError as Kafka answers the whole request."""
        key = (group_id, member_id)
        wanted = list(dict.fromkeys(added))
        if epoch == FINAL_EPOCH:
            session = self.sessions.get(key)
            if session is None:
                raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND, f"no share session for member {member_id} of "
                                                                     f"group {group_id}")
            del self.sessions[key]
            return SessionUpdate(session, [], [], closed=True)
        if epoch == INITIAL_EPOCH:
            if has_acknowledgements:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Acknowledge data present in Initial Fetch Request")
            old = self.sessions.pop(key, None)
            if len(self.sessions) >= self._limit():
                raise KafkaError(SHARE_SESSION_LIMIT_REACHED, "The limit of share sessions has been reached.")
            session = self.sessions[key] = ShareSession(group_id, member_id, next_epoch(INITIAL_EPOCH),
                                                        dict.fromkeys(wanted))
            return SessionUpdate(session, wanted, [], replaced=old.partition_list() if old is not None else [])
        session = self._expect(key, epoch)
        new = [p for p in wanted if p not in session.partitions]
        session.partitions.update(dict.fromkeys(new))
        removed = [p for p in dict.fromkeys(forgotten) if p in session.partitions]
        for p in removed:
            del session.partitions[p]
        session.epoch = next_epoch(session.epoch)
        return SessionUpdate(session, new, removed)

    def _expect(self, key: tuple[str, str], epoch: int) -> ShareSession:
        session = self.sessions.get(key)
        if session is None:
            raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND, f"no share session for member {key[1]} of group "
                                                                 f"{key[0]}")
        if session.epoch != epoch:
            raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH, f"expected share session epoch {session.epoch}, "
                                                                     f"got {epoch}")
        return session

    # -- ShareAcknowledge ----------------------------------------------------------------------------
    def acknowledge(self, group_id: str, member_id: str, epoch: int) -> SessionUpdate:
        """A ShareAcknowledge's session check (Kafka's acknowledgeSessionUpdate); -1 closes the session."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge cannot open a share session")
        if epoch == FINAL_EPOCH:
            session = self.sessions.pop(key, None)
            if session is None:
                raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND, f"no share session for member {member_id} of "
                                                                     f"group {group_id}")
            return SessionUpdate(session, [], [], closed=True)
        session = self._expect(key, epoch)
        session.epoch = next_epoch(session.epoch)
        return SessionUpdate(session, [], [])

    # -- removal ---------------------------------------------------------------------------------------
    def close(self, group_id: str, member_id: str) -> list[SharePartitionKey]:
        """Drop a member's session (its connection closed, it left or expired); returns the partitions it
        held, empty when there was none."""
        session = self.sessions.pop((group_id, member_id), None)
        return session.partition_list() if session is not None else []

    def drop_member(self, group_id: str, member_id: str) -> list[SharePartitionKey]:
        """The member left its group or its session timed out (Kafka's onMemberLeave): as close()."""
        return self.close(group_id, member_id)

    def drop_group(self, group_id: str) -> list[str]:
        """Every session of a deleted group goes; returns the member ids that had one."""
        gone = [mid for gid, mid in self.sessions if gid == group_id]
        for mid in gone:
            del self.sessions[(group_id, mid)]
        return gone
