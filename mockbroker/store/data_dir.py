"""The data directory (``mockbroker serve --data-dir DIR``, ``MockCluster(data_dir=DIR)``, broker config
``mock.data.dir``): every partition's log in Kafka's segment layout (store.durable_log) and the cluster's
metadata in ``DIR/metadata.json``, written before the answer leaves.

Opening: ``DIR/.lock`` is locked with ``fcntl.flock`` (a second live process on the same DIR is refused with
one line; a killed process's lock goes with it, so a restart after SIGKILL is not blocked), then
store.loading fills the fresh state, and :meth:`DataDir.attach` makes the state's new partitions
DurableLogs and hooks the saving of the metadata in.

When the metadata is saved (``metadata.json`` written whole to a temporary file renamed over it; with
``mock.data.fsync`` the file and the folder fsynced): in ``ClusterState.after_request``, which dispatch
calls with each request the Python path answers, before its answer is encoded and sent (for an answer
still to come, when it comes).  After the APIs that change what the metadata holds (CreateTopics,
DeleteTopics, CreatePartitions, the config, ACL, SCRAM, quota, reassignment, election and feature APIs)
the metadata is captured and written when it differs from the last written.  After any other request
(Metadata, Produce, FindCoordinator and the others that may create a topic) a cheap fingerprint is
compared first: the process's topic-and-leader change count (state.answer_epoch) and the broker config's
generation; only a change there costs a capture.  Requests the C lanes answer (the usual Produce and
Fetch) never come here: they cannot change the metadata.  MockCluster calls the same check after each of
its ``call``s and from its tick (cheap check each tick, a capture at most once a second and at most 2 % of
the time: a large cluster's capture is slower), and saves once
more when it stops.  Each save also closes the files of deleted topics' partitions and removes their
folders, and hands each partition its topic's current ``segment.bytes``.
"""

from __future__ import annotations

import fcntl
import inspect
import logging
import os
import shutil
import time
from typing import TYPE_CHECKING, Any

from mockbroker.state import answer_epoch
from mockbroker.store import loading
from mockbroker.store.durable_log import DurableLog, _sync_dir

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState, Topic

logger = logging.getLogger("mockbroker.store")
LOCK_FILE = ".lock"
# API keys after which the metadata is captured and compared whatever the fingerprint says
METADATA_APIS = frozenset({19, 20, 30, 31, 33, 34, 37, 43, 44, 45, 49, 51, 57})
TICK_CAPTURE_MS = 1000  # the tick's full capture at most this often, and at most 2 % of the time it costs
TICK_CAPTURE_SHARE = 50


class DataDirInUse(ValueError):
    """Another live process holds the data directory's lock."""


