"""Reading a data directory or a snapshot back into a fresh ClusterState, in this order: the metadata
(``metadata.json``: the topics, their ids and configs, ...) restored, then each partition's segment files
read once into its log (each batch's buffer a memoryview slice of the file's bytes; its StoredBatch facts
from its header), its producer state rebuilt from its batches (idempotent sequences, so a batch retried
after the restart is answered as a duplicate; open transactions, so the last stable offset holds until the
coordinator ends them), the producer id allocator set above every producer id seen, every leader epoch
bumped by one (a restart is a new election: clients holding the old epoch refresh), and
``coordinator_load.load_all`` (the coordinators' internal topics).

A damaged or cut-short write at a file's end (segment_files.scan) is cut off (in a data directory; a
snapshot is only read) and reported in one log line; everything before it is loaded.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mockbroker import batches
from mockbroker.state import coordinator_load
from mockbroker.state.log import PartitionLog, StoredBatch
from mockbroker.state.producer_state import last_sequence
from mockbroker.store import durable_log, metadata
from mockbroker.store import segment_files as files

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState



capture: Callable[[ClusterState], dict[str, Any]] = metadata.capture
restore: Callable[[ClusterState, dict[str, Any]], None] = metadata.restore

METADATA_FILE = "metadata.json"
logger = logging.getLogger("mockbroker.store")

__all__ = ["METADATA_FILE", "capture", "load_state", "partition_folder", "restore"]


def partition_folder(root: str, topic: str, index: int) -> str:
    """Kafka's folder for a partition: ``<topic>-<partition>``."""
    return os.path.join(root, f"{topic}-{index}")


def metadata_text(state: ClusterState) -> str:
    """``state``'s metadata as ``metadata.json`` holds it (the same text for the same metadata)."""
    return json.dumps(capture(state), sort_keys=True, indent=1)


def read_metadata(root: str) -> dict[str, Any] | None:
    path = os.path.join(root, METADATA_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            data: dict[str, Any] = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} cannot be read: {exc}") from None
    return data


def load_state(state: ClusterState, root: str, writable: bool) -> dict[str, Any] | None:
    """Fill a fresh ``state`` from ``root`` (see the module docstring); the metadata read (None: none
    there, nothing loaded).  ``writable``: cut damaged tails off the files (a data directory)."""
    data = read_metadata(root)
    if data is None:
        return None
    restore(state, data)
    now = state.clock.now_ms()
    top_pid = -1
    for topic in state.topics.values():
        for log in topic.partitions:
            folder = partition_folder(root, topic.name, log.index)
            top_pid = max(top_pid, read_partition(log, folder, now, writable))
    if top_pid >= state.producers.next_id:
        state.producers.next_id = top_pid + 1
    for topic in state.topics.values():
        for log in topic.partitions:
            log.bump_leader_epoch()
    state.memory_cap.refresh()
    coordinator_load.load_all(state)
    return data


def read_partition(log: PartitionLog, folder: str, now_ms: int, writable: bool) -> int:
    """Read ``folder``'s segment files into the empty ``log`` and rebuild its producer state; returns the
    highest producer id seen (-1: none)."""
    if not os.path.isdir(folder):
        return -1
    found = files.segment_files(folder)
    pairs: list[tuple[StoredBatch, files.Entry]] = []
    kept: list[int] = []
    active_size = 0
    name = f"{log.topic}-{log.index}"
    for i, (base, path) in enumerate(found):
        data = files.read_file(path)
        scan = files.scan(data, files.CHECK_LAST if i == len(found) - 1 else 0)
        if scan.problem:
            dropped = [p for _b, p in found[i + 1:]]
            logger.warning("data dir: %s/%s: %s; cut at byte %s (%s bytes dropped%s)", name, os.path.basename(path),
                           scan.problem, scan.good_end, scan.size - scan.good_end,
                           f", and {len(dropped)} later segment files" if dropped else "")
            if writable:
                files.cut(path, scan.good_end)
                for p in dropped:
                    os.unlink(p)
        view = memoryview(data)
        for entry in scan.entries:
            pairs.extend(_stored(view, entry))
        kept.append(base)
        active_size = scan.good_end
        if scan.problem:
            break
    start_text = durable_log.read_small(folder, durable_log.LOG_START_FILE)
    start = int(start_text) if start_text and start_text.strip().isdigit() else 0
    first = pairs[0][0].base_offset if pairs else start
    skip = 0
    while skip < len(pairs) and pairs[skip][0].last_offset < start:  # below a log start DeleteRecords moved
        skip += 1
    pairs = pairs[skip:]
    batches = [b for b, _e in pairs]
    log.batches = batches
    log._bases = [b.base_offset for b in batches]  # the log's own index, filled at once
    log.size_bytes = sum(b.size for b in batches)
    log.log_start_offset = max(start, first)
    log.next_offset = batches[-1].last_offset + 1 if batches else max(start, first)
    epochs = durable_log.read_epochs(durable_log.read_small(folder, durable_log.EPOCHS_FILE))
    if epochs:
        log.epoch_starts = epochs
        log.leader_epoch = max(log.leader_epoch, epochs[-1][0])
    if isinstance(log, durable_log.DurableLog):
        log.attach(kept, active_size)
    return rebuild_producers(log, pairs, now_ms)


def _stored(view: memoryview, entry: files.Entry) -> list[tuple[StoredBatch, files.Entry]]:
    """The StoredBatch of one file entry (a magic 0/1 message set converted to v2 batches, as Produce does)."""
    if entry.magic == 2:
        return [(StoredBatch(entry.base_offset, entry.last_offset, entry.max_timestamp, entry.end - entry.start,
                             (view[entry.start:entry.end],), entry.producer_id, entry.is_transactional,
                             entry.is_control), entry)]
    from mockbroker import records as rec

    converted = memoryview(rec.legacy_to_v2(view[entry.start:entry.end]))
    out = []
    for sub in files.scan(converted, 0).entries:
        out.extend(_stored(converted, sub))
    return out


def rebuild_producers(log: PartitionLog, pairs: list[tuple[StoredBatch, files.Entry]], now_ms: int) -> int:
    """Replay the log's batches (with their header facts) into its producer state; the highest producer
    id seen."""
    producers = log.producers
    top = -1
    for b, entry in pairs:
        if b.producer_id < 0:
            continue
        top = max(top, b.producer_id)
        if b.is_control:
            commit, coordinator_epoch = _marker(b)
            producers.record_marker(b.producer_id, entry.producer_epoch, coordinator_epoch, commit, b.base_offset,
                                    now_ms)
            continue
        producers.record_append(b.producer_id, entry.producer_epoch, entry.base_sequence,
                                last_sequence(entry.base_sequence, entry.record_count), b.base_offset, b.last_offset,
                                b.max_timestamp, now_ms, b.is_transactional, entry.crc)
    return top


def _marker(stored: StoredBatch) -> tuple[bool, int]:
    """(commit, coordinator epoch) of a control batch's end-transaction marker."""
    from mockbroker import records as rec

    _header, records = batches.decode_stored(stored)
    if not records:
        return False, 0
    _version, kind = rec.parse_control_record(records[0])
    try:
        _v, coordinator_epoch = rec.parse_control_value(records[0])
    except ValueError:
        coordinator_epoch = 0
    return kind == 1, coordinator_epoch
