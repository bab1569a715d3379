"""Explaining a failed audit while its cluster still runs: where the broker holds each record the
read-back missed (or that it holds none of it), and what decided its fate there.

For every stored batch holding a missed record :func:`explain_missing` gives one line: partition,
offsets, producer id and epoch, the producer's next COMMIT/ABORT marker after it in that partition,
whether an aborted-transaction range of that producer covers it, and the partition's last stable
offset and high watermark at the time (a transaction still open when the read-back ran stops a
read_committed reader at its first offset).  Records the log does not hold at all are named too,
and so is what the transaction coordinator holds for each transactional id involved.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from mockbroker.audit.producers import parse
from mockbroker.records.batch import CONTROL_ABORT, CONTROL_COMMIT, decode_batch, parse_control_record

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster

Key = tuple[str, int]  # (producer name, sequence number in its values)
MARKER_TYPES = {CONTROL_ABORT: "ABORT", CONTROL_COMMIT: "COMMIT"}


def explain_missing(cluster: MockCluster, topic: str, missing: set[Key], limit: int = 12) -> list[str]:
    """Lines saying where the broker keeps each record of ``missing`` (at most ``limit`` batches)."""
    if not missing:
        return []
    try:
        return cluster.call(_explain, cluster, topic, missing, limit)
    except Exception as exc:  # the explanation must not hide the figures it explains
        return [f"could not look up the {len(missing)} missed record(s) of {topic}: {exc!r}"]


def _explain(cluster: MockCluster, topic: str, missing: set[Key], limit: int) -> list[str]:
    state = cluster.state
    lines: list[str] = []
    found: set[Key] = set()
    names: set[str] = {name for name, _ in missing}
    for log in state.topic(topic).partitions:
        markers = _markers(log)
        for stored in log.batches:
            if stored.is_control:
                continue
            header, records = decode_batch(b"".join(bytes(b) for b in stored.buffers), check_crc=False)
            keys = [parse(bytes(r.value or b""))[:2] for r in records]
            hit = [k for k in keys if k in missing]
            if not hit:
                continue
            found.update(hit)
            if len(lines) < limit:
                lines.append(_batch_line(log, stored, header, hit, markers))
    absent = sorted(missing - found)
    if absent:
        lines.append(f"{len(absent)} missed record(s) are not in the log at all, e.g. {absent[:8]}")
    for txn in state.transactions.listed():
        if txn.transactional_id in names:
            lines.append(f"coordinator: {txn.transactional_id} producer {txn.producer_id} epoch {txn.epoch} "
                         f"state {txn.state} partitions {sorted(txn.partitions)}")
    return lines


def _markers(log: Any) -> list[tuple[int, int, int, str]]:
    """(offset, producer id, epoch, COMMIT/ABORT) of each control batch, in offset order."""
    out = []
    for stored in log.batches:
        if not stored.is_control:
            continue
        header, records = decode_batch(b"".join(bytes(b) for b in stored.buffers), check_crc=False)
        kind = MARKER_TYPES.get(parse_control_record(records[0])[1], "?") if records else "?"
        out.append((stored.base_offset, header.producer_id, header.producer_epoch, kind))
    return out


def _batch_line(log: Any, stored: Any, header: Any, hit: list[Key], markers: list[tuple[int, int, int, str]]) -> str:
    pid = header.producer_id
    after = next((m for m in markers if m[0] > stored.base_offset and m[1] == pid), None)
    marker = f"{after[3]} at {after[0]} (epoch {after[2]})" if after else "none yet"
    covering = [f"{t.first_offset}-{t.last_offset}" for t in log.producers.aborted
                if t.producer_id == pid and t.first_offset <= stored.base_offset <= t.last_offset]
    by_name: dict[str, list[int]] = defaultdict(list)
    for name, seq in hit:
        by_name[name].append(seq)
    who = ", ".join(f"{name} seq {min(seqs)}..{max(seqs)}" for name, seqs in sorted(by_name.items()))
    return (f"{log.topic}-{log.index} offsets {stored.base_offset}-{stored.last_offset}: {len(hit)} missed "
            f"({who}); producer {pid} epoch {header.producer_epoch} transactional {stored.is_transactional}; "
            f"its next marker here: {marker}; aborted ranges covering it: {covering or 'none'}; "
            f"last stable offset {log.last_stable_offset}, high watermark {log.high_watermark}, "
            f"open transactions {dict(log.producers.open_txns)}")
