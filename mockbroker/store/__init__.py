"""Keeping a cluster's state outside the process: the data directory (``--data-dir``, every partition's
log and the cluster's metadata written before an answer leaves) and snapshots (the same layout, written
at once between requests and read back into a new cluster).  Above ``state`` (it reads and fills the
state's objects), below ``cluster`` (MockCluster opens it when asked)."""
