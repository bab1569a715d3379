"""KIP-848 consumer groups: members heartbeat, the coordinator assigns (server-side assignors).

Model (Kafka's GroupMetadataManager, reduced to what a client can observe):
- The group epoch moves on whenever membership, a subscription or the subscribed topics' partition
  counts change; the target assignment is then recomputed with the group's assignor (``uniform``
  unless members ask for ``range``) and stamped with that epoch (the assignment epoch).
- Each member reconciles towards its target one heartbeat at a time: partitions it must give up
  are taken away first (its epoch stays until it reports, in ``TopicPartitions``, that it no
  longer owns them); then it gets the new epoch and every target partition no other member still
  holds; partitions another member has yet to release follow on later heartbeats.
- Members that stop heartbeating for the session timeout, or do not revoke within their rebalance
  timeout, are removed.  A static member (instance id) leaving with epoch -2 keeps its assignment
  for the session timeout, and a new member with the same instance id takes it over unchanged.

Committed offsets stay on the classic :class:`~mockbroker.state.groups.Group` that carries this
state (``group.consumer``), so OffsetCommit/OffsetFetch/DeleteGroups work for both protocols.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state.assignors import ASSIGNORS, DEFAULT_ASSIGNOR
from mockbroker.state.ids import uuid4_bytes
from mockbroker.state.internal_topics import is_internal

if TYPE_CHECKING:
    from mockbroker.state.config import BrokerConfig

LEAVE, STATIC_LEAVE = -1, -2
TopicParts = dict[str, set[int]]


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed: list[str] = field(default_factory=list)
    regex: str | None = None
    assignor: str | None = None
    epoch: int = 0
    previous_epoch: int = -1
    assigned: TopicParts = field(default_factory=dict)
    revoking: TopicParts = field(default_factory=dict)
    last_seen_ms: int = 0
    revoke_deadline_ms: int = -1
    left_static: bool = False
    sent: tuple[Any, ...] | None = None  # the assignment last sent, to answer null when unchanged

    @property
    def state(self) -> str:
        return "unrevoked_partitions" if self.revoking else "stable"


@dataclass
class ConsumerGroupState:
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, TopicParts] = field(default_factory=dict)
    metadata: tuple[Any, ...] = ()  # (topic, partition count) pairs the target was computed from
    group_id: str = ""  # for its group configs (consumer.session.timeout.ms)

    @property
    def assignor(self) -> str:
        wanted = [m.assignor for m in self.members.values() if m.assignor]
        return max(sorted(set(wanted)), key=wanted.count) if wanted else DEFAULT_ASSIGNOR

    def state_name(self) -> str:
        if not self.members:
            return "Empty"
        if self.assignment_epoch < self.group_epoch:
            return "Assigning"
        if any(m.epoch != self.assignment_epoch or m.revoking for m in self.members.values()):
            return "Reconciling"
        return "Stable"


@dataclass
class HeartbeatResult:
    member_id: str
    epoch: int
    assignment: TopicParts | None  # None: unchanged since the last answer


def _copy(parts: Mapping[str, set[int]]) -> TopicParts:
    return {t: set(p) for t, p in parts.items() if p}


def _minus(a: Mapping[str, set[int]], b: Mapping[str, set[int]]) -> TopicParts:
    return {t: p - b.get(t, set()) for t, p in a.items() if p - b.get(t, set())}


def _union(a: Mapping[str, set[int]], b: Mapping[str, set[int]]) -> TopicParts:
    out = _copy(a)
    for t, p in b.items():
        out.setdefault(t, set()).update(p)
    return out


def _frozen(parts: Mapping[str, set[int]]) -> tuple[Any, ...]:
    return tuple(sorted((t, tuple(sorted(p))) for t, p in parts.items() if p))


class ConsumerGroupLogic:
    """Heartbeats and time for one coordinator's KIP-848 groups (the state lives on each Group)."""

    def __init__(self, clock: object, topics: Callable[[], Mapping[str, int]],
                 config: Mapping[str, Any] | BrokerConfig) -> None:
        self.clock = clock
        self.topics = topics  # name -> partition count, of the whole cluster
        self.config = config
        # (group id, group config name) -> the value the group acts on (its GROUP config, else the
        # broker's): set by the cluster (mockbroker.state.group_configs); None -> the broker's
        self.group_config: Callable[[str, str], int] | None = None

    # -- heartbeat ---------------------------------------------------------------------------------
    def heartbeat(self, g: ConsumerGroupState, member_id: str, epoch: int, instance_id: str | None,
                  rack_id: str | None, rebalance_timeout_ms: int, subscribed: list[str] | None,
                  regex: str | None, assignor: str | None, owned: TopicParts | None, client_id: str,
                  client_host: str, generate_id: bool) -> HeartbeatResult:
        now = self.clock.now_ms()  # type: ignore[attr-defined]
        if assignor is not None and assignor not in ASSIGNORS:
            raise KafkaError(ErrorCode.UNSUPPORTED_ASSIGNOR, f"assignor {assignor!r} is not one of {sorted(ASSIGNORS)}")
        if regex is not None:
            try:
                re.compile(regex)
            except re.error as exc:
                raise KafkaError(ErrorCode.INVALID_REGULAR_EXPRESSION, f"invalid regex {regex!r}: {exc}") from None
        if epoch in (LEAVE, STATIC_LEAVE):
            return self._leave(g, member_id, epoch)
        member: ConsumerMember | None
        if epoch == 0:
            member = self._join(g, member_id, instance_id, rack_id, rebalance_timeout_ms, subscribed, regex,
                                owned, client_id, client_host, generate_id, now)
        else:
            member = g.members.get(member_id)
            if member is None or member.left_static:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {member_id} is not in the group")
            if epoch != member.epoch and not (epoch == member.previous_epoch and owned is not None
                                               and not _minus(owned, member.assigned)):
                raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                                 f"member {member_id} sent epoch {epoch}, its epoch is {member.epoch}")
        member.last_seen_ms = now
        changed = False
        if rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = rebalance_timeout_ms
        if rack_id is not None:
            member.rack_id = rack_id
        if subscribed is not None and sorted(subscribed) != sorted(member.subscribed):
            member.subscribed, changed = list(subscribed), True
        if regex is not None and regex != (member.regex or ""):
            member.regex, changed = regex or None, True
        if assignor is not None and assignor != member.assignor:
            member.assignor, changed = assignor, True
        if changed:
            g.group_epoch += 1
        self._refresh_target(g)
        self._reconcile(g, member, owned, now)
        frozen = _frozen(member.assigned)
        send = epoch == 0 or member.sent != frozen or (owned is not None and _frozen(owned) != frozen)
        member.sent = frozen
        return HeartbeatResult(member.member_id, member.epoch, _copy(member.assigned) if send else None)

    def _join(self, g: ConsumerGroupState, member_id: str, instance_id: str | None, rack_id: str | None,
              rebalance_timeout_ms: int, subscribed: list[str] | None, regex: str | None, owned: TopicParts | None,
              client_id: str, client_host: str, generate_id: bool, now: int) -> ConsumerMember:
        if not member_id:
            if not generate_id:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
            member_id = uuid4_bytes().hex()[:22]
        if rebalance_timeout_ms == -1:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if subscribed is None and regex is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames or SubscribedTopicRegex must be "
                                                         "provided in first request.")
        if owned:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        existing = g.members.get(member_id)
        if existing is not None and not existing.left_static:
            # a member that lost its state re-joins: it starts over (Kafka fences and re-adds it)
            self._remove(g, member_id)
        member = ConsumerMember(member_id, instance_id, rack_id, client_id, client_host, rebalance_timeout_ms,
                                list(subscribed or []), regex or None, last_seen_ms=now)
        if instance_id is not None:
            held = next((m for m in g.members.values() if m.instance_id == instance_id), None)
            if held is not None and not held.left_static:
                raise KafkaError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                 f"instance id {instance_id} is still held by member {held.member_id}")
            if held is not None:  # a static member coming back takes over its assignment, no rebalance
                del g.members[held.member_id]
                member.epoch, member.previous_epoch = held.epoch, held.previous_epoch
                member.assigned, member.assignor = held.assigned, held.assignor
                if held.member_id in g.target:
                    g.target[member_id] = g.target.pop(held.member_id)
                g.members[member_id] = member
                if sorted(member.subscribed) != sorted(held.subscribed) or member.regex != held.regex:
                    g.group_epoch += 1
                return member
        g.members[member_id] = member
        g.group_epoch += 1
        return member

    def _leave(self, g: ConsumerGroupState, member_id: str, epoch: int) -> HeartbeatResult:
        member = g.members.get(member_id)
        if member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {member_id} is not in the group")
        if epoch == STATIC_LEAVE and member.instance_id is not None:
            member.left_static = True
            member.last_seen_ms = self.clock.now_ms()  # type: ignore[attr-defined]
        else:
            self._remove(g, member_id)
        return HeartbeatResult(member_id, epoch, None)

    def _remove(self, g: ConsumerGroupState, member_id: str) -> None:
        g.members.pop(member_id, None)
        g.target.pop(member_id, None)
        g.group_epoch += 1
        self._refresh_target(g)

    # -- assignment ------------------------------------------------------------------------------------
    def subscriptions(self, g: ConsumerGroupState, topics: Mapping[str, int]) -> dict[str, set[str]]:
        subs: dict[str, set[str]] = {}
        for m in g.members.values():
            names = {t for t in m.subscribed if t in topics}
            if m.regex:
                pattern = re.compile(m.regex)
                names |= {t for t in topics if pattern.fullmatch(t) and not is_internal(t)}
            subs[m.member_id] = names
        return subs

    def _refresh_target(self, g: ConsumerGroupState) -> None:
        topics = self.topics()
        subs = self.subscriptions(g, topics)
        metadata = tuple(sorted((t, topics[t]) for t in set().union(*subs.values()))) if subs else ()
        if metadata != g.metadata:
            g.metadata = metadata
            if g.assignment_epoch == g.group_epoch and g.members:
                g.group_epoch += 1
        if g.assignment_epoch == g.group_epoch:
            return
        partitions = dict(metadata)
        current = {mid: m.assigned for mid, m in g.members.items()}
        g.target = ASSIGNORS[g.assignor](subs, partitions, current)
        g.assignment_epoch = g.group_epoch

    def _reconcile(self, g: ConsumerGroupState, member: ConsumerMember, owned: TopicParts | None, now: int) -> None:
        target = g.target.get(member.member_id, {})
        if member.revoking:
            still = _minus(member.revoking, _minus(member.revoking, owned)) if owned is not None else member.revoking
            if still:
                return  # waiting for the member to let go
            member.revoking = {}
            member.revoke_deadline_ms = -1
        to_revoke = _minus(member.assigned, target)
        if to_revoke:
            member.assigned = _minus(member.assigned, to_revoke)
            member.revoking = to_revoke
            member.revoke_deadline_ms = now + member.rebalance_timeout_ms
            return
        held_by_others: TopicParts = {}
        for other in g.members.values():
            if other is not member:
                held_by_others = _union(held_by_others, _union(other.revoking, _minus(other.assigned,
                                                                                      g.target.get(other.member_id,
                                                                                                   {}))))
        grant = _minus(_minus(target, member.assigned), held_by_others)
        member.assigned = _union(member.assigned, grant)
        if member.epoch != g.assignment_epoch:
            member.previous_epoch, member.epoch = member.epoch, g.assignment_epoch

    # -- time ------------------------------------------------------------------------------------------
    def tick(self, g: ConsumerGroupState) -> None:
        now = self.clock.now_ms()  # type: ignore[attr-defined]
        session = self.config["group.consumer.session.timeout.ms"]
        if self.group_config is not None and g.group_id:
            session = self.group_config(g.group_id, "consumer.session.timeout.ms")
        for member in list(g.members.values()):
            if now - member.last_seen_ms > session:
                self._remove(g, member.member_id)
            elif member.revoking and 0 <= member.revoke_deadline_ms < now:
                self._remove(g, member.member_id)

    def validate_commit(self, g: ConsumerGroupState, member_id: str, epoch: int, transactional: bool = False,
                        api_version: int = 9) -> None:
        """OffsetCommit/TxnOffsetCommit into a consumer group, as Kafka's ConsumerGroup.validateOffsetCommit:
        epoch -1 into a group without members passes (an admin's commit); else the member must exist
        (UNKNOWN_MEMBER_ID, an admin's commit into a live group included), commit with OffsetCommit v9+
        (UNSUPPORTED_VERSION) and with its current epoch (STALE_MEMBER_EPOCH); raised as KafkaError."""
        if epoch < 0 and not g.members:
            return
        member = g.members.get(member_id)
        if member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {member_id!r} is not in the group")
        if not transactional and api_version < 9:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                             "OffsetCommit version 9 or above must be used by members using the modern group protocol")
        self._check_epoch(member, epoch)

    def validate_fetch(self, g: ConsumerGroupState, member_id: str | None, epoch: int) -> None:
        """OffsetFetch v9+ from a consumer group, as Kafka's ConsumerGroup.validateOffsetFetch: no member id and
        epoch -1 (an admin) passes; else UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH is raised."""
        if member_id is None and epoch < 0:
            return
        member = g.members.get(member_id or "")
        if member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {member_id!r} is not in the group")
        self._check_epoch(member, epoch)

    @staticmethod
    def _check_epoch(member: ConsumerMember, epoch: int) -> None:
        # a static member that left (epoch -2) stays a member, with Kafka's epoch for it, until it comes back
        current = STATIC_LEAVE if member.left_static else member.epoch
        if epoch != current:
            raise KafkaError(ErrorCode.STALE_MEMBER_EPOCH, f"epoch {epoch} is not the member's {current}")
