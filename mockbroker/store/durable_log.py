"""DurableLog: a PartitionLog whose every change is mirrored to its folder of segment files before the
call returns (so before the answer leaves).

- ``append``: the batch's buffers go to the active segment file in one ``os.writev`` (the stored bytes as
  they are: no join, no copy), then, with ``fsync``, an fsync.  A write the OS took survives the process
  being killed (SIGKILL); the fsync is for power loss.  The C produce lane calls this ``append`` for a log
  whose class is not exactly PartitionLog, so the lane stays on.
- the active file rolls when the next batch would take it past ``segment_bytes`` (the topic's
  ``segment.bytes``), so retention and DeleteRecords can free whole files;
- ``advance_log_start``: files wholly below the new log start are deleted (the active one too when
  nothing is left), and ``log-start-offset`` records the start;
- ``replace_batches`` (compaction): every file is rewritten (temporary file renamed over it);
- ``bump_leader_epoch``: ``leader-epoch-checkpoint`` (Kafka's file: version, count, then ``epoch offset``
  lines) is written again.
"""

from __future__ import annotations

import os
from typing import Any

from mockbroker.state.log import PartitionLog, StoredBatch
from mockbroker.store import segment_files as files

LOG_START_FILE = "log-start-offset"
EPOCHS_FILE = "leader-epoch-checkpoint"
DEFAULT_SEGMENT_BYTES = 1 << 30


class DurableLog(PartitionLog):
    """A partition log kept in ``folder`` as Kafka's segment files (see the module docstring)."""

    __slots__ = ("_active_size", "_fd", "_prepared", "closed", "folder", "fsync", "segment_bytes", "segments")

    def __init__(self, topic: str, index: int, leader: int, replicas: list[int], folder: str,
                 fsync: bool = False, segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> None:
        super().__init__(topic, index, leader, replicas)
        self.folder = folder
        self.fsync = fsync
        self.segment_bytes = segment_bytes
        self.segments: list[int] = []  # base offsets of the segment files, oldest first
        self._fd = -1  # the active (last) file, open for appending
        self._active_size = 0
        self._prepared = False  # the folder made (and emptied of an older topic's files) on the first write
        self.closed = False

    # -- opening ----------------------------------------------------------------------------------
    def _prepare(self) -> None:
        """A new partition's first write: its folder made, and whatever an older topic of the same name
        left there removed."""
        self._prepared = True
        os.makedirs(self.folder, exist_ok=True)
        for name in os.listdir(self.folder):
            os.unlink(os.path.join(self.folder, name))
        self._write_epochs()

    def attach(self, segments: list[int], active_size: int) -> None:
        """Files read back at start (store.data_dir.load_partition): append to the last one."""
        self._prepared = True
        self.segments = segments
        self._active_size = active_size
        if segments:
            self._open_active(segments[-1])

    def _path(self, base: int) -> str:
        return os.path.join(self.folder, files.file_name(base))

    def _open_active(self, base: int) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = os.open(self._path(base), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def _roll(self, base: int) -> None:
        self._open_active(base)
        self.segments.append(base)
        self._active_size = 0
        if self.fsync:
            _sync_dir(self.folder)

    def close(self) -> None:
        """Close the active file (the log stays readable in memory)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self.closed = True

    # -- changes, mirrored ------------------------------------------------------------------------
    def append(self, batch: StoredBatch) -> None:
        if self.closed:  # a deleted topic's log, still referenced: memory only
            super().append(batch)
            return
        size = batch.size
        if not self._prepared:
            self._prepare()
        if self._fd < 0 or (self._active_size and self._active_size + size > self.segment_bytes):
            self._roll(batch.base_offset)
        written = os.writev(self._fd, batch.buffers)
        if written != size:  # a short write (rare): the rest, byte exact
            files.write_all(self._fd, [b"".join(bytes(b) for b in batch.buffers)[written:]])
        if self.fsync:
            os.fsync(self._fd)
        self._active_size += size
        super().append(batch)

    def advance_log_start(self, offset: int) -> int:
        before = self.log_start_offset
        moved = super().advance_log_start(offset)
        if moved != before and not self.closed:
            self._free_below(moved)
            self._write_small(LOG_START_FILE, log_start_text(moved))
        return moved

    def _free_below(self, start: int) -> None:
        """Delete the files holding only offsets below ``start``."""
        keep_from = 0
        for i in range(1, len(self.segments)):
            if self.segments[i] <= start:
                keep_from = i
        if not self.batches:  # nothing left: every file goes, the next batch starts one at its offset
            keep_from = len(self.segments)
        gone, self.segments = self.segments[:keep_from], self.segments[keep_from:]
        if not self.segments and self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            self._active_size = 0
        for base in gone:
            try:
                os.unlink(self._path(base))
            except FileNotFoundError:
                pass
        if gone and self.fsync:
            _sync_dir(self.folder)

    def replace_batches(self, batches: list[StoredBatch]) -> None:
        super().replace_batches(batches)
        if not self.closed:
            self.rewrite()

    def rewrite(self) -> None:
        """Write every file again from the batches in memory (after compaction), keeping the files' bounds."""
        for base, chunks in segment_chunks(self.batches, self.segments).items():
            files.write_file(self._path(base), chunks, self.fsync)
        if self.segments:
            self._open_active(self.segments[-1])
            self._active_size = os.fstat(self._fd).st_size
        if self.fsync:
            _sync_dir(self.folder)

    def bump_leader_epoch(self, new_leader: int | None = None) -> None:
        super().bump_leader_epoch(new_leader)
        if not self.closed:
            self._write_epochs()

    def _write_epochs(self) -> None:
        self._write_small(EPOCHS_FILE, epochs_text(self.epoch_starts))

    def _write_small(self, name: str, text: str) -> None:
        if not self._prepared:
            self._prepare()
        path = os.path.join(self.folder, name)
        files.write_file(path, [text.encode()], self.fsync)


def segment_chunks(batches: list[StoredBatch], bases: list[int]) -> dict[int, list[Any]]:
    """The buffers of each segment file (by its base offset, ``bases`` oldest first): each batch goes to the
    last segment starting at or below it."""
    chunks: dict[int, list[Any]] = {base: [] for base in bases}
    j = 0
    for b in batches if bases else ():
        while j + 1 < len(bases) and bases[j + 1] <= b.base_offset:
            j += 1
        chunks[bases[j]].extend(b.buffers)
    return chunks


def log_start_text(offset: int) -> str:
    """The ``log-start-offset`` file's text."""
    return f"{offset}\n"


def epochs_text(epoch_starts: list[tuple[int, int]]) -> str:
    """Kafka's ``leader-epoch-checkpoint`` text: version 0, the count, then ``epoch start-offset`` lines."""
    lines = [f"{epoch} {start}" for epoch, start in epoch_starts]
    return "\n".join(["0", str(len(lines)), *lines]) + "\n"


def _sync_dir(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_small(folder: str, name: str) -> str | None:
    """One of a partition's small files, or None when it is not there."""
    try:
        with open(os.path.join(folder, name), encoding="ascii") as f:
            return f.read()
    except FileNotFoundError:
        return None


def read_epochs(text: str | None) -> list[tuple[int, int]]:
    """A leader-epoch-checkpoint's (epoch, start offset) pairs ([] when absent or unreadable)."""
    if not text:
        return []
    lines = text.split("\n")
    try:
        count = int(lines[1])
        pairs = [tuple(int(x) for x in line.split()) for line in lines[2:2 + count]]
    except (IndexError, ValueError):
        return []
    return [(p[0], p[1]) for p in pairs if len(p) == 2]
