"""Snapshots: a cluster's partitions and metadata written at once to a new folder, in the data directory's
layout (``metadata.json``, ``<topic>-<partition>/<base offset>.log``, ``log-start-offset``,
``leader-epoch-checkpoint``), and read back into a new cluster.

``write`` runs on the cluster's loop, between requests, so what it writes is one consistent moment of the
cluster.  A partition's batches go to one file (or, from a data directory, the same files as there), each
written with one ``os.writev`` of the stored buffers.  ``load`` reads a snapshot into a fresh state as a
data directory is read (store.loading), into logs in memory: the snapshot itself is never written to.
``copy_into`` starts a data directory from a snapshot (only into an empty one).
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

from mockbroker.store import durable_log, loading
from mockbroker.store import segment_files as files

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState


def write(state: ClusterState, path: str) -> int:
    """Write ``state`` to the new folder ``path`` (it must not exist, or be empty); returns the bytes of
    record batches written."""
    path = os.path.abspath(path)
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise ValueError(f"snapshot path {path} exists and is not an empty folder")
    os.makedirs(path, exist_ok=True)
    total = 0
    for topic in state.topics.values():
        for log in topic.partitions:
            folder = loading.partition_folder(path, topic.name, log.index)
            os.makedirs(folder)
            total += _write_partition(log, folder)
    with open(os.path.join(path, loading.METADATA_FILE), "w", encoding="utf-8") as f:
        f.write(loading.metadata_text(state))
    return total


def _write_partition(log: object, folder: str) -> int:
    from mockbroker.state.log import PartitionLog

    assert isinstance(log, PartitionLog)
    bases = list(log.segments) if isinstance(log, durable_log.DurableLog) and log.segments else []
    if not bases and log.batches:
        bases = [log.batches[0].base_offset]
    for base, chunks in durable_log.segment_chunks(log.batches, bases).items():
        fd = os.open(os.path.join(folder, files.file_name(base)), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            files.write_all(fd, chunks)
        finally:
            os.close(fd)
    with open(os.path.join(folder, durable_log.LOG_START_FILE), "w", encoding="ascii") as f:
        f.write(durable_log.log_start_text(log.log_start_offset))
    with open(os.path.join(folder, durable_log.EPOCHS_FILE), "w", encoding="ascii") as f:
        f.write(durable_log.epochs_text(log.epoch_starts))
    return log.size_bytes


def check(path: str) -> str:
    """The snapshot folder ``path``, checked to hold a snapshot (ValueError naming what is wrong)."""
    path = os.path.abspath(path)
    if not os.path.isdir(path):
        raise ValueError(f"snapshot {path} is not a folder")
    if not os.path.isfile(os.path.join(path, loading.METADATA_FILE)):
        raise ValueError(f"snapshot {path} holds no {loading.METADATA_FILE}: not a snapshot")
    return path


def load(state: ClusterState, path: str) -> None:
    """Read the snapshot at ``path`` into the fresh ``state`` (logs in memory)."""
    loading.load_state(state, check(path), writable=False)


def copy_into(path: str, data_dir: str) -> None:
    """Copy the snapshot's files into an empty (or missing) data directory."""
    path = check(path)
    if os.path.isdir(data_dir) and [n for n in os.listdir(data_dir) if n != ".lock"]:
        raise ValueError(f"data dir {data_dir} is not empty: a snapshot starts only an empty data dir")
    os.makedirs(data_dir, exist_ok=True)
    for name in os.listdir(path):
        source = os.path.join(path, name)
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(data_dir, name))
        else:
            shutil.copy2(source, os.path.join(data_dir, name))
