"""Consumer groups, classic protocol: membership, rebalances, assignments and committed offsets.

Plain synchronous state.  Joins and syncs that must wait for other members are given a callback
(``reply``) that the group calls when the answer is ready; the server turns those into futures.
Time only moves through :meth:`GroupCoordinator.tick`, which the server calls periodically with
the clock's time, so tests can drive rebalances and session expiry with a manual clock.

Refusals, one convention (here and in the GroupOffsets mixin): a refusal known at once raises
KafkaError(code, message); an answer that may have to wait for other members (JoinGroup, SyncGroup)
goes through the ``reply`` callback, and so do refusals decided while it waits (a member removed
mid-join) and answers that carry data beside their code (MEMBER_ID_REQUIRED with the new member id).
So :meth:`GroupCoordinator.join` and :meth:`GroupCoordinator.sync` either raise (before any waiting)
or call ``reply``; every other method returns its data (or None) and raises on refusal.  Handlers that
answer a code per item turn a raise into its code with ``groups_common.refusal``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.state.consumer_groups import ConsumerGroupLogic, ConsumerGroupState, HeartbeatResult
from mockbroker.state.group_offsets import COMPLETING, EMPTY, PREPARING, STABLE, GroupOffsets, validate_member
from mockbroker.state.ids import uuid4_text

log = logging.getLogger("mockbroker.state")


@dataclass
class JoinResult:
    error: int
    generation: int = -1
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)  # for the leader only
    skip_assignment: bool = False  # JoinGroup v9+ (KIP-814): a rejoining static leader need not assign


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: list[tuple[str, bytes]]
    last_seen_ms: int
    client_host: str = ""  # where it joined from, as Kafka's DescribeGroups shows it ("/127.0.0.1")
    assignment: bytes = b""
    join_reply: Callable[[JoinResult], None] | None = None
    sync_reply: Callable[[int, bytes], None] | None = None


@dataclass
class Group:
    group_id: str
    state: str = EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending_ids: set[str] = field(default_factory=set)
    rebalance_deadline_ms: int = 0
    initial_rebalance: bool = False
    offsets: dict[tuple[str, int], tuple[int, int, str | None]] = field(default_factory=dict)
    # offsets committed inside open transactions, by producer id: visible once the transaction commits
    pending_txn: dict[int, dict[tuple[str, int], tuple[int, int, str | None]]] = field(default_factory=dict)
    # (topic, partition) -> (commit timestamp, expire timestamp or -1) of each committed offset, in clock ms
    offset_times: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    state_ms: int = -1  # when it last became Empty or Stable (GroupMetadata's currentStateTimestamp), clock ms
    consumer: ConsumerGroupState | None = None  # set while the group runs the KIP-848 protocol

    @property
    def group_type(self) -> str:
        return "consumer" if self.consumer is not None else "classic"

    @property
    def state_name(self) -> str:
        return self.consumer.state_name() if self.consumer is not None else self.state


class GroupCoordinator(GroupOffsets):
    def __init__(self, clock: Any, initial_delay_ms: int = 0) -> None:
        self.clock = clock
        self.initial_delay_ms = initial_delay_ms
        self.groups: dict[str, Group] = {}
        self.consumer_logic: ConsumerGroupLogic | None = None  # the cluster wires in the KIP-848 logic
        # writes the changes to __consumer_offsets (state.offsets_topic.OffsetsTopicWriter); None: nothing written
        self.records: Any = None
        # (offsets.retention.minutes in ms, offsets.retention.check.interval.ms): set by the cluster; None: never
        self.retention: tuple[int, int] | None = None
        self._next_expiry_ms: int | None = None

    def _changed(self, group: Group, member_id: str | None = None) -> None:
        """The group's membership may have changed (``member_id``: only that KIP-848 member's, and the
        group's epochs): its records are written (by difference)."""
        if self.records is not None:
            self.records.group_changed(group, member_id)

    def group(self, group_id: str) -> Group:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id)
        return group

    # -- JoinGroup ------------------------------------------------------------------------------
    def join(self, group_id: str, member_id: str, instance_id: str | None, client_id: str, session_ms: int,
             rebalance_ms: int, protocol_type: str, protocols: list[tuple[str, bytes]], require_known: bool,
             reply: Callable[[JoinResult], None], skip_ok: bool = False, client_host: str = "") -> None:
        """A JoinGroup; ``require_known``: v4+ (MEMBER_ID_REQUIRED first), ``skip_ok``: v9+ (SkipAssignment);
        ``client_host``: the joining connection's address (DescribeGroups' ClientHost).
        Raises KafkaError for INVALID_GROUP_ID, INCONSISTENT_GROUP_PROTOCOL, FENCED_INSTANCE_ID and
        UNKNOWN_MEMBER_ID; every other answer goes to ``reply``."""
        check_group_id(group_id)
        group = self.groups.get(group_id)
        if group is not None and group.consumer is not None and group.consumer.members:
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"group {group_id} is a consumer group")
        if member_id and (group is None or group.consumer is not None):
            # Kafka (classicGroupJoinToClassicGroup): a member id names a member of an existing classic group
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"group {group_id} does not exist")
        group = self.group(group_id)
        group.consumer = None  # an empty consumer group turns classic
        if not self._supports_protocols(group, protocol_type, protocols):
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"protocols not supported by group {group_id}")
        if not member_id:
            holder = self._holder(group, instance_id)
            if holder is not None:
                holder.client_host = client_host
                self._replace_static(group, holder, client_id, (session_ms, rebalance_ms), protocols, reply, skip_ok)
                return
            member_id = f"{client_id or 'member'}-{uuid4_text()}"
            if require_known and instance_id is None:  # JoinGroup v4+: come back with the id given
                group.pending_ids.add(member_id)
                reply(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id))
                return
        elif member_id not in group.pending_ids:  # a pending member (MEMBER_ID_REQUIRED) is let in as it is
            validate_member(group, member_id, instance_id)
        group.pending_ids.discard(member_id)
        now = self.clock.now_ms()
        member = group.members.get(member_id)
        if member is not None:
            member.client_host = client_host
        if member is not None and member.protocols == protocols and (
                group.state == COMPLETING or (group.state == STABLE and member_id != group.leader)):
            # Kafka: a known member rejoining with unchanged metadata (it may have missed the answer)
            # gets the current generation again instead of starting a rebalance
            member.last_seen_ms = now
            reply(JoinResult(0, group.generation, group.protocol_name, group.leader or "", member_id,
                             self._roster(group) if member_id == group.leader else []))
            return
        if member is None:
            member = group.members[member_id] = Member(member_id, instance_id, client_id, session_ms, rebalance_ms,
                                                       protocols, now, client_host)
        member.protocols, member.session_timeout_ms, member.rebalance_timeout_ms = protocols, session_ms, rebalance_ms
        member.last_seen_ms = now
        member.join_reply = reply
        group.protocol_type = protocol_type
        if group.state in (EMPTY, STABLE, COMPLETING):
            self._start_rebalance(group, now, initial=group.state == EMPTY)
        self._maybe_complete_join(group)

    def _supports_protocols(self, group: Group, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """Whether ``group`` can take a member with this protocol type and these protocols."""
        if not group.members:
            if not protocol_type or not protocols:
                # Kafka (ClassicGroup.supportsProtocols): an empty group takes a member only with a protocol
                # type and at least one protocol; there would be nothing to vote for
                log.info("JoinGroup %s: no protocol type or no protocols: INCONSISTENT_GROUP_PROTOCOL", group.group_id)
                return False
            return True
        return protocol_type == group.protocol_type and bool(self._common_protocols(group, protocols))

    # -- static membership (KIP-345) ----------------------------------------------------------------
    @staticmethod
    def _holder(group: Group | None, instance_id: str | None) -> Member | None:
        if group is None or instance_id is None:
            return None
        return next((m for m in group.members.values() if m.group_instance_id == instance_id), None)

    def _replace_static(self, group: Group, holder: Member, client_id: str, timeouts: tuple[int, int],
                        protocols: list[tuple[str, bytes]], reply: Callable[[JoinResult], None], skip_ok: bool) -> None:
        """A static member rejoining with an empty member id takes over its old place under a new id
        (fencing the old id).  In a stable group whose chosen protocol stays the same there is no
        rebalance (Kafka's updateStaticMemberThenRejoin): the member gets the current generation and
        syncs its old assignment.  A rejoining leader is told so only from JoinGroup v9 (KIP-814), with
        every member and SkipAssignment; before v9 the answer names the leader's old id, so it acts as a
        follower and runs no assignment.  A group completing a rebalance starts another one (the
        leader may have assigned to the old id); a preparing one just takes the join."""
        old = holder.member_id
        if holder.join_reply is not None:  # the old instance, still waiting, is told it was replaced
            holder.join_reply(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old))
        if holder.sync_reply is not None:
            holder.sync_reply(ErrorCode.FENCED_INSTANCE_ID, b"")
        holder.join_reply = holder.sync_reply = None
        new = f"{client_id or 'member'}-{uuid4_text()}"
        del group.members[old]
        holder.member_id = new
        group.members[new] = holder
        now = self.clock.now_ms()
        holder.last_seen_ms = now
        holder.protocols = protocols
        holder.session_timeout_ms, holder.rebalance_timeout_ms = timeouts
        was_leader = group.leader == old
        if was_leader:
            group.leader = new
        if group.state == STABLE and self._vote(group) == group.protocol_name:
            self._changed(group)  # the member's new id (Kafka writes the group at once)
            if skip_ok:
                reply(JoinResult(0, group.generation, group.protocol_name, group.leader or "", new,
                                 self._roster(group) if was_leader else [], skip_assignment=was_leader))
            else:
                reply(JoinResult(0, group.generation, group.protocol_name, old if was_leader else group.leader or "",
                                 new, []))
            return
        holder.join_reply = reply
        if group.state in (EMPTY, STABLE, COMPLETING):
            self._start_rebalance(group, now, initial=False)
        self._maybe_complete_join(group)

    @staticmethod
    def _roster(group: Group) -> list[tuple[str, str | None, bytes]]:
        """What the leader's JoinGroup answer lists: every member with its metadata for the protocol."""
        return [(m.member_id, m.group_instance_id, dict(m.protocols)[group.protocol_name or ""])
                for m in group.members.values()]

    @staticmethod
    def _vote(group: Group) -> str:
        """Kafka's protocol selection: among the protocols every member supports, each member votes for
        the one it lists first; the most votes win (ties go to the leader's preference)."""
        members = list(group.members.values())
        common = {name for name, _ in members[0].protocols}
        for m in members[1:]:
            common &= {name for name, _ in m.protocols}
        votes: dict[str, int] = {}
        for m in members:
            choice = next(name for name, _ in m.protocols if name in common)
            votes[choice] = votes.get(choice, 0) + 1
        leader = group.members[group.leader]  # type: ignore[index]  # a group with members has a leader
        leader_order = [name for name, _ in leader.protocols if name in common]
        return max(leader_order, key=lambda name: (votes.get(name, 0), -leader_order.index(name)))

    def _common_protocols(self, group: Group, protocols: list[tuple[str, bytes]]) -> set[str]:
        names = {name for name, _ in protocols}
        for m in group.members.values():
            names &= {name for name, _ in m.protocols}
        return names

    def _start_rebalance(self, group: Group, now: int, initial: bool) -> None:
        for m in group.members.values():  # members waiting in a sync are told to rejoin
            if m.sync_reply is not None:
                m.sync_reply(ErrorCode.REBALANCE_IN_PROGRESS, b"")
                m.sync_reply = None
        group.state = PREPARING
        group.initial_rebalance = initial
        timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        group.rebalance_deadline_ms = now + (self.initial_delay_ms if initial else timeout)

    def _maybe_complete_join(self, group: Group, deadline_passed: bool = False) -> None:
        if group.state != PREPARING:
            return
        if not deadline_passed:
            if not all(m.join_reply is not None for m in group.members.values()):
                return  # still waiting for known members to rejoin
            if group.initial_rebalance and self.clock.now_ms() < group.rebalance_deadline_ms:
                return  # group.initial.rebalance.delay.ms: give more members the chance to join
        for mid in [mid for mid, m in group.members.items() if m.join_reply is None]:
            del group.members[mid]  # did not rejoin in time
        if not group.members:
            group.state, group.leader, group.protocol_name = EMPTY, None, None
            group.generation += 1
            group.state_ms = self.clock.now_ms()
            self._changed(group)
            return
        group.generation += 1
        if group.leader not in group.members:
            group.leader = next(iter(group.members))
        group.protocol_name = self._vote(group)
        group.state = COMPLETING
        roster = self._roster(group)
        for m in group.members.values():
            reply, m.join_reply = m.join_reply, None
            m.assignment = b""
            assert reply is not None
            reply(JoinResult(0, group.generation, group.protocol_name, group.leader, m.member_id,
                             roster if m.member_id == group.leader else []))

    # -- SyncGroup ------------------------------------------------------------------------------
    def sync(self, group_id: str, member_id: str, generation: int, assignments: dict[str, bytes],
             reply: Callable[[int, bytes], None], instance_id: str | None = None,
             protocol: tuple[str | None, str | None] = (None, None)) -> None:
        """A SyncGroup (``protocol``: the request's protocol type and name, v5+), checked in Kafka's order
        (classicGroupSync): UNKNOWN_MEMBER_ID (no such group, or no members), then the member
        (FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID), ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL (a protocol
        type or name other than the group's) and REBALANCE_IN_PROGRESS (a group preparing a rebalance), each
        raised as a KafkaError; the assignment, now or once the leader syncs, goes to ``reply`` (code,
        assignment)."""
        group = self.groups.get(group_id)
        if group is None or not group.members:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"group {group_id} has no members")
        member = validate_member(group, member_id, instance_id)
        if generation != group.generation:
            raise KafkaError(ErrorCode.ILLEGAL_GENERATION, f"generation {generation} is not {group.generation}")
        for asked, actual in zip(protocol, (group.protocol_type, group.protocol_name), strict=True):
            if asked is not None and actual is not None and asked != actual:
                raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"group {group_id} uses {actual}, not {asked}")
        member.last_seen_ms = self.clock.now_ms()
        if group.state == PREPARING:
            raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS, f"group {group_id} is rebalancing")
        if group.state == STABLE:
            reply(0, member.assignment)
            return
        member.sync_reply = reply
        if member_id == group.leader:
            for m in group.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            group.state = STABLE
            group.state_ms = self.clock.now_ms()
            self._changed(group)
            for m in group.members.values():
                if m.sync_reply is not None:
                    m.sync_reply(0, m.assignment)
                    m.sync_reply = None

    # -- Heartbeat / LeaveGroup -------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, generation: int, instance_id: str | None = None) -> None:
        """A Heartbeat, checked in Kafka's order (classicGroupHeartbeat): the member (FENCED_INSTANCE_ID /
        UNKNOWN_MEMBER_ID), then ILLEGAL_GENERATION, then REBALANCE_IN_PROGRESS while the group prepares a
        rebalance; each raised as a KafkaError.  The member's session is kept unless the member or its
        generation is refused."""
        group = self.groups.get(group_id)
        member = validate_member(group, member_id, instance_id)
        assert group is not None
        if generation != group.generation:
            raise KafkaError(ErrorCode.ILLEGAL_GENERATION, f"generation {generation} is not {group.generation}")
        member.last_seen_ms = self.clock.now_ms()
        if group.state == PREPARING:
            raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS, f"group {group_id} is rebalancing")

    def leave(self, group_id: str, member_id: str, instance_id: str | None = None) -> None:
        """A member leaves, checked as Kafka's classicGroupLeave: with no member id, the static member holding
        ``instance_id``; a pending member (given its id by MEMBER_ID_REQUIRED) just goes; any other is
        validated (FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID, raised as a KafkaError)."""
        group = self.groups.get(group_id)
        if not member_id:
            holder = self._holder(group, instance_id)
            if holder is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"no member of {group_id} has instance {instance_id}")
            member_id = holder.member_id
        elif group is not None and member_id in group.pending_ids:
            group.pending_ids.discard(member_id)
            return
        else:
            validate_member(group, member_id, instance_id)
        assert group is not None
        self._remove(group, [member_id])

    def _remove(self, group: Group, member_ids: list[str]) -> None:
        for mid in member_ids:
            member = group.members.pop(mid, None)
            if member is not None and member.join_reply is not None:
                member.join_reply(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=mid))
        if group.leader in member_ids:
            group.leader = None
        now = self.clock.now_ms()
        if not group.members:
            if group.state != EMPTY:
                group.state = EMPTY
                group.generation += 1
                group.state_ms = now
                self._changed(group)
            return
        if group.state != PREPARING:
            self._start_rebalance(group, now, initial=False)
        self._maybe_complete_join(group)

    # -- KIP-848 ConsumerGroupHeartbeat ------------------------------------------------------------
    def consumer_heartbeat(self, group_id: str, **request: Any) -> HeartbeatResult:
        """A ConsumerGroupHeartbeat (see mockbroker.state.consumer_groups); raises KafkaError."""
        check_group_id(group_id)
        group = self.group(group_id)
        if group.consumer is None:
            if group.members:
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            group.consumer = ConsumerGroupState(group_id=group_id)
            group.protocol_type = "consumer"
        assert self.consumer_logic is not None
        try:
            return self.consumer_logic.heartbeat(group.consumer, **request)
        finally:
            self._changed(group, request.get("member_id") or None)

    def timers_live(self) -> bool:
        """A group whose members' sessions or whose rebalance run on the clock (tick() has work)."""
        return any(g.members or g.pending_ids or g.state != EMPTY or (g.consumer is not None and g.consumer.members)
                   for g in self.groups.values())

    def tick(self) -> None:
        """Expire members whose session ran out, finish rebalances whose time is up, and every
        offsets.retention.check.interval.ms expire committed offsets (mockbroker.state.offsets_expiry)."""
        now = self.clock.now_ms()
        if self.retention is not None:
            if self._next_expiry_ms is None:
                self._next_expiry_ms = now + self.retention[1]
            elif now >= self._next_expiry_ms:
                from mockbroker.state.offsets_expiry import expire_offsets

                self._next_expiry_ms = now + self.retention[1]
                expire_offsets(self, now, self.retention[0])
        for group in list(self.groups.values()):
            if group.consumer is not None and self.consumer_logic is not None:
                g = group.consumer
                before = (g.group_epoch, len(g.members))
                self.consumer_logic.tick(g)
                if (g.group_epoch, len(g.members)) != before:
                    self._changed(group)
                continue
            expired = [mid for mid, m in group.members.items()
                       if m.join_reply is None and now - m.last_seen_ms > m.session_timeout_ms]
            if expired:
                self._remove(group, expired)
            if group.state == PREPARING and now >= group.rebalance_deadline_ms:
                self._maybe_complete_join(group, deadline_passed=True)

    # -- listing and deleting -------------------------------------------------------------------
    def listed(self) -> list[Group]:
        """Groups that exist: with members, or with committed offsets."""
        return [g for g in self.groups.values()
                if g.members or g.offsets or g.state != EMPTY or (g.consumer is not None and g.consumer.members)]

    def delete(self, group_id: str) -> None:
        """DeleteGroups: an empty group goes with its offsets; raises GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP."""
        group = self.groups.get(group_id)
        active = group is not None and (group.members or (group.consumer is not None and group.consumer.members))
        if group is None or not (active or group.offsets):
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id} does not exist")
        if active:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, f"group {group_id} has members")
        del self.groups[group_id]
        if self.records is not None:  # tombstones: its offsets (those held by open transactions too), its records
            held = dict.fromkeys(group.offsets)
            for pending in group.pending_txn.values():
                held.update(dict.fromkeys(pending))
            self.records.group_deleted(group_id, list(held))


def check_group_id(group_id: str | None) -> None:
    if not group_id:
        raise KafkaError(ErrorCode.INVALID_GROUP_ID, "empty group id")
