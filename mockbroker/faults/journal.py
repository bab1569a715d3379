"""The request journal: every request and its answer, newest last, in a bounded ring.

An entry holds the time, broker, connection, client id and software (from ApiVersions v3+), API and
version, correlation id, latency, what the request was about (topics, partitions, groups,
transactional id), the error codes of the answer, the fault rules that acted on it and the throttle
time (``throttle_ms``: client quotas or a throttle rule muted the connection).  Query it from
Python (:meth:`Journal.entries`), export it as JSON lines, or read it over the HTTP control API.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from mockbroker.protocol.errors import error_name

DEFAULT_MAX_ENTRIES = 10_000


class JournalEntry:
    """One request.  Kept free of mutable containers (``about``, ``errors`` and ``faults`` are stored as
    tuples and built on access) so ten thousand entries add ten thousand objects, not sixty thousand, to
    what Python's cycle collector walks: its full passes are the broker's longest pauses."""

    __slots__ = ("_about", "_errors", "_faults", "_latency_ms", "api", "api_key", "broker", "client_id",
                 "client_software", "connection", "correlation_id", "outcome", "seq", "throttle_ms", "time_ms",
                 "version")

    def __init__(self, seq: int, time_ms: int, broker: int, connection: str, client_id: str | None,
                 client_software: str | None, api: str, api_key: int, version: int, correlation_id: int,
                 latency_ms: float = -1.0, about: Any = None, errors: Iterable[str] = (),
                 faults: Iterable[int] = (), outcome: str = "pending", throttle_ms: int = 0) -> None:
        self.seq = seq
        self.time_ms = time_ms
        self.broker = broker
        self.connection = connection
        self.client_id = client_id
        self.client_software = client_software
        self.api = api
        self.api_key = api_key
        self.version = version
        self.correlation_id = correlation_id
        self._latency_ms = latency_ms
        # ``about`` may come already frozen (Facts.frozen(), or a Produce's raw form: see _thaw) or as a dict
        self._about = about if isinstance(about, tuple) else _freeze(about or {})
        self._errors = errors if type(errors) is tuple else tuple(errors)  # names, or codes from finish()
        self._faults = faults if type(faults) is tuple else tuple(faults)
        self.outcome = outcome  # answered, no response (acks=0), closed, pending
        self.throttle_ms = throttle_ms  # how long the connection was muted / the answer held after this request

    @property
    def latency_ms(self) -> float:
        """Milliseconds from decoding the request to its answer (rounded to the microsecond when read)."""
        return round(self._latency_ms, 3)

    @latency_ms.setter
    def latency_ms(self, value: float) -> None:
        self._latency_ms = value

    @property
    def about(self) -> dict[str, Any]:
        """What the request was about: {"topics": {name: [partitions]}, "groups": [...], "transactional_id"}."""
        return _thaw(self._about)  # type: ignore[no-any-return]

    @property
    def errors(self) -> list[str]:
        """The answer's error names (finish() keeps the codes; they are named when read)."""
        return [error_name(e) if isinstance(e, int) else e for e in self._errors]

    @property
    def faults(self) -> list[int]:
        return list(self._faults)

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "time_ms": self.time_ms, "broker": self.broker, "connection": self.connection,
                "client_id": self.client_id, "client_software": self.client_software, "api": self.api,
                "api_key": self.api_key, "version": self.version, "correlation_id": self.correlation_id,
                "latency_ms": self.latency_ms, "about": self.about, "errors": self.errors, "faults": self.faults,
                "outcome": self.outcome, "throttle_ms": self.throttle_ms}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JournalEntry) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"JournalEntry({self.to_dict()!r})"


