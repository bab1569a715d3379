"""Running a whole no-loss audit: a 3-broker cluster, producers under a seeded fault schedule, read-back.

    from mockbroker.audit import AuditOptions, run_audit
    figures = run_audit(AuditOptions(records=20_000, seed=7))
    print(figures.table()); assert figures.passed

The idempotent producers write to topic ``audit`` (read back read_uncommitted), the transactional
ones to ``audit-txn`` (read back read_committed) and send offsets for ``audit-input`` to one group
each.  Faults fire from the first record to the last acknowledgement (see mockbroker.audit.chaos),
then stop, every broker comes back, and the topics are read back and checked.  Records the read-back
missed are looked up in the still-running cluster (mockbroker.audit.explain) and the figures' notes
say where the broker keeps them and what decided their fate.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mockbroker.audit.chaos import Chaos, ChaosPlan
from mockbroker.audit.explain import explain_missing
from mockbroker.audit.figures import AuditFigures
from mockbroker.audit.producers import (
    IdempotentLog,
    TxnLog,
    aiokafka_idempotent,
    confluent_idempotent,
    confluent_transactional,
    kafka_python_idempotent,
)
from mockbroker.audit.readback import (
    check_idempotent,
    check_transactional,
    committed_offsets,
    missed_acknowledged,
    missed_committed,
    read_topic,
)

TOPIC, TXN_TOPIC, INPUT_TOPIC = "audit", "audit-txn", "audit-input"


@dataclass
class AuditOptions:
    records: int = 20_000  # idempotent records, over the confluent-kafka producers
    confluent_producers: int = 2
    kafka_python_producers: int = 1
    kafka_python_records: int = 3_000  # per kafka-python producer (a pure-Python client is slower)
    aiokafka_producers: int = 1
    aiokafka_records: int = 3_000  # per aiokafka producer
    transactional_producers: int = 2
    transactions: int = 40  # per transactional producer
    per_txn: int = 50
    abort_every: int = 7
    partitions: int = 6
    value_size: int = 64
    duration_s: float = 20.0  # every producer spreads its records over this long (0: flat out)
    seed: int = 1
    chaos: ChaosPlan = field(default_factory=ChaosPlan)
    config: dict[str, Any] = field(default_factory=dict)  # broker configs for the cluster


def run_audit(options: AuditOptions, progress: Callable[[str], None] | None = None) -> AuditFigures:
    from mockbroker.cluster import MockCluster

    say = progress or (lambda _line: None)
    options.chaos.seed = options.seed
    figures = AuditFigures()
    started = time.perf_counter()
    topics = {TOPIC: options.partitions, TXN_TOPIC: options.partitions,
              INPUT_TOPIC: max(options.transactional_producers, 1)}
    with MockCluster(brokers=3, topics=topics, config=options.config) as cluster:
        bootstrap = cluster.bootstrap_servers
        idem: list[IdempotentLog] = []
        txns: list[TxnLog] = []
        threads: list[threading.Thread] = []
        share = _split(options.records, options.confluent_producers)
        for i, count in enumerate(share):
            idem.append(IdempotentLog(f"confluent-{i}"))
            threads.append(threading.Thread(target=confluent_idempotent, name=idem[-1].name,
                                            args=(bootstrap, TOPIC, idem[-1].name, count, options.value_size,
                                                  idem[-1], options.duration_s)))
        for i in range(options.kafka_python_producers):
            idem.append(IdempotentLog(f"kafka-python-{i}"))
            threads.append(threading.Thread(target=kafka_python_idempotent, name=idem[-1].name,
                                            args=(bootstrap, TOPIC, idem[-1].name, options.kafka_python_records,
                                                  options.value_size, idem[-1], options.duration_s)))
        for i in range(options.aiokafka_producers):
            idem.append(IdempotentLog(f"aiokafka-{i}"))
            threads.append(threading.Thread(target=aiokafka_idempotent, name=idem[-1].name,
                                            args=(bootstrap, TOPIC, idem[-1].name, options.aiokafka_records,
                                                  options.value_size, idem[-1], options.duration_s)))
        groups: dict[str, tuple[str, int]] = {}
        for i in range(options.transactional_producers):
            txns.append(TxnLog(f"txn-{i}", input_partition=i))
            groups[txns[-1].name] = (f"audit-group-{i}", i)
            threads.append(threading.Thread(
                target=confluent_transactional, name=txns[-1].name,
                args=(bootstrap, TXN_TOPIC, txns[-1].name, options.transactions, options.per_txn,
                      options.value_size, txns[-1]),
                kwargs={"abort_every": options.abort_every, "group": f"audit-group-{i}", "input_topic": INPUT_TOPIC,
                        "duration_s": options.duration_s}))
        keys = [t.name for t in txns] + [g for g, _ in groups.values()]
        chaos = Chaos(cluster, options.chaos, {TOPIC: options.partitions, TXN_TOPIC: options.partitions}, keys,
                      [TXN_TOPIC])
        say(f"producing: {len(idem)} idempotent and {len(txns)} transactional producers, faults seeded {options.seed}")
        chaos.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        chaos.stop()
        figures.faults = chaos.counts()
        producers: list[IdempotentLog | TxnLog] = [*idem, *txns]
        say("producers done: " + ", ".join(f"{e.name} {e.seconds:.1f} s" for e in producers))
        say(f"produced in {time.perf_counter() - started:.1f} s; reading back")
        records = read_topic(bootstrap, TOPIC, options.partitions, "read_uncommitted")
        check_idempotent(records, idem, figures)
        figures.notes.extend(explain_missing(cluster, TOPIC, missed_acknowledged(records, idem)))
        if txns:
            offsets = committed_offsets(bootstrap, INPUT_TOPIC, groups)
            records = read_topic(bootstrap, TXN_TOPIC, options.partitions, "read_committed")
            check_transactional(records, txns, figures, offsets)
            figures.notes.extend(explain_missing(cluster, TXN_TOPIC, missed_committed(records, txns)))
            for entry in txns:
                if entry.errors:
                    figures.notes.append(f"{entry.name}: {len(entry.errors)} errors met, e.g. {entry.errors[0]}")
    figures.seconds = time.perf_counter() - started
    return figures


def _split(total: int, parts: int) -> list[int]:
    if parts <= 0:
        return []
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]
