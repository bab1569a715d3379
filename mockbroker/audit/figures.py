"""The figures a no-loss audit prints: what was produced, acknowledged and read back, and what went wrong.

``AuditFigures.table()`` is the human form, ``AuditFigures.to_dict()`` the ``--json`` form and
``AuditFigures.problems()`` lists every broken guarantee (empty when the run passed).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class AuditFigures:
    # idempotent producers, read back read_uncommitted
    produced: int = 0
    acknowledged: int = 0
    failed: int = 0  # delivery reports with an error (not a loss: the client was told)
    read: int = 0
    lost: int = 0  # acknowledged, never read
    duplicated: int = 0  # read more than once (extra copies)
    out_of_order: int = 0  # read before a record its producer sent earlier to the same partition
    unacknowledged_read: int = 0  # read although the delivery report said it failed (allowed)
    # transactional producers, read back read_committed
    transactions: int = 0
    transactions_committed: int = 0
    transactions_aborted: int = 0  # aborted on purpose
    transactions_aborted_by_faults: int = 0  # a fault made the transaction abortable; the producer aborted it
    transactions_in_doubt: int = 0  # the producer could not learn the outcome (fatal error; a new one fenced it)
    committed_records: int = 0
    committed_read: int = 0
    committed_lost: int = 0
    committed_duplicated: int = 0
    committed_out_of_order: int = 0
    aborted_records: int = 0
    aborted_seen: int = 0  # must be 0
    in_doubt_records: int = 0
    partial_transactions: int = 0  # in-doubt transactions read only in part (must be 0)
    group_offsets_wrong: int = 0  # offsets sent with transactions that do not match the outcome
    # the fault schedule
    faults: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        checks = {
            "lost": self.lost, "duplicated": self.duplicated, "out of order": self.out_of_order,
            "committed lost": self.committed_lost, "committed duplicated": self.committed_duplicated,
            "committed out of order": self.committed_out_of_order, "aborted seen": self.aborted_seen,
            "partial transactions": self.partial_transactions, "group offsets wrong": self.group_offsets_wrong,
        }
        return [f"{name}: {value}" for name, value in checks.items() if value]

    @property
    def passed(self) -> bool:
        return not self.problems()

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["passed"] = self.passed
        return out

    def table(self) -> str:
        rows: list[tuple[str, object]] = [
            ("idempotent records produced", self.produced), ("  acknowledged", self.acknowledged),
            ("  failed (reported to the producer)", self.failed), ("  read (read_uncommitted)", self.read),
            ("  lost", self.lost), ("  duplicated", self.duplicated), ("  out of order", self.out_of_order),
            ("  read although reported failed", self.unacknowledged_read),
            ("transactions", self.transactions), ("  committed", self.transactions_committed),
            ("  aborted on purpose", self.transactions_aborted),
            ("  aborted after a fault", self.transactions_aborted_by_faults),
            ("  outcome unknown to the producer", self.transactions_in_doubt),
            ("committed records", self.committed_records), ("  read (read_committed)", self.committed_read),
            ("  lost", self.committed_lost), ("  duplicated", self.committed_duplicated),
            ("  out of order", self.committed_out_of_order),
            ("aborted records", self.aborted_records), ("  seen by read_committed", self.aborted_seen),
            ("records of in-doubt transactions", self.in_doubt_records),
            ("  transactions read only in part", self.partial_transactions),
            ("transactional group offsets wrong", self.group_offsets_wrong),
        ]
        rows += [(f"fault: {name}", count) for name, count in sorted(self.faults.items())]
        rows.append(("seconds", f"{self.seconds:.1f}"))
        width = max(len(name) for name, _ in rows)
        lines = [f"{name:<{width}}  {value:>12,}" if isinstance(value, int) else f"{name:<{width}}  {value:>12}"
                 for name, value in rows]
        lines.append("PASSED" if self.passed else "FAILED: " + "; ".join(self.problems()))
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)
