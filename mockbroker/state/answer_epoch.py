"""A process-wide count of the changes to what Metadata and FindCoordinator answers say: topics made
or deleted, partitions added, a partition's leader or replicas changed (every such change bumps its
leader epoch), brokers up or down, the controller or a coordinator moved.

Answers kept for requests that repeat byte for byte (mockbroker/handlers/kept_answers.py, written
by the C staging lane without decoding them) are good while this count and the broker config's
generation stay what they were when the answer was made.  The count is shared by every cluster in
the process: a change in one only makes the others' kept answers be made again.
"""

from __future__ import annotations

from mockbroker.plain import Slotted


class AnswerEpoch(Slotted):
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


EPOCH = AnswerEpoch()  # the C lane holds this object and reads ``value`` (keep it a slot)


def bump() -> None:
    """Something a Metadata answer says changed: every kept answer is stale."""
    EPOCH.value += 1
