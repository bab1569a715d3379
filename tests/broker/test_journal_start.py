"""Journal.start in C (the produce lane's journal_start, lane_journal.h) against JournalEntry's own
__init__: the same slots, the next number, the entry in the ring; an ``about`` not yet frozen, or a
journal of another class, takes the Python way."""

from __future__ import annotations

from typing import Any

import pytest

from mockbroker.faults import journal as journal_module
from mockbroker.faults.journal import PRODUCE_ABOUT, Journal, JournalEntry
from mockbroker.handlers import produce_lane

pytestmark = pytest.mark.skipif(not produce_lane.available(),
                                reason="the C extension is not built (or MOCKBROKER_PURE_PYTHON is set)")

ARGS: tuple[Any, ...] = (1234, 2, "127.0.0.1:5555", "client", "librdkafka/2.16", "Fetch", 1, 12, 77)


def _slots(entry: JournalEntry) -> dict[str, Any]:
    return {name: getattr(entry, name) for name in JournalEntry.__slots__}


def test_the_c_start_fills_what_journal_entry_fills() -> None:
    assert journal_module._fast_start is not None
    journal = Journal()
    about = (PRODUCE_ABOUT, ((("t", (0, 1)),), None))
    pending = journal.start(*ARGS, about, ())
    assert type(pending) is JournalEntry
    answered = journal.start(*ARGS, about, (3,), 1.5, "answered")
    expected = [JournalEntry(1, *ARGS, -1.0, about, (), (), "pending"),
                JournalEntry(2, *ARGS, 1.5, about, (), (3,), "answered")]
    assert [_slots(e) for e in (pending, answered)] == [_slots(e) for e in expected]
    assert list(journal._entries) == [pending, answered]
    Journal.finish(pending, 2.0, "answered", [5], 10)
    assert (pending.latency_ms, pending.outcome, pending.throttle_ms, pending.errors) == (
        2.0, "answered", 10, ["LEADER_NOT_AVAILABLE"])
    assert [e.seq for e in journal.entries()] == [1, 2]


def test_what_the_c_start_does_not_take_goes_the_python_way() -> None:
    class Noted(Journal):
        pass

    for journal, about in ((Journal(), {"topics": ["t"]}), (Noted(), (PRODUCE_ABOUT, ((("t", (2,)),), None)))):
        entry = journal.start(*ARGS, about, ())
        assert type(entry) is JournalEntry and entry.seq == 1 and list(journal._entries) == [entry]
        assert entry.about == JournalEntry(1, *ARGS, about=about).about