def _freeze(value: Any) -> Any:
    """Nested dicts and lists as tuples (("d", ((key, value), ...)) for dicts) that hold no containers
    the cycle collector keeps tracking."""
    if isinstance(value, dict):
        return ("d", tuple((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple, set)):
        return ("l", tuple(_freeze(v) for v in value))
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        kind, items = value
        if kind == "d":
            return {k: _thaw(v) for k, v in items}
        if kind == PRODUCE_ABOUT:
            return _thaw_produce(items)
        return [_thaw(v) for v in items]
    return value


# ("p", (((topic, (partition, ...)), ...), transactional id)): a Produce's or a Fetch's facts as they came
# (see facts.journal_about)
PRODUCE_ABOUT = "p"


def _thaw_produce(items: tuple[Any, ...]) -> dict[str, Any]:
    """A Produce's or a Fetch's facts as taken on the hot path (topic and partition pairs as they came),
    in the summary form every other request's facts have."""
    from mockbroker.faults.facts import facts_from_pairs  # facts imports this module; reading entries is not hot

    pairs, transactional_id = items
    return facts_from_pairs(pairs, transactional_id).summary()


# Journal.start in C (the produce lane's journal_start, lane_journal.h: the same slots filled, for a
# Journal of exactly this class and an ``about`` already frozen), or None: set by use_fast_start
_fast_start: Callable[..., JournalEntry | None] | None = None


def use_fast_start(start: Callable[..., JournalEntry | None] | None) -> None:
    global _fast_start
    _fast_start = start


class Journal:

    # what the C produce lane reads on every request are slots (native/lanes/member_sites.h); the rest stays in __dict__
    __slots__ = ("__dict__", "__weakref__", "_entries", "_numbers", "enabled")
    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        # Entries are added only on the event loop's thread and read from any thread: appending to a
        # deque, taking the next number and copying the deque out are each one step under the GIL,
        # so no lock is needed (a lock here cost a Produce ~0.3 us)
        self._entries: deque[JournalEntry] = deque(maxlen=max_entries)
        self._numbers = itertools.count(1)
        self.enabled = max_entries > 0

    def start(self, time_ms: int, broker: int, connection: str, client_id: str | None,
              client_software: str | None, api: str, api_key: int, version: int, correlation_id: int,
              about: Any, faults: tuple[int, ...], latency_ms: float = -1.0, outcome: str = "pending") -> JournalEntry:
        """A pending entry for a request being handled (``about`` as a dict or already frozen), or with
        ``latency_ms`` and ``outcome`` one already answered without errors (the produce lane's)."""
        if _fast_start is not None:  # the same entry made in C (every request dispatch journals)
            entry = _fast_start(self, time_ms, broker, connection, client_id, client_software, api, api_key, version,
                                correlation_id, about, faults, latency_ms, outcome)
            if entry is not None:
                return entry
        entry = JournalEntry(next(self._numbers), time_ms, broker, connection, client_id, client_software, api,
                             api_key, version, correlation_id, latency_ms, about, (), faults, outcome)
        self._entries.append(entry)
        return entry

    @staticmethod
    def finish(entry: JournalEntry, latency_ms: float, outcome: str, codes: Iterable[int] = (),
               throttle_ms: int = 0) -> None:
        entry._latency_ms = latency_ms
        entry.outcome = outcome
        entry.throttle_ms = throttle_ms
        if codes:
            entry._errors = tuple(codes)  # named when read (JournalEntry.errors)

    def annotate(self, connection: str, correlation_id: int, key: str, value: Any) -> None:
        """Add ``key: value`` to the ``about`` of the pending entry of a request being handled (looked for
        among the newest entries): what a handler learns from the request, as PushTelemetry's metrics."""
        for entry in itertools.islice(reversed(self._entries), 64):
            if entry.connection == connection and entry.correlation_id == correlation_id:
                entry._about = _freeze({**entry.about, key: value})
                return

    def entries(self, api: str | int | None = None, client_id: str | None = None, broker: int | None = None,
                since_seq: int = 0, errors_only: bool = False) -> list[JournalEntry]:
        """The entries kept, oldest first, of ``api`` (Kafka's name in any case, or its key) and the rest; an
        unknown API name raises ValueError naming the nearest (not an empty list forever)."""
        if isinstance(api, str):
            from mockbroker.faults.rules import api_name_of  # (only when asked by name)

            api = api_name_of(api)
        items = list(self._entries)
        out = []
        for e in items:
            if e.seq <= since_seq or (broker is not None and e.broker != broker):
                continue
            if api is not None and api not in (e.api, e.api_key):
                continue
            if client_id is not None and e.client_id != client_id:
                continue
            if errors_only and not e._errors:
                continue
            out.append(e)
        return out

    def clear(self) -> None:
        self._entries.clear()

    def to_jsonl(self, entries: Iterable[JournalEntry] | None = None) -> str:
        import json  # the control API's and tests' use only: not on the broker's start path

        return "".join(json.dumps(e.to_dict(), sort_keys=True) + "\n"
                       for e in (self.entries() if entries is None else entries))
