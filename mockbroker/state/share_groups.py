"""KIP-932 share groups: membership through ShareGroupHeartbeat and the server-side simple assignor.

Model (Kafka's GroupMetadataManager.shareGroupHeartbeat, ShareGroup, ShareGroupAssignmentBuilder):
- A member sends its own id (a client-generated UUID string) and epoch 0 to join, its current epoch to
  heartbeat and -1 to leave.  The group epoch moves on when a member joins or leaves, when a subscription
  changes and when the subscribed topics change (created, deleted, grown: ``topics()`` is read on every
  heartbeat); the target assignment is then recomputed with the simple assignor and stamped with that
  epoch (the assignment epoch).
- Share groups have no revocation phase: a heartbeat hands the member its whole target at once and
  moves its epoch to the assignment epoch.  The answer carries the assignment on a join and whenever it
  changed for this member, else None.
- The simple assignor (SimpleHomogeneousAssignmentBuilder / SimpleHeterogeneousAssignmentBuilder): with
  fewer members than partitions each partition goes to one member and the members' counts differ by at
  most one; with more members than partitions each partition is shared by ceil(members / partitions)
  members.  It is sticky, and deterministic here (members and partitions in sorted order).  Members that
  subscribe to different topic sets are balanced topic by topic.
- A member not heard from for its session timeout is removed by ``tick()``; the group stays (Empty)
  until DeleteGroups removes it.  Offsets and in-flight records live elsewhere (share-partitions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mockbroker.errors import ErrorCode, KafkaError

JOIN, LEAVE = 0, -1
ASSIGNOR_NAME = "simple"
TopicParts = dict[str, set[int]]  # topic name -> partitions
TopicsView = Mapping[str, tuple[Any, int]]  # topic name -> (topic id, partition count)


@dataclass(frozen=True)
class ShareGroupSettings:
    """What a group acts on: its GROUP configs, else the broker's (Kafka's defaults here)."""

    session_timeout_ms: int = 45000  # share.session.timeout.ms / group.share.session.timeout.ms
    heartbeat_interval_ms: int = 5000  # share.heartbeat.interval.ms / group.share.heartbeat.interval.ms
    max_size: int = 200  # group.share.max.size


@dataclass
class ShareMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed: list[str] = field(default_factory=list)
    epoch: int = 0
    previous_epoch: int = 0
    assigned: TopicParts = field(default_factory=dict)  # what it was handed, by topic name
    last_seen_ms: int = 0


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, TopicParts] = field(default_factory=dict)
    metadata: tuple[Any, ...] = ()  # (name, topic id, partition count) of the subscribed topics that exist

    group_type = "share"
    protocol_type = "share"

    @property
    def state_name(self) -> str:
        return "Stable" if self.members else "Empty"


@dataclass
class ShareHeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: dict[Any, set[int]] | None  # topic id -> partitions; None: unchanged since the last answer


@dataclass
class DescribedShareMember:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    assignment: list[tuple[Any, str, list[int]]]  # (topic id, topic name, partitions)


@dataclass
class DescribedShareGroup:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: list[DescribedShareMember]


# -- the simple assignor -----------------------------------------------------------------------------
def _desired_counts(members: int, partitions: int) -> tuple[int, list[int]]:
    """How many members share each partition, and how many assignments each member (by index) should get."""
    sharing = (members + partitions - 1) // partitions
    total = sharing * partitions

    def ceil_share(i: int) -> int:
        return -(-total * i // members)

    return sharing, [ceil_share(i + 1) - ceil_share(i) for i in range(members)]


def _balance(parts: list[tuple[str, int]], members: list[str],
             current: Mapping[str, set[tuple[str, int]]]) -> dict[str, set[tuple[str, int]]]:
    """Spread ``parts`` over ``members`` (both sorted): keep what members hold while within the desired
    counts and sharing, then hand the rest out round-robin."""
    out: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
    if not parts or not members:
        return out
    sharing, counts = _desired_counts(len(members), len(parts))
    desired = dict(zip(members, counts, strict=True))
    holders: dict[tuple[str, int], set[str]] = {p: set() for p in parts}
    for m in members:  # stickiness first, balance bounds it
        for p in sorted(current.get(m, set()) & holders.keys()):
            if len(out[m]) < desired[m] and len(holders[p]) < sharing:
                out[m].add(p)
                holders[p].add(m)
    cursor = 0
    for p in parts:
        while len(holders[p]) < sharing:
            taker = None
            for step in range(len(members)):
                m = members[(cursor + step) % len(members)]
                if len(out[m]) < desired[m] and m not in holders[p]:
                    taker, cursor = m, (cursor + step + 1) % len(members)
                    break
            if taker is None:
                break  # no unfilled member can take it: a slight imbalance, as Kafka tolerates
            out[taker].add(p)
            holders[p].add(taker)
    return out


def simple_assign(subscriptions: Mapping[str, set[str]], partitions: Mapping[str, int],
                  current: Mapping[str, TopicParts] | None = None) -> dict[str, TopicParts]:
    """Kafka's share-group simple assignor: ``subscriptions`` member -> subscribed topics that exist,
    ``partitions`` topic -> count, ``current`` the previous target (for stickiness)."""
    current = current or {}
    members = sorted(subscriptions)
    held = {m: {(t, p) for t, ps in current.get(m, {}).items() for p in ps} for m in members}
    result: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
    topic_sets = {frozenset(s) for s in subscriptions.values()}
    if len(topic_sets) == 1:  # homogeneous: one balance over every partition
        topics = sorted(next(iter(topic_sets)))
        parts = [(t, p) for t in topics for p in range(partitions.get(t, 0))]
        result = _balance(parts, members, held)
    else:  # heterogeneous: topic by topic among its subscribers
        for topic in sorted(set().union(*subscriptions.values())):
            takers = [m for m in members if topic in subscriptions[m]]
            parts = [(topic, p) for p in range(partitions.get(topic, 0))]
            for m, got in _balance(parts, takers, held).items():
                result[m] |= got
    out: dict[str, TopicParts] = {}
    for m, got in result.items():
        by_topic: TopicParts = {}
        for t, p in got:
            by_topic.setdefault(t, set()).add(p)
        out[m] = by_topic
    return out


# -- the coordinator's share groups ----------------------------------------------------------------
def _frozen(parts: Mapping[str, set[int]]) -> tuple[Any, ...]:
    return tuple(sorted((t, tuple(sorted(p))) for t, p in parts.items() if p))


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_REQUEST, message)


def _blank(value: str | None) -> bool:
    return value is not None and not value.strip()


class ShareGroups:
    """Every share group of the cluster: heartbeats, expiry, describe, list and delete."""

    def __init__(self, clock: Any, topics: Callable[[], TopicsView],
                 settings: Callable[[str], ShareGroupSettings],
                 foreign_group: Callable[[str], bool] | None = None) -> None:
        self.clock = clock
        self.topics = topics  # name -> (topic id, partition count), read on every heartbeat
        self.settings = settings  # group id -> the settings it acts on now
        # group id -> True when a group of another type (classic, consumer) holds it
        self.foreign_group = foreign_group
        self.groups: dict[str, ShareGroup] = {}

    # -- ShareGroupHeartbeat ---------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  subscribed: list[str] | None, client_id: str = "", client_host: str = "") -> ShareHeartbeatResult:
        """One ShareGroupHeartbeat (v1); raises KafkaError with the code Kafka answers."""
        self._validate(group_id, member_id, member_epoch, rack_id, subscribed)
        if member_epoch == LEAVE:
            return self._leave(group_id, member_id)
        settings = self.settings(group_id)
        group = self._group_for(group_id, create=member_epoch == JOIN)
        if len(group.members) >= settings.max_size and member_id not in group.members:
            raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED, "The share group has reached its maximum capacity of "
                                                               f"{settings.max_size} members.")
        member = group.members.get(member_id)
        if member is None:
            if member_epoch != JOIN:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                               f"{group_id}.")
            member = ShareMember(member_id)
            group.members[member_id] = member
        else:
            self._check_epoch(member, member_epoch)
        member.last_seen_ms = self.clock.now_ms()
        member.client_id, member.client_host = client_id, client_host
        if rack_id is not None:
            member.rack_id = rack_id
        sent_before = _frozen(member.assigned)
        changed = subscribed is not None and sorted(set(subscribed)) != sorted(set(member.subscribed))
        if changed:
            member.subscribed = sorted(set(subscribed or []))
            group.group_epoch += 1
        self._refresh(group)
        self._reconcile(group, member, changed)
        send = member_epoch == JOIN or _frozen(member.assigned) != sent_before
        return ShareHeartbeatResult(member.member_id, member.epoch, settings.heartbeat_interval_ms,
                                    self._by_id(member.assigned) if send else None)

    @staticmethod
    def _validate(group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  subscribed: list[str] | None) -> None:
        if member_id is None or not member_id.strip():
            raise _invalid("MemberId can't be empty.")
        if group_id is None or not group_id.strip():
            raise _invalid("GroupId can't be empty.")
        if _blank(rack_id):
            raise _invalid("RackId can't be empty.")
        if member_epoch == JOIN:
            if not subscribed:
                raise _invalid("SubscribedTopicNames must be set in first request.")
        elif member_epoch < LEAVE:
            raise _invalid("MemberEpoch is invalid.")

    def _group_for(self, group_id: str, create: bool) -> ShareGroup:
        if self.foreign_group is not None and self.foreign_group(group_id):
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        group = self.groups.get(group_id)
        if group is None:
            if not create:
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
            group = self.groups[group_id] = ShareGroup(group_id)
        return group

    @staticmethod
    def _check_epoch(member: ShareMember, epoch: int) -> None:
        if epoch > member.epoch:
            raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The share group member has a greater member epoch ({epoch}) than the one known by "
                             f"the group coordinator ({member.epoch}). The member must abandon all its partitions "
                             "and rejoin.")
        if epoch < member.epoch and epoch != member.previous_epoch:
            # the previous epoch is accepted: the answer that moved the member on may have been lost
            raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The share group member has a smaller member epoch ({epoch}) than the one known by "
                             f"the group coordinator ({member.epoch}), and it does not match the previous member "
                             f"epoch ({member.previous_epoch}).")

    def _leave(self, group_id: str, member_id: str) -> ShareHeartbeatResult:
        group = self._group_for(group_id, create=False)
        if member_id not in group.members:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        self._remove(group, member_id)
        return ShareHeartbeatResult(member_id, LEAVE, 0, None)  # Kafka's leave answer sets no interval

    def _remove(self, group: ShareGroup, member_id: str) -> None:
        group.members.pop(member_id, None)
        group.target.pop(member_id, None)
        group.group_epoch += 1
        group.metadata = self._metadata(group, self.topics())

    # -- assignment ------------------------------------------------------------------------------
    @staticmethod
    def _metadata(group: ShareGroup, topics: TopicsView) -> tuple[Any, ...]:
        names = {t for m in group.members.values() for t in m.subscribed if t in topics}
        return tuple(sorted((t, topics[t][0], topics[t][1]) for t in names))

    def _refresh(self, group: ShareGroup) -> None:
        """Bump the group epoch when the subscribed topics changed, and recompute the target when behind."""
        topics = self.topics()
        metadata = self._metadata(group, topics)
        if metadata != group.metadata:
            group.metadata = metadata
            if group.assignment_epoch == group.group_epoch:
                group.group_epoch += 1
        if group.assignment_epoch == group.group_epoch:
            return
        subscriptions = {mid: {t for t in m.subscribed if t in topics} for mid, m in group.members.items()}
        partitions = {name: count for name, _topic_id, count in metadata}
        group.target = simple_assign(subscriptions, partitions, group.target)
        group.assignment_epoch = group.group_epoch

    @staticmethod
    def _reconcile(group: ShareGroup, member: ShareMember, subscription_changed: bool) -> None:
        """Share groups have no revocation: the member takes its target (within its subscription) at once."""
        if member.epoch == group.assignment_epoch and not subscription_changed:
            return
        wanted = set(member.subscribed)
        member.assigned = {t: set(p) for t, p in group.target.get(member.member_id, {}).items() if t in wanted and p}
        if member.epoch != group.assignment_epoch:
            member.previous_epoch, member.epoch = member.epoch, group.assignment_epoch

    def _by_id(self, parts: Mapping[str, set[int]]) -> dict[Any, set[int]]:
        topics = self.topics()
        return {topics[t][0]: set(p) for t, p in parts.items() if t in topics and p}

    # -- time ------------------------------------------------------------------------------------
    def tick(self) -> list[tuple[str, str]]:
        """Remove members whose session ran out; returns (group id, member id) of each, so the caller can
        release their acquired records and close their share sessions."""
        now = self.clock.now_ms()
        expired: list[tuple[str, str]] = []
        for group in list(self.groups.values()):
            if not group.members:
                continue
            timeout = self.settings(group.group_id).session_timeout_ms
            for member in list(group.members.values()):
                if now - member.last_seen_ms > timeout:
                    self._remove(group, member.member_id)
                    expired.append((group.group_id, member.member_id))
        return expired

    def timers_live(self) -> bool:
        """True while some member's session runs on the clock (tick() has work)."""
        return any(g.members for g in self.groups.values())

    # -- admin -------------------------------------------------------------------------------------
    def describe(self, group_id: str) -> DescribedShareGroup:
        """ShareGroupDescribe of one group; raises GROUP_ID_NOT_FOUND."""
        group = self.groups.get(group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        topics = self.topics()
        members = [DescribedShareMember(m.member_id, m.rack_id, m.epoch, m.client_id, m.client_host,
                                        list(m.subscribed),
                                        [(topics[t][0], t, sorted(p)) for t, p in sorted(m.assigned.items())
                                         if t in topics and p])
                   for m in group.members.values()]
        return DescribedShareGroup(group.group_id, group.state_name, group.group_epoch, group.assignment_epoch,
                                   ASSIGNOR_NAME, members)

    def group(self, group_id: str) -> ShareGroup | None:
        return self.groups.get(group_id)

    def assignment(self, group_id: str, member_id: str) -> dict[Any, set[int]]:
        """The partitions (topic id -> partitions) last handed to a member; empty when unknown."""
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        return self._by_id(member.assigned) if member is not None else {}

    def listed(self) -> list[ShareGroup]:
        """Every share group, empty ones too (a share group lasts until deleted)."""
        return list(self.groups.values())

    def delete(self, group_id: str) -> None:
        """DeleteGroups: raises GROUP_ID_NOT_FOUND (unknown) or NON_EMPTY_GROUP (has members)."""
        group = self.groups.get(group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        if group.members:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
        del self.groups[group_id]

    def remove_members(self, group_id: str, member_ids: Iterable[str]) -> list[str]:
        """Remove members (admin or fencing); returns those that were there."""
        group = self.groups.get(group_id)
        if group is None:
            return []
        gone = [mid for mid in member_ids if mid in group.members]
        for mid in gone:
            self._remove(group, mid)
        return gone
