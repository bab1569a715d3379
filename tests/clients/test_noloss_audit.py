"""The no-loss audit (mockbroker.audit): real clients (confluent-kafka, kafka-python and aiokafka
idempotent producers, confluent-kafka transactional ones) under seeded random faults lose, duplicate
and reorder nothing, and read_committed consumers see no aborted record; the audit's checks
themselves catch each kind of failure; and ``python -m bench.noloss`` prints the figures (table and
JSON)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mockbroker.audit import AuditFigures, AuditOptions, ChaosPlan, run_audit
from mockbroker.audit.producers import IdempotentLog, TxnLog
from mockbroker.audit.readback import (
    check_idempotent,
    check_transactional,
    missed_acknowledged,
    missed_committed,
    offset_matches,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def quiet_clients() -> Iterator[None]:
    """Connections are dropped on purpose: the clients' complaints are noise here (levels restored after)."""
    loggers = [logging.getLogger(name) for name in ("mockbroker.audit.client", "kafka", "aiokafka")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    yield
    for lg, level in zip(loggers, levels, strict=True):
        lg.setLevel(level)


@pytest.mark.slow
@pytest.mark.clients
def test_nothing_lost_duplicated_or_reordered_under_random_faults() -> None:
    figures = run_audit(AuditOptions(records=30_000, kafka_python_records=6_000, aiokafka_records=6_000,
                                     transactions=30, per_txn=50,
                                     duration_s=25, seed=10,
                                     chaos=ChaosPlan(produce_drop=0.02, txn_drop=0.05, txn_produce_error=0.02)))
    print(figures.table())
    assert figures.passed, figures.problems()
    assert figures.produced == figures.acknowledged == figures.read == 42_000
    assert figures.committed_read == figures.committed_records > 0
    assert figures.aborted_records > 0 and figures.aborted_seen == 0
    assert figures.transactions_aborted > 0 and figures.transactions_aborted_by_faults > 0
    assert figures.transactions_committed + figures.transactions_aborted + figures.transactions_aborted_by_faults \
        + figures.transactions_in_doubt == figures.transactions == 60
    faults = figures.faults
    for kind in ("drop_before Produce", "drop_after Produce", "leader moves", "coordinator moves", "broker restarts",
                 "error Produce INVALID_RECORD"):
        assert faults[kind] > 0, (kind, faults)
    assert sum(n for k, n in faults.items() if k.split()[-1] in ("EndTxn", "AddPartitionsToTxn")) > 0, faults


def _idem(name: str, acked: range) -> IdempotentLog:
    return IdempotentLog(name, produced=len(acked), acked=set(acked))


def test_checks_count_lost_duplicated_and_reordered_records() -> None:
    figures = AuditFigures()
    records = {0: [("a", 0, -1), ("a", 2, -1), ("a", 1, -1), ("b", 0, -1)],  # a-1 after a-2: out of order
               1: [("a", 3, -1), ("a", 3, -1)]}  # a-3 twice; a-4 and b-1 never read
    check_idempotent(records, [_idem("a", range(5)), _idem("b", range(2))], figures)
    assert (figures.produced, figures.acknowledged, figures.read) == (7, 7, 6)
    assert (figures.lost, figures.duplicated, figures.out_of_order) == (2, 1, 2)
    assert not figures.passed and "lost: 2" in figures.problems()
    assert missed_acknowledged(records, [_idem("a", range(5)), _idem("b", range(2))]) == {("a", 4), ("b", 1)}


def test_checks_count_aborted_records_seen_and_partial_transactions() -> None:
    entry = TxnLog("t", records={0: [0, 1], 1: [2, 3], 2: [4, 5]}, committed=[0], aborted=[1], in_doubt=[2])
    figures = AuditFigures()
    check_transactional({0: [("t", 0, 0), ("t", 2, 1), ("t", 4, 2)], 1: [("t", 1, 0)]}, [entry], figures,
                        {"t": 1})
    assert (figures.committed_records, figures.committed_read, figures.committed_lost) == (2, 2, 0)
    assert (figures.aborted_records, figures.aborted_seen, figures.partial_transactions) == (2, 1, 1)
    assert figures.group_offsets_wrong == 0 and not figures.passed
    assert offset_matches(entry, 3) and not offset_matches(entry, 2) and not offset_matches(entry, None)
    assert missed_committed({0: [("t", 0, 0)]}, [entry]) == {("t", 1)}  # committed transaction 0 holds 0 and 1


@pytest.mark.clients
def test_a_failed_audit_says_where_the_broker_keeps_what_was_missed() -> None:
    """explain_missing names the batch holding a missed record, the producer's marker after it and the
    partition's watermarks, and says which missed records the log does not hold at all."""
    from confluent_kafka import Producer

    from mockbroker.audit.explain import explain_missing
    from mockbroker.audit.producers import value
    from mockbroker.cluster import MockCluster

    with MockCluster(brokers=1, topics={"x": 1}) as cluster:
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "t", "linger.ms": 0})
        p.init_transactions(30)
        for txn, commit in ((0, True), (1, False)):
            p.begin_transaction()
            for seq in range(txn * 3, txn * 3 + 3):
                p.produce("x", value("t", seq, txn, 32), partition=0)
            p.flush(30)
            (p.commit_transaction if commit else p.abort_transaction)(30)
        lines = explain_missing(cluster, "x", {("t", 1), ("t", 4), ("t", 99)})
    text = "\n".join(lines)
    assert "x-0 offsets 0-2: 1 missed (t seq 1..1)" in text and "next marker here: COMMIT at 3" in text, text
    assert "x-0 offsets 4-6: 1 missed (t seq 4..4)" in text and "next marker here: ABORT at 7" in text, text
    assert "aborted ranges covering it: ['4-7']" in text, text
    assert "last stable offset 8, high watermark 8" in text, text
    assert "1 missed record(s) are not in the log at all, e.g. [('t', 99)]" in text, text
    assert "coordinator: t producer" in text and "state CompleteAbort" in text, text
    assert explain_missing(cluster, "x", set()) == []


@pytest.mark.slow
@pytest.mark.clients
def test_bench_entry_prints_the_figures_as_a_table_and_as_json() -> None:
    args = [sys.executable, "-m", "bench.noloss", "--records", "2000", "--kafka-python-producers", "0",
            "--aiokafka-producers", "0",
            "--transactional-producers", "1", "--transactions", "6", "--duration", "3", "--seed", "3",
            "--txn-drop", "0", "--interval", "2"]  # the figures' form is under test here, not the faults
    table = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert table.returncode == 0, table.stdout[-2000:] + table.stderr[-2000:]
    assert "PASSED" in table.stdout and "idempotent records produced" in table.stdout
    out = subprocess.run([*args, "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    assert doc["passed"] and doc["produced"] == doc["acknowledged"] == doc["read"] == 2000
    assert doc["aborted_seen"] == 0 and doc["transactions"] == 6
