"""A seeded random fault schedule for a no-loss audit, run against an in-process MockCluster.

Two kinds of faults:
- request faults: fault rules (mockbroker.faults) that close the connection before handling a
  request (``drop_before``) or after handling it without answering (``drop_after``), each with a
  seeded probability, on Produce and on the transaction path (InitProducerId, FindCoordinator,
  AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn); and Produce requests to the
  transactional topics refused with INVALID_RECORD (not retriable: the transaction must abort);
- cluster actions fired by a thread at seeded random moments: a partition's leader moves, a broker
  restarts (down, then up again a moment later; never more than one down at a time), the
  coordinator of a transactional id or a group moves.

``Chaos.counts()`` gives how often each fault acted, for the audit figures.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mockbroker.errors import KafkaError
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster
    from mockbroker.faults import FaultRule

log = logging.getLogger("mockbroker.audit")
TXN_APIS = ("InitProducerId", "FindCoordinator", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit",
            "EndTxn")


@dataclass
class ChaosPlan:
    seed: int = 1
    produce_drop: float = 0.01  # probability of each of drop_before / drop_after per Produce request
    txn_drop: float = 0.05  # the same for each transaction API request
    txn_produce_error: float = 0.01  # probability that a Produce to a transactional topic fails (INVALID_RECORD)
    interval_s: float = 0.5  # mean time between cluster actions
    restart_s: float = 1.0  # how long a restarted broker stays down
    leader_moves: bool = True
    restarts: bool = True
    coordinator_moves: bool = True


class Chaos:
    def __init__(self, cluster: MockCluster, plan: ChaosPlan, topics: dict[str, int], keys: list[str],
                 txn_topics: list[str] | None = None) -> None:
        self.cluster = cluster
        self.txn_topics = txn_topics or []  # where a produce error makes the transaction abortable
        self.plan = plan
        self.topics = topics  # topic -> partitions whose leaders may move
        self.keys = keys  # transactional ids and group ids whose coordinators may move
        self.rng = random.Random(plan.seed)
        self.actions: Counter[str] = Counter()
        self.rules: list[FaultRule] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        plan = self.plan
        seeds = iter(range(plan.seed * 1000, plan.seed * 1000 + 100))
        for action in ("drop_before", "drop_after"):
            if plan.produce_drop > 0:
                self.rules.append(self.cluster.add_fault(api="Produce", action=action, probability=plan.produce_drop,
                                                         seed=next(seeds), times=None, name=f"audit {action}"))
            if plan.txn_drop > 0:
                for api_name in TXN_APIS:
                    self.rules.append(self.cluster.add_fault(api=api_name, action=action, probability=plan.txn_drop,
                                                             seed=next(seeds), times=None,
                                                             name=f"audit {action}"))
        if plan.txn_produce_error > 0 and self.txn_topics:
            self.rules.append(self.cluster.add_fault(api="Produce", topics=self.txn_topics, action="error",
                                                     error="INVALID_RECORD", scope="partition",
                                                     probability=plan.txn_produce_error, seed=next(seeds),
                                                     times=None, name="audit error"))
        self._thread = threading.Thread(target=self._run, name="audit-chaos", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop firing, remove the rules and bring every broker back up."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        for rule in self.rules:
            self.cluster.remove_fault(rule.id)
        for node_id in list(self.cluster.call(lambda: list(self.cluster.state.down_brokers))):
            self.cluster.broker_up(node_id)

    def counts(self) -> dict[str, int]:
        out: Counter[str] = Counter(self.actions)
        for rule in self.rules:
            kind = rule.name.split()[-1]
            if rule.action == "error":
                kind = f"error {api.api_name(0)} INVALID_RECORD"
            apis = sorted(rule.to_dict().get("apis", []))
            label = kind if rule.action == "error" else f"{kind} {'/'.join(api.api_name(k) for k in apis)}"
            out[label] += rule.hits
        return dict(out)

    # -- the action thread ------------------------------------------------------------------------
    def _run(self) -> None:
        up_at: tuple[float, int] | None = None
        while not self._stop.wait(self.rng.expovariate(1 / self.plan.interval_s)):
            try:
                if up_at is not None and time.monotonic() >= up_at[0]:
                    self.cluster.broker_up(up_at[1])
                    self.actions["broker restarts"] += 1
                    up_at = None
                choice = self.rng.random()
                if choice < 0.5 and self.plan.leader_moves:
                    topic = self.rng.choice(sorted(self.topics))
                    self.cluster.move_leader(topic, self.rng.randrange(self.topics[topic]))
                    self.actions["leader moves"] += 1
                elif choice < 0.8 and self.plan.coordinator_moves and self.keys:
                    self.cluster.move_coordinator(self.rng.choice(self.keys))
                    self.actions["coordinator moves"] += 1
                elif self.plan.restarts and up_at is None:
                    node_id = self.rng.choice([b.node_id for b in self.cluster.brokers])
                    self.cluster.broker_down(node_id)
                    up_at = (time.monotonic() + self.plan.restart_s, node_id)
            except KafkaError as exc:  # e.g. a move to a broker that just went down
                log.info("audit chaos: %s", exc)
        if up_at is not None:
            self.cluster.broker_up(up_at[1])
            self.actions["broker restarts"] += 1