class DataDir:
    """One open data directory (see the module docstring)."""

    def __init__(self, path: str, fsync: bool = False) -> None:
        self.path = os.path.abspath(path)
        self.fsync = fsync
        self.logs: dict[str, DurableLog] = {}  # partition folder -> its live log
        self._saved = ""  # the metadata JSON last written
        self._fingerprint: tuple[int, int] = (-1, -1)
        self._captured_ms = 0
        self._capture_cost_ms = 0.0  # what the last capture took (a cluster of 10k partitions: ~90 ms)
        self.state: ClusterState | None = None
        self._loading = False  # while the directory's own partitions are read back (their files are theirs)
        self._lock_fd = _lock(self.path)

    # -- opening --------------------------------------------------------------------------------
    def load(self, state: ClusterState) -> bool:
        """Fill the fresh ``state`` from the directory and attach to it; whether anything was there."""
        state.new_log = self.new_log
        self._loading = True
        try:
            data = loading.load_state(state, self.path, writable=True)
        finally:
            self._loading = False
        self.attach(state)
        if data is not None:
            self._saved = loading.metadata_text(state)
            self.save()  # the bumped leader epochs
        return data is not None

    def attach(self, state: ClusterState) -> None:
        """Make ``state``'s new partitions DurableLogs here and save its metadata as it changes."""
        self.state = state
        state.new_log = self.new_log
        state.after_request = self.after_request

    def new_log(self, topic: Topic, index: int, replicas: list[int]) -> DurableLog:
        folder = loading.partition_folder(self.path, topic.name, index)
        old = self.logs.get(folder)
        if old is not None:  # a deleted topic's partition of the same name: its files are not ours now
            old.close()
        if not self._loading:  # a new partition: what an older topic of the same name left goes now
            shutil.rmtree(folder, ignore_errors=True)
        log = DurableLog(topic.name, index, replicas[0], replicas, folder, self.fsync,
                         int(topic.config["segment.bytes"]))
        self.logs[folder] = log
        return log

    # -- saving ---------------------------------------------------------------------------------
    def after_request(self, api_key: int, answer: Any) -> Any:
        """Save the metadata when the request changed it, before ``answer`` leaves (see the docstring)."""
        if answer is None or isinstance(answer, list):
            self.check(api_key in METADATA_APIS)
            return answer
        full = api_key in METADATA_APIS
        then = getattr(answer, "then", None)
        if then is not None:  # a Pending (handlers.pending: a long poll), settled later
            return then(lambda value: self._then(full, value))
        if inspect.isawaitable(answer):
            return self._after(full, answer)
        return answer

    def _then(self, full: bool, value: Any) -> Any:
        self.check(full)
        return value

    async def _after(self, full: bool, answer: Any) -> Any:
        value = await answer
        self.check(full)
        return value

    def check(self, full: bool = False) -> None:
        """Save when the fingerprint moved, or (``full``) when the captured metadata differs."""
        state = self.state
        if state is None:
            return
        fingerprint = (answer_epoch.EPOCH.value, state.config.generation)
        if full or fingerprint != self._fingerprint:
            self._fingerprint = fingerprint
            self.save()

    def tick(self) -> None:
        """From the cluster's tick: the cheap check, and a capture at most once a second."""
        state = self.state
        if state is None:
            return
        now = state.clock.now_ms()
        full = now - self._captured_ms >= max(TICK_CAPTURE_MS, TICK_CAPTURE_SHARE * self._capture_cost_ms)
        self.check(full)

    def save(self) -> None:
        """Capture the metadata and write it when it changed; tidy the partitions' files."""
        state = self.state
        if state is None:
            return
        self._captured_ms = state.clock.now_ms()
        began = time.perf_counter()
        text = loading.metadata_text(state)
        self._tidy(state)
        self._capture_cost_ms = (time.perf_counter() - began) * 1000
        if text == self._saved:
            return
        path = os.path.join(self.path, loading.METADATA_FILE)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            if self.fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
        if self.fsync:
            _sync_dir(self.path)
        self._saved = text

    def _tidy(self, state: ClusterState) -> None:
        """Deleted topics' partitions closed and their folders removed; segment.bytes handed on."""
        live: set[int] = set()
        for topic in state.topics.values():
            segment_bytes = int(topic.config["segment.bytes"])
            for log in topic.partitions:
                live.add(id(log))
                if isinstance(log, DurableLog):
                    log.segment_bytes = segment_bytes
        for folder, log in list(self.logs.items()):
            if id(log) not in live:
                log.close()
                del self.logs[folder]
                shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        """Save a last time, close every file and release the lock."""
        if self.state is not None:
            self.save()
            self.state.after_request = None
        for log in self.logs.values():
            log.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1


    def __del__(self) -> None:
        """A DataDir dropped without close (a MockCluster whose construction failed later): the lock goes."""
        if getattr(self, "_lock_fd", -1) >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1


def _lock(path: str) -> int:
    """Lock ``path``/.lock for this process (DataDirInUse when another live process holds it)."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"data dir {path} is a file, not a directory")
    os.makedirs(path, exist_ok=True)
    fd = os.open(os.path.join(path, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
        os.close(fd)
        raise DataDirInUse(f"data dir {path} is in use by another live process (pid {holder})") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd
