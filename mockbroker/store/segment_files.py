"""A partition's segment files, in Kafka's own layout: ``DIR/<topic>-<partition>/<20-digit base offset>.log``
holding the stored batches' bytes exactly as Fetch sends them (v2 record batches; magic 0/1 message sets
are recognised too, as a Kafka log directory may hold them), one after the other.

Scanning a file walks the entries by their length fields only (offset, length: 12 bytes, then the entry);
the CRC of the last entries (``CHECK_LAST``) is checked too, where a write cut short by a crash or a
damaged disk would show: v2 batches by their CRC-32C over everything after the CRC field, magic 0/1
messages by their CRC-32 over everything after theirs.  The first entry that is cut short or fails its
CRC ends the good part of the file (:class:`Scan`); :func:`cut` truncates the file there.
"""

from __future__ import annotations

import os
import struct
import zlib
from typing import Any

from mockbroker.plain import Slotted

SUFFIX = ".log"
LOG_OVERHEAD = 12  # offset (8) and length (4) before every entry
V2_HEADER = 61  # a v2 batch's header, length prefix included
IOV_MAX = 1024  # buffers per os.writev (POSIX's minimum for IOV_MAX; Linux's)
CHECK_LAST = 16  # entries at a file's end whose CRC is checked at start
_PREFIX = struct.Struct(">qi")
# v2 header after the prefix: partition leader epoch, magic, crc, attributes, last offset delta, base
# timestamp, max timestamp, producer id, producer epoch, base sequence, record count
_V2 = struct.Struct(">ibIhiqqqhii")
_LEGACY = struct.Struct(">Ibb")  # crc, magic, attributes of a magic 0/1 message


def file_name(base_offset: int) -> str:
    """Kafka's name for the segment starting at ``base_offset``: the offset in 20 digits."""
    return f"{base_offset:020d}{SUFFIX}"


def base_of(name: str) -> int | None:
    """The base offset a segment file's name holds, or None when it is no segment file."""
    if not name.endswith(SUFFIX) or len(name) != 20 + len(SUFFIX) or not name[:20].isdigit():
        return None
    return int(name[:20])


def segment_files(folder: str) -> list[tuple[int, str]]:
    """(base offset, path) of each segment file in ``folder``, oldest first."""
    found = []
    for name in os.listdir(folder):
        base = base_of(name)
        if base is not None:
            found.append((base, os.path.join(folder, name)))
    return sorted(found)


class Entry(Slotted):
    """One batch (or magic 0/1 message) found in a file: where it lies and the facts of its header."""

    __slots__ = ("attributes", "base_offset", "base_sequence", "crc", "end", "last_offset", "magic", "max_timestamp",
                 "producer_epoch", "producer_id", "record_count", "start")

    def __init__(self, start: int, end: int, base_offset: int, last_offset: int, magic: int, attributes: int,
                 max_timestamp: int = -1, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                 record_count: int = 1, crc: int = -1) -> None:
        self.start = start
        self.end = end
        self.base_offset = base_offset
        self.last_offset = last_offset
        self.magic = magic
        self.attributes = attributes
        self.max_timestamp = max_timestamp
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.record_count = record_count
        self.crc = crc

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & 0x20)


class Scan(Slotted):
    """What a file holds: its whole entries, where the good part ends, and why the rest is not good."""

    __slots__ = ("entries", "good_end", "problem", "size")

    def __init__(self, entries: list[Entry], good_end: int, size: int, problem: str) -> None:
        self.entries = entries
        self.good_end = good_end
        self.size = size
        self.problem = problem  # "" when the whole file is good


def _entry(data: Any, pos: int, size: int) -> tuple[Entry | None, str]:
    """The entry at ``pos`` by its length fields, or (None, why it is cut short or unreadable)."""
    if size - pos < LOG_OVERHEAD:
        return None, f"{size - pos} bytes at offset {pos} are less than an entry's 12-byte prefix"
    offset, length = _PREFIX.unpack_from(data, pos)
    end = pos + LOG_OVERHEAD + length
    if length < 6 or end > size:
        return None, f"the entry at byte {pos} says {length} bytes but {size - pos - LOG_OVERHEAD} follow"
    magic = data[pos + 16] if length >= 5 else -1
    if magic == 2:
        if length < V2_HEADER - LOG_OVERHEAD:
            return None, f"the v2 batch at byte {pos} is {length} bytes, shorter than its header"
        (_epoch, _magic, crc, attributes, last_delta, _base_ts, max_ts, pid, pepoch, base_seq,
         count) = _V2.unpack_from(data, pos + LOG_OVERHEAD)
        return Entry(pos, end, offset, offset + last_delta, 2, attributes, max_ts, pid, pepoch, base_seq, count,
                     crc), ""
    crc, magic, attributes = _LEGACY.unpack_from(data, pos + LOG_OVERHEAD)
    if magic not in (0, 1):
        return None, f"the entry at byte {pos} has magic {magic}"
    timestamp = struct.unpack_from(">q", data, pos + 18)[0] if magic == 1 and length >= 14 else -1
    return Entry(pos, end, offset, offset, magic, attributes, timestamp, crc=crc), ""


def crc_ok(data: Any, entry: Entry) -> bool:
    """Whether the entry's CRC matches its bytes (CRC-32C for v2, CRC-32 for magic 0/1)."""
    if entry.magic == 2:
        from mockbroker.records.batch import crc32c

        return crc32c(memoryview(data)[entry.start + 21:entry.end]) == entry.crc
    return zlib.crc32(memoryview(data)[entry.start + 16:entry.end]) == entry.crc


def scan(data: Any, check_last: int = CHECK_LAST) -> Scan:
    """Walk ``data`` (a file's bytes) entry by entry; the last ``check_last`` entries' CRCs are checked
    (-1: every entry's)."""
    size = len(data)
    entries: list[Entry] = []
    pos = 0
    problem = ""
    while pos < size:
        entry, problem = _entry(data, pos, size)
        if entry is None:
            break
        entries.append(entry)
        pos = entry.end
    checked = entries if check_last < 0 else entries[-check_last:] if check_last else []
    for entry in checked:
        if not crc_ok(data, entry):
            problem = f"the batch at byte {entry.start} (offset {entry.base_offset}) fails its CRC"
            entries = entries[:entries.index(entry)]
            break
    good_end = entries[-1].end if entries else 0
    return Scan(entries, good_end, size, problem)


def read_file(path: str) -> bytes:
    """A segment file's bytes, read once."""
    with open(path, "rb") as f:
        return f.read()


def cut(path: str, good_end: int) -> None:
    """Truncate a segment file to its good part."""
    os.truncate(path, good_end)


def write_file(path: str, chunks: list[Any], sync: bool) -> None:
    """Write a whole segment file atomically (a temporary file renamed over it), fsynced when ``sync``."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, chunks)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def write_all(fd: int, chunks: Any) -> int:
    """Write every buffer of ``chunks`` at the file's end: os.writev of up to IOV_MAX buffers at a time, and
    again for whatever a short write left.  Returns the bytes written."""
    pending = [memoryview(c).cast("B") for c in chunks]
    total = 0
    while pending:
        group, pending = pending[:IOV_MAX], pending[IOV_MAX:]
        size = sum(len(c) for c in group)
        written = os.writev(fd, group)
        total += written
        if written < size:  # a short write (rare): the rest of this group, byte exact
            rest = b"".join(bytes(c) for c in group)[written:]
            while rest:
                n = os.write(fd, rest)
                rest = rest[n:]
                total += n
    return total
