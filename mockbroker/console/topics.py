"""Console page of one topic (``/ui/topics/NAME``): its partitions (leader, replicas, log start, high watermark,
last stable offset) and its newest records, newest first, paged backwards (``?partition=P&before=OFFSET``).

Records are read from the stored batches, from the end backwards, so a page costs the records it shows, not
the log's length.  Keys, values and headers are decoded by mockbroker.console.values (Schema Registry framing
with the registered schema, else text, JSON or hex); transaction markers are rows of their own, and records of
aborted or still open transactions say so.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from mockbroker import batches
from mockbroker import records as rec
from mockbroker.console import internal_records, values
from mockbroker.console.markup import Links, Query, Safe, View, join, link, pill, query_int, section, table, tag, when
from mockbroker.errors import KafkaError
from mockbroker.state.internal_topics import is_internal

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster
    from mockbroker.registry.state import RegistryState
    from mockbroker.state.log import PartitionLog

PAGE = 50
MAX_PAGE = 500


@dataclass
class Row:
    """One record or transaction marker as the page lists it."""

    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    producer_id: int
    marker: str | None = None  # "COMMIT" / "ABORT" for a control record
    txn: str | None = None  # "committed", "aborted", "open" for a transactional record


def _txn_state(log: PartitionLog, producer_id: int, offset: int) -> str:
    first_open = log.producers.open_txns.get(producer_id)
    if first_open is not None and offset >= first_open:
        return "open"
    for txn in log.producers.aborted:
        if txn.producer_id == producer_id and txn.first_offset <= offset <= txn.last_offset:
            return "aborted"
    return "committed"


def newest_rows(log: PartitionLog, before: int | None = None, limit: int = PAGE) -> Iterator[Row]:
    """Records and markers of ``log`` below ``before`` (the high watermark by default), newest first."""
    end = log.next_offset if before is None else min(before, log.next_offset)
    if end <= log.log_start_offset or limit <= 0:
        return
    count = 0
    for i in range(log._first_index(end - 1), -1, -1):  # (the log's own batch search)
        if i >= len(log.batches):
            continue
        stored = log.batches[i]
        try:
            header, records = batches.decode_stored(stored)
        except KafkaError as exc:
            raise KafkaError(exc.code, f"{log.topic}-{log.index} offsets {stored.base_offset}..{stored.last_offset}: "
                                       f"{exc.message}") from None
        for record in reversed(records):
            at = header.base_offset + record.offset_delta
            if at >= end:
                continue
            if at < log.log_start_offset:
                return
            row = Row(log.index, at, header.base_timestamp + record.timestamp_delta,
                      None if record.key is None else bytes(record.key),
                      None if record.value is None else bytes(record.value), list(record.headers), header.producer_id)
            if header.is_control:
                row.marker = "COMMIT" if rec.parse_control_record(record)[1] == 1 else "ABORT"
            elif header.is_transactional:
                row.txn = _txn_state(log, header.producer_id, at)
            yield row
            count += 1
            if count >= limit:
                return


def _registry(cluster: MockCluster) -> RegistryState | None:
    registry = cluster.schema_registry
    return registry.state if registry is not None else None


def _headers(headers: list[tuple[str, bytes | None]], registry: RegistryState | None) -> Safe:
    if not headers:
        return Safe("")
    return join(tag("div", tag("b", key) + Safe(" ") + values.show(value, registry, limit=500), class_="header")
                for key, value in headers)


def rows_table(rows: list[Row], registry: RegistryState | None, with_partition: bool = True,
               topic: str = "") -> Safe:
    """The records table (``topic``: whose records they are; an internal topic's are decoded as its
    coordinator's records)."""
    out: list[list[object]] = []
    for r in rows:
        if r.marker is not None:
            kind = "ok" if r.marker == "COMMIT" else "bad"
            what = pill(f"{r.marker} marker", kind) + Safe(f" producer {r.producer_id}")
            cells: list[object] = [r.offset, when(r.timestamp), what, "", ""]
        else:
            status = Safe("")
            if r.txn is not None:
                status = pill(f"transaction {r.txn}", {"committed": "ok", "aborted": "bad", "open": "warn"}[r.txn])
            coordinators = internal_records.describe(topic, r.key, r.value) if is_internal(topic) else None
            if coordinators is not None:  # a coordinator's record: Kafka's schema, decoded
                key, value = values.cell(coordinators[0]), values.cell(coordinators[1])
            else:
                key, value = values.show(r.key, registry, limit=500), values.show(r.value, registry)
            cells = [r.offset, when(r.timestamp), key, value + status, _headers(r.headers, registry)]
        out.append(([r.partition] if with_partition else []) + cells)
    headers = (["partition"] if with_partition else []) + ["offset", "timestamp", "key", "value", "headers"]
    return table(headers, out, empty="no records", class_="records")


def partitions_table(cluster: MockCluster, name: str, links: Links, most: int | None = None) -> Safe:
    """The topic's partitions (the first ``most`` of them, the rest counted in a line)."""
    topic = cluster.state.topic(name)
    rows = []
    for p in topic.partitions[:most]:
        rows.append([links.to(links.topic(name, partition=p.index), p.index), p.leader, p.leader_epoch,
                     ", ".join(str(r) for r in p.replicas), p.log_start_offset, p.high_watermark,
                     p.last_stable_offset, p.high_watermark - p.log_start_offset])
    shown = table(["partition", "leader", "epoch", "replicas", "log start", "high watermark", "last stable",
                   "records"], rows)
    left = len(topic.partitions) - len(rows)
    return shown + tag("p", f"and {left} more partitions", class_="hint") if left > 0 else shown


def newest_across(cluster: MockCluster, name: str, limit: int) -> list[Row]:
    """The newest ``limit`` rows of the whole topic: each partition's newest, merged by time (then offset).
    Partitions are read newest batch first and left unread once ``limit`` rows are newer than anything they
    hold (their last batch's max timestamp): a topic of thousands of partitions costs what its newest hold."""
    logs = [log for log in cluster.state.topic(name).partitions if log.batches]
    logs.sort(key=lambda log: log.batches[-1].max_timestamp, reverse=True)
    rows: list[Row] = []
    for log in logs:
        if len(rows) >= limit and log.batches[-1].max_timestamp < rows[limit - 1].timestamp:
            break
        rows.extend(newest_rows(log, None, limit))
        rows.sort(key=lambda r: (r.timestamp, r.offset), reverse=True)
        del rows[limit:]
    return rows


def records_part(cluster: MockCluster, name: str, links: Links, partition: int | None, before: int | None,
                 limit: int) -> Safe:
    registry = _registry(cluster)
    if partition is None:
        rows = newest_across(cluster, name, limit)
        caption = tag("p", f"The newest {len(rows)} records of every partition (choose a partition to page back).",
                      class_="hint")
        return caption + rows_table(rows, registry, topic=name)
    log = cluster.state.partition(name, partition)
    rows = list(newest_rows(log, before, limit))
    nav: list[Any] = [link(links.topic(name) or "#", "all partitions")]
    if before is not None and before < log.next_offset:
        nav.append(link(links.topic(name, partition=partition) or "#", "newest"))
    if rows and rows[-1].offset > log.log_start_offset:
        nav.append(link(links.topic(name, partition=partition, before=rows[-1].offset, limit=limit) or "#",
                        "older", class_="older"))
    caption = tag("p", join([f"Partition {partition}, offsets below {before if before is not None else log.next_offset}"
                             " · ", join(nav, " · ")]), class_="hint")
    return caption + rows_table(rows, registry, with_partition=False, topic=name)


def topic_view(cluster: MockCluster, links: Links, name: str, query: Query) -> View:
    partition = query_int(query, "partition")
    before = query_int(query, "before")
    limit = max(1, min(query_int(query, "limit") or PAGE, MAX_PAGE))
    topic = cluster.state.topic(name)  # UNKNOWN_TOPIC_OR_PARTITION first
    if partition is not None and not 0 <= partition < len(topic.partitions):
        raise ValueError(f"topic {name!r} has partitions 0..{len(topic.partitions) - 1}, not {partition}")
    live = (section("Partitions", partitions_table(cluster, name, links))
            + section("Records", records_part(cluster, name, links, partition, before, limit)))
    return View(f"Topic {name}", live)


def topic_section(cluster: MockCluster, links: Links, name: str, limit: int = 200) -> Safe:
    """A topic for the report: its partitions and its newest ``limit`` records."""
    return (tag("h3", name, id="topic-" + quote(name, safe="")) + partitions_table(cluster, name, links, most=1000)
            + rows_table(newest_across(cluster, name, limit), _registry(cluster), topic=name))
