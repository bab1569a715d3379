"""Reading an audited topic back and checking it against what the producers were told.

:func:`read_topic` reads every partition from the start to its end (read_uncommitted: the high
watermark; read_committed: the last stable offset) with a confluent-kafka consumer that assigns
the partitions itself (no group), and returns, per partition, the (producer, sequence, transaction)
of each record in offset order.  :func:`check_idempotent` and :func:`check_transactional` turn that
into the audit figures.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from mockbroker.audit.figures import AuditFigures
from mockbroker.audit.producers import CLIENT_LOG, IdempotentLog, TxnLog, parse

Records = dict[int, list[tuple[str, int, int]]]


def read_topic(bootstrap: str, topic: str, partitions: int, isolation: str, timeout_s: float = 300) -> Records:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"audit-reader-{topic}", "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True, "fetch.max.bytes": 16 * 1024 * 1024,
                  "max.partition.fetch.bytes": 4 * 1024 * 1024, "logger": CLIENT_LOG})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    out: Records = {p: [] for p in range(partitions)}
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while len(at_end) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} back: partitions {sorted(set(out) - at_end)} never reached "
                                   f"their end in {timeout_s:.0f} s")
            for msg in c.consume(10_000, 1.0):
                err, partition = msg.error(), msg.partition()
                if err is not None and err.code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(f"reading {topic} back: {err}")
                assert partition is not None  # a record or a partition's end names its partition
                if err is not None:  # the partition's end
                    at_end.add(partition)
                    continue
                at_end.discard(partition)
                out[partition].append(parse(msg.value() or b""))  # the audit's records all have a value
    finally:
        c.close()
    return out


def _order_and_copies(records: Records) -> tuple[Counter[tuple[str, int]], int]:
    """How often each (producer, sequence) was read, and how many records came after a later one of
    the same producer in their partition."""
    seen: Counter[tuple[str, int]] = Counter()
    out_of_order = 0
    for rows in records.values():
        last: dict[str, int] = {}
        for producer, seq, _txn in rows:
            seen[(producer, seq)] += 1
            if seq <= last.get(producer, -1):
                out_of_order += 1
            last[producer] = max(seq, last.get(producer, -1))
    return seen, out_of_order


def check_idempotent(records: Records, logs: list[IdempotentLog], figures: AuditFigures) -> None:
    seen, out_of_order = _order_and_copies(records)
    figures.out_of_order += out_of_order
    figures.read += sum(len(rows) for rows in records.values())
    figures.duplicated += sum(n - 1 for n in seen.values() if n > 1)
    for entry in logs:
        figures.produced += entry.produced
        figures.acknowledged += len(entry.acked)
        figures.failed += len(entry.failed)
        figures.lost += sum(1 for seq in entry.acked if (entry.name, seq) not in seen)
        figures.unacknowledged_read += sum(1 for seq in entry.failed if (entry.name, seq) in seen)
        if entry.failed:
            figures.notes.append(f"{entry.name}: {len(entry.failed)} failed deliveries, e.g. "
                                 f"{next(iter(entry.failed.values()))}")


def check_transactional(records: Records, logs: list[TxnLog], figures: AuditFigures,
                        group_offsets: dict[str, int | None] | None = None) -> None:
    seen, out_of_order = _order_and_copies(records)
    figures.committed_out_of_order += out_of_order
    for entry in logs:
        figures.transactions += len(entry.records)
        figures.transactions_committed += len(entry.committed)
        figures.transactions_aborted += len(entry.aborted)
        figures.transactions_aborted_by_faults += len(entry.aborted_by_faults)
        figures.transactions_in_doubt += len(entry.in_doubt)
        for txn in entry.committed:
            for seq in entry.records[txn]:
                figures.committed_records += 1
                copies = seen.get((entry.name, seq), 0)
                figures.committed_read += min(copies, 1)
                figures.committed_lost += copies == 0
                figures.committed_duplicated += max(copies - 1, 0)
        for txn in entry.aborted + entry.aborted_by_faults:
            for seq in entry.records[txn]:
                figures.aborted_records += 1
                figures.aborted_seen += seen.get((entry.name, seq), 0)
        for txn in entry.in_doubt:
            found = sum(1 for seq in entry.records[txn] if seen.get((entry.name, seq), 0))
            figures.in_doubt_records += len(entry.records[txn])
            figures.partial_transactions += 0 < found < len(entry.records[txn])
            figures.committed_duplicated += sum(max(seen.get((entry.name, s), 0) - 1, 0) for s in entry.records[txn])
        if group_offsets is not None:
            figures.group_offsets_wrong += not offset_matches(entry, group_offsets.get(entry.name))


def missed_acknowledged(records: Records, logs: list[IdempotentLog]) -> set[tuple[str, int]]:
    """(producer, sequence) of each acknowledged idempotent record the read-back did not see."""
    wanted = {(e.name, seq) for e in logs for seq in e.acked}
    return wanted - _read(records)


def missed_committed(records: Records, logs: list[TxnLog]) -> set[tuple[str, int]]:
    """(producer, sequence) of each record of a committed transaction the read-back did not see."""
    wanted = {(e.name, seq) for e in logs for txn in e.committed for seq in e.records[txn]}
    return wanted - _read(records)


def _read(records: Records) -> set[tuple[str, int]]:
    return {(producer, seq) for rows in records.values() for producer, seq, _txn in rows}


def offset_matches(entry: TxnLog, offset: int | None) -> bool:
    """The group's committed offset is the one sent with the last committed transaction (or with a
    later in-doubt one, which may have committed)."""
    last = max(entry.committed, default=-1)
    allowed = {last + 1} | {t + 1 for t in entry.in_doubt if t > last}
    return (offset if offset is not None and offset >= 0 else 0) in allowed


def committed_offsets(bootstrap: str, input_topic: str, groups: dict[str, tuple[str, int]]) -> dict[str, int | None]:
    """producer name -> the offset its group committed for its input partition."""
    from confluent_kafka import Consumer, TopicPartition

    out: dict[str, int | None] = {}
    for name, (group, partition) in groups.items():
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                      "logger": CLIENT_LOG})
        try:
            got: Any = c.committed([TopicPartition(input_topic, partition)], timeout=30)
            out[name] = got[0].offset
        finally:
            c.close()
    return out
