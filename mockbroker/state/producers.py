"""Producer ids and epochs handed out by InitProducerId.

Only the id allocation lives here so far; sequence windows and transactions come with the
idempotence/transactions work.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ProducerRegistry:
    next_id: int = 1000
    by_transactional_id: dict[str, tuple[int, int]] = field(default_factory=dict)

    def init_producer(self, transactional_id: str | None) -> tuple[int, int]:
        """(producer id, epoch): a fresh id for idempotent producers; for a transactional id the
        same id with its epoch bumped on every call (fencing the previous instance)."""
        if transactional_id is None:
            pid = self.next_id
            self.next_id += 1
            return pid, 0
        known = self.by_transactional_id.get(transactional_id)
        if known is None or known[1] >= 32766:
            pid = self.next_id
            self.next_id += 1
            known = (pid, -1)
        entry = (known[0], known[1] + 1)
        self.by_transactional_id[transactional_id] = entry
        return entry
