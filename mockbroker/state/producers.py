"""Producer id allocation (InitProducerId for producers without a transactional id).

Transactional ids and their epochs live in :mod:`mockbroker.state.transactions`; what each
partition knows about a producer lives in :mod:`mockbroker.state.producer_state`.
"""

from __future__ import annotations

from mockbroker.plain import Slotted


class ProducerRegistry(Slotted):
    __slots__ = ("next_id",)

    def __init__(self, next_id: int = 1000) -> None:
        self.next_id = next_id

    def new_id(self) -> int:
        pid = self.next_id
        self.next_id += 1
        return pid
