"""Process-wide counts of the changes to what Metadata and FindCoordinator answers say.

Answers kept for requests that repeat byte for byte (mockbroker/handlers/kept_answers.py, written
by the C staging lane without decoding them) are good while their API's count and the broker config's
generation stay what they were when the answer was made:

- ``EPOCH`` (Metadata): topics made or deleted, partitions added, a partition's leader or replicas
  changed (every such change bumps its leader epoch), and everything ``BROKERS`` counts;
- ``BROKERS`` (FindCoordinator): brokers up, down or added (the controller moves with them) and
  coordinators pinned.

The counts are shared by every cluster in the process: a change in one only makes the others' kept
answers be made again.
"""

from __future__ import annotations

from mockbroker.plain import Slotted


class AnswerEpoch(Slotted):
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


EPOCH = AnswerEpoch()  # the C lane holds these objects and reads ``value`` (keep it a slot)
BROKERS = AnswerEpoch()


def bump() -> None:
    """A topic, partition, leader or replica changed: every kept Metadata answer is stale."""
    EPOCH.value += 1


def bump_brokers() -> None:
    """The live brokers, the controller or a pinned coordinator changed: every kept answer is stale."""
    EPOCH.value += 1
    BROKERS.value += 1
