"""MockCluster's data directory and snapshots (mockbroker.store):

    with MockCluster(data_dir="/var/lib/mock") as cluster:      # logs and metadata kept there
        ...
    with MockCluster() as cluster:
        cluster.snapshot("snap")                                 # written between requests
    with MockCluster(snapshot="snap") as cluster:                # its own copy, in memory
        ...

``data_dir=`` (or the broker config ``mock.data.dir``) opens the folder as the cluster is made (locked:
a second live process is refused with ValueError), reads back what it holds, and keeps every change there
before the answer leaves; ``snapshot=`` starts from a snapshot (with ``data_dir=`` too, only into an empty
data directory, which it is copied into).  ``reset()`` goes back to the snapshot, or empties the data
directory.  See docs/data-dir-and-snapshots.md.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState
    from mockbroker.store.data_dir import DataDir

DATA_DIR = "mock.data.dir"
FSYNC = "mock.data.fsync"


def store_config(config: dict[str, Any], data_dir: str | os.PathLike[str] | None) -> None:
    """``data_dir=`` as the broker config ``mock.data.dir``."""
    if data_dir is not None:
        if not str(data_dir):
            raise ValueError("data_dir must name a folder")
        config[DATA_DIR] = os.fspath(data_dir)


class StoreMixin:
    """The data directory and snapshot half of MockCluster (which provides ``state`` and ``call``)."""

    state: ClusterState
    _data_dir: DataDir | None
    _snapshot: str | None

    if TYPE_CHECKING:
        def call(self, fn: Any, *args: Any, **kwargs: Any) -> Any: ...

    def _open_store(self, snapshot: str | os.PathLike[str] | None) -> None:
        """Open the data directory (``mock.data.dir``) and/or read the snapshot into the fresh state."""
        self._data_dir = None
        self._snapshot = None
        self.store_loaded = False  # whether the state came from a data directory or a snapshot (seeds skip it)
        path = str(self.state.config[DATA_DIR] or "")
        if snapshot is not None:
            from mockbroker.store import snapshot as snapshots

            self._snapshot = snapshots.check(os.fspath(snapshot))
        if not path:
            if self._snapshot is not None:
                snapshots.load(self.state, self._snapshot)
                self.store_loaded = True
            return
        from mockbroker.store.data_dir import DataDir

        data_dir = DataDir(path, bool(self.state.config[FSYNC]))
        try:
            if self._snapshot is not None:
                snapshots.copy_into(self._snapshot, data_dir.path)
            self.store_loaded = data_dir.load(self.state)
        except BaseException:
            data_dir.close()
            raise
        self._data_dir = data_dir

    def _store_after_call(self) -> None:
        """After a MockCluster call on the loop: save the metadata if it changed."""
        if self._data_dir is not None:
            self._data_dir.check(full=True)

    def _store_tick(self) -> None:
        if self._data_dir is not None:
            self._data_dir.tick()

    def _store_reset(self, fresh: ClusterState) -> None:
        """reset(): the fresh state starts from the snapshot again, or empties the data directory."""
        if self._data_dir is not None:
            self._data_dir.attach(fresh)
            self._data_dir.save()
            self.store_loaded = False  # (emptied)
        elif self._snapshot is not None:
            from mockbroker.store import snapshot as snapshots

            snapshots.load(fresh, self._snapshot)

    def _close_store(self) -> None:
        """At stop: the last save, files closed, the lock released."""
        if self._data_dir is not None:
            self._data_dir.close()
            self._data_dir = None

    @property
    def data_dir(self) -> str | None:
        """The data directory's path, while one is open."""
        return self._data_dir.path if self._data_dir is not None else None

    def snapshot(self, path: str | os.PathLike[str]) -> int:
        """Write the cluster's partitions and metadata to the new folder ``path`` (between requests, on the
        cluster's loop: one consistent moment); returns the bytes of record batches written."""
        from mockbroker.store import snapshot as snapshots

        return int(self.call(snapshots.write, self.state, os.fspath(path)))
