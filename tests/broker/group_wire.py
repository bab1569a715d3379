"""Groups put into a given state with real requests over the wire, for the tables of check-order tests
(tests/broker/test_group_check_order.py, tests/broker/test_offset_check_order.py).

Each state is reached as a client reaches it: JoinGroup (MEMBER_ID_REQUIRED, then again with the id),
SyncGroup from the leader, JoinGroup again to start a rebalance, LeaveGroup, or ConsumerGroupHeartbeat
for a KIP-848 group.  Requests go to the group's coordinator (or, asked for, to another broker).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from tests.broker.wire import WireClient

R = {key: api.request_module(key) for key in (8, 9, 11, 12, 13, 14, 22, 25, 28, 68)}
SESSION_MS = 30000  # long enough that no member of a test expires
PROTOCOL = ("consumer", "range")
TOPIC = "t"  # the topic the groups commit offsets for (2 partitions)


@dataclass
class Setup:
    """A group in a known state: its id, one member (id, generation, instance id), and what it needs kept."""
    group: str
    member: str = ""
    generation: int = -1
    instance: str | None = None
    other: str = ""  # a second member's id, or a pending one's
    protocol_name: str = PROTOCOL[1]


class GroupStates:
    """Builds groups in the states the tables need on one cluster; closes its connections at the end."""

    _ids = itertools.count()  # group ids are unique across the module's tests

    @classmethod
    @contextmanager
    def on_a_cluster(cls) -> Iterator[GroupStates]:
        """Three brokers, the topic the groups commit offsets for; the connections closed at the end."""
        with MockCluster(brokers=3, topics={TOPIC: 2}) as cluster:
            states = cls(cluster)
            try:
                yield states
            finally:
                states.close()

    def build(self, state: str, prefix: str = "g") -> Setup:
        """A fresh group in ``state``: "none" (no group), "static" (stable, its member static) or the name of
        one of the builder methods below."""
        group = f"{prefix}{next(self._ids)}-{state}"
        if state == "none":
            return Setup(group)
        if state == "static":
            return self.stable(group, instance=f"i-{group}")
        return getattr(self, state)(group)  # type: ignore[no-any-return]

    def __init__(self, cluster: MockCluster) -> None:
        self.cluster = cluster
        self.clients: list[WireClient] = []

    def close(self) -> None:
        for c in self.clients:
            c.close()

    def client(self, group: str, coordinator: bool = True) -> WireClient:
        """A new connection to the group's coordinator (or to a broker that is not it)."""
        node = self.cluster.state.coordinator_for(group).node_id
        if not coordinator:
            node = next(b for b in self.cluster.state.brokers if b != node)
        c = WireClient(self.cluster.brokers[node].port, timeout=5)
        self.clients.append(c)
        return c

    def state(self, group: str) -> str:
        return self.cluster.state.groups.groups[group].state

    def wait_state(self, group: str, wanted: str) -> None:
        deadline = time.monotonic() + 5
        while self.state(group) != wanted:
            assert time.monotonic() < deadline, f"group {group} is {self.state(group)}, not {wanted}"
            time.sleep(0.005)

    # -- classic groups ------------------------------------------------------------------------------
    @staticmethod
    def join_body(group: str, member: str = "", instance: str | None = None, session_ms: int = SESSION_MS,
                  protocol_type: str = PROTOCOL[0], protocols: tuple[str, ...] = (PROTOCOL[1],)) -> Any:
        m = R[11]
        return m.JoinGroupRequest(group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=SESSION_MS,
                                  member_id=member, group_instance_id=instance, protocol_type=protocol_type,
                                  protocols=[m.JoinGroupRequestProtocol(name=p, metadata=b"") for p in protocols])

    def join(self, w: WireClient, group: str, member: str = "", instance: str | None = None) -> Any:
        """A member's join, with the MEMBER_ID_REQUIRED round trip of a new dynamic member."""
        r = w.call(11, 5, self.join_body(group, member, instance))
        if r.error_code == ErrorCode.MEMBER_ID_REQUIRED:
            r = w.call(11, 5, self.join_body(group, r.member_id, instance))
        assert r.error_code == 0, r
        return r

    def sync(self, w: WireClient, group: str, member: str, generation: int, instance: str | None = None) -> None:
        m = R[14]
        r = w.call(14, 5, m.SyncGroupRequest(group_id=group, generation_id=generation, member_id=member,
                                             group_instance_id=instance, protocol_type=PROTOCOL[0],
                                             protocol_name=PROTOCOL[1],
                                             assignments=[m.SyncGroupRequestAssignment(member_id=member,
                                                                                       assignment=b"")]))
        assert r.error_code == 0, r

    def stable(self, group: str, instance: str | None = None) -> Setup:
        """One member (static when ``instance``), joined and synced: the group is Stable."""
        w = self.client(group)
        r = self.join(w, group, instance=instance)
        self.sync(w, group, r.member_id, r.generation_id, instance)
        assert self.state(group) == "Stable"
        return Setup(group, r.member_id, r.generation_id, instance)

    def completing(self, group: str) -> Setup:
        """Stable at generation 1, then the leader (the only member) rejoins: generation 2, waiting for its
        SyncGroup (CompletingRebalance).  ``generation`` is the new one."""
        s = self.stable(group)
        r = self.join(self.client(group), group, s.member)
        assert r.generation_id == s.generation + 1 and self.state(group) == "CompletingRebalance"
        s.generation = r.generation_id
        return s

    def preparing(self, group: str) -> Setup:
        """Stable at generation 1, then a second member asks to join and waits: PreparingRebalance, still at
        generation 1 (the first member has not rejoined).  ``other`` is the waiting member."""
        s = self.stable(group)
        w = self.client(group)
        first = w.call(11, 5, self.join_body(group))
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        w.send(11, 5, self.join_body(group, first.member_id))  # its answer waits for the rebalance
        self.wait_state(group, "PreparingRebalance")
        s.other = first.member_id
        return s

    def pending(self, group: str) -> Setup:
        """Stable, and a second member given its id by MEMBER_ID_REQUIRED that has not joined with it."""
        s = self.stable(group)
        first = self.client(group).call(11, 5, self.join_body(group))
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        s.other = first.member_id
        return s

    def emptied(self, group: str) -> Setup:
        """A group whose only member left: Empty; ``member`` and ``generation`` are the ones it had."""
        s = self.stable(group)
        m = R[13]
        r = self.client(group).call(13, 3, m.LeaveGroupRequest(group_id=group, members=[
            m.MemberIdentity(member_id=s.member)]))
        assert r.error_code == 0 and r.members[0].error_code == 0
        assert self.state(group) == "Empty"
        return s

    # -- KIP-848 groups --------------------------------------------------------------------------------
    def consumer(self, group: str) -> Setup:
        """A KIP-848 group with one member, its assignment reconciled: ``generation`` is its member epoch."""
        w = self.client(group)
        r = w.call(68, 1, R[68].ConsumerGroupHeartbeatRequest(group_id=group, member_id=f"m-{group}", member_epoch=0,
                                                              rebalance_timeout_ms=SESSION_MS,
                                                              subscribed_topic_names=[TOPIC]))
        assert r.error_code == 0 and r.member_epoch > 0, r
        return Setup(group, r.member_id, r.member_epoch)

    # -- transactions ----------------------------------------------------------------------------------
    def producer(self, txn_id: str, group: str) -> tuple[int, int]:
        """A transactional producer (its id and epoch) whose open transaction includes ``group``'s offsets."""
        w = self.client(txn_id)
        init = w.call(22, 4, R[22].InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60000))
        assert init.error_code == 0
        added = w.call(25, 3, R[25].AddOffsetsToTxnRequest(transactional_id=txn_id, producer_id=init.producer_id,
                                                           producer_epoch=init.producer_epoch, group_id=group))
        assert added.error_code == 0
        return init.producer_id, init.producer_epoch
