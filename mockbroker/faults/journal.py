"""The request journal: every request and its answer, newest last, in a bounded ring.

An entry holds the time, broker, connection, client id and software (from ApiVersions v3+), API and
version, correlation id, latency, what the request was about (topics, partitions, groups,
transactional id), the error codes of the answer and the fault rules that acted on it.  Query it from
Python (:meth:`Journal.entries`), export it as JSON lines, or read it over the HTTP control API.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from mockbroker.protocol.errors import error_name

DEFAULT_MAX_ENTRIES = 10_000


@dataclass(slots=True)
class JournalEntry:
    seq: int
    time_ms: int
    broker: int
    connection: str
    client_id: str | None
    client_software: str | None
    api: str
    api_key: int
    version: int
    correlation_id: int
    latency_ms: float = -1.0
    about: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    faults: list[int] = field(default_factory=list)
    outcome: str = "pending"  # answered, no response (acks=0), closed, pending

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Journal:
    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self._entries: deque[JournalEntry] = deque(maxlen=max_entries)
        self._seq = 0
        self._lock = threading.Lock()
        self.enabled = max_entries > 0

    def start(self, **fields: Any) -> JournalEntry:
        with self._lock:
            self._seq += 1
            entry = JournalEntry(seq=self._seq, **fields)
            self._entries.append(entry)
        return entry

    @staticmethod
    def finish(entry: JournalEntry, latency_ms: float, outcome: str, codes: Iterable[int] = ()) -> None:
        entry.latency_ms = round(latency_ms, 3)
        entry.outcome = outcome
        entry.errors = [error_name(c) for c in codes]

    def entries(self, api: str | int | None = None, client_id: str | None = None, broker: int | None = None,
                since_seq: int = 0, errors_only: bool = False) -> list[JournalEntry]:
        with self._lock:
            items = list(self._entries)
        out = []
        for e in items:
            if e.seq <= since_seq or (broker is not None and e.broker != broker):
                continue
            if api is not None and api not in (e.api, e.api_key):
                continue
            if client_id is not None and e.client_id != client_id:
                continue
            if errors_only and not e.errors:
                continue
            out.append(e)
        return out

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def to_jsonl(self, entries: Iterable[JournalEntry] | None = None) -> str:
        return "".join(json.dumps(e.to_dict(), sort_keys=True) + "\n"
                       for e in (self.entries() if entries is None else entries))
