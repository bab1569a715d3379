"""The console's part about share groups (KIP-932): the group's members and assignments, and each
share-partition's start and end offsets with its in-flight records (AVAILABLE, ACQUIRED by a member until a
lock expiry, ACKNOWLEDGED, ARCHIVED), consecutive records in the same state shown as one range.

The share coordinator is made on first use (``cluster.state.share``, a cached property): viewing never makes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mockbroker.console.markup import Links, Safe, esc, join, pill, section, table, tag, when

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster
    from mockbroker.state.share_coordinator import ShareCoordinator
    from mockbroker.state.share_groups import ShareGroup
    from mockbroker.state.share_partitions import SharePartition

STATES = ("AVAILABLE", "ACQUIRED", "ACKNOWLEDGED", "ARCHIVED")
STATE_KINDS = {"AVAILABLE": "info", "ACQUIRED": "warn", "ACKNOWLEDGED": "ok", "ARCHIVED": "bad"}
MAX_RANGES = 200  # rows of in-flight records shown per share-partition


def coordinator(cluster: MockCluster) -> ShareCoordinator | None:
    state = cluster.state
    return state.share if "share" in state.__dict__ else None


def listed(cluster: MockCluster) -> list[ShareGroup]:
    share = coordinator(cluster)
    return sorted(share.groups.listed(), key=lambda g: g.group_id) if share is not None else []


def find(cluster: MockCluster, group_id: str) -> ShareGroup | None:
    """The share group ``group_id`` when a share group (not a classic or consumer one) holds the id."""
    share = coordinator(cluster)
    if share is None or not share.is_share_group(group_id):
        return None
    return share.groups.group(group_id)


def partition_lag(cluster: MockCluster, topic: str, partition: int, sp: SharePartition) -> int | None:
    """Records from the start offset to the high watermark not yet acknowledged or archived."""
    t = cluster.state.topics.get(topic)
    if t is None or not 0 <= partition < len(t.partitions):
        return None
    done = sum(1 for r in sp.state()["records"] if r["state"] in ("ACKNOWLEDGED", "ARCHIVED"))
    return max(0, int(t.partitions[partition].high_watermark) - sp.start_offset - done)


def total_lag(cluster: MockCluster, group_id: str) -> int:
    share = coordinator(cluster)
    if share is None:
        return 0
    return sum(partition_lag(cluster, t, p, sp) or 0 for (t, p), sp in share.partitions.all_for_group(group_id).items())


def _parts(parts: dict[str, Any], links: Links) -> Safe:
    return join(tag("div", links.to(links.topic(t), t) + Safe(": ") + ", ".join(str(p) for p in sorted(parts[t])))
                for t in sorted(parts) if parts[t])


def members_table(group: ShareGroup, links: Links) -> Safe:
    rows = [[m.member_id, m.client_id, m.client_host, m.rack_id or "", m.epoch, ", ".join(sorted(m.subscribed)),
             _parts(m.assigned, links)] for m in group.members.values()]
    return table(["member id", "client id", "client host", "rack", "epoch", "subscribed", "assignment"], rows,
                 empty="no members")


def record_ranges(records: list[dict[str, Any]]) -> list[tuple[int, int, dict[str, Any]]]:
    """Consecutive records alike (state, delivery count, member, lock deadline) as (first, last, record)."""
    out: list[tuple[int, int, dict[str, Any]]] = []
    keys = ("state", "delivery_count", "member_id", "lock_deadline_ms")
    for r in sorted(records, key=lambda r: r["offset"]):
        if out and out[-1][1] + 1 == r["offset"] and all(out[-1][2][k] == r[k] for k in keys):
            out[-1] = (out[-1][0], r["offset"], out[-1][2])
        else:
            out.append((r["offset"], r["offset"], r))
    return out


def _lock(deadline: int | None, now: int) -> Safe:
    if deadline is None:
        return esc("")
    return when(deadline) + esc(f" (in {max(0, deadline - now)} ms)")


def records_table(records: list[dict[str, Any]], now: int) -> Safe:
    ranges = record_ranges(records)
    rows = []
    for first, last, r in ranges[:MAX_RANGES]:
        rows.append([str(first) if first == last else f"{first}..{last}", last - first + 1,
                     pill(r["state"], STATE_KINDS.get(r["state"], "")), r["delivery_count"], r["member_id"] or "",
                     _lock(r["lock_deadline_ms"], now)])
    more = tag("p", f"{len(ranges) - MAX_RANGES} more ranges not shown", class_="hint") \
        if len(ranges) > MAX_RANGES else Safe("")
    return table(["offsets", "records", "state", "delivery count", "acquired by", "lock expires"], rows,
                 empty="no records in flight") + more


def partitions_part(cluster: MockCluster, group_id: str, links: Links) -> Safe:
    share = coordinator(cluster)
    if share is None:
        return tag("p", "no share-partitions", class_="empty")
    now = cluster.state.clock.now_ms()
    parts = []
    for (topic, partition), sp in share.partitions.all_for_group(group_id).items():
        state = sp.state()
        counts = {name: 0 for name in STATES}
        for r in state["records"]:
            counts[r["state"]] = counts.get(r["state"], 0) + 1
        behind = partition_lag(cluster, topic, partition, sp)
        summary = tag("div", join(tag("div", tag("b", value) + esc(name)) for name, value in [
            ("start offset", state["start_offset"]), ("end offset", state["end_offset"]),
            *((name.lower(), counts[name]) for name in STATES), ("lag", "-" if behind is None else behind)]),
            class_="summary")
        title = links.to(links.topic(topic), topic) + Safe(f" partition {partition}")
        parts.append(tag("div", tag("h3", title) + summary + records_table(state["records"], now),
                         class_="share-partition"))
    return join(parts) if parts else tag("p", "no share-partitions yet (nothing fetched)", class_="empty")


def group_body(cluster: MockCluster, group_id: str, links: Links,
               heading: Callable[[object, object], Safe] = section) -> Safe:
    """One share group: summary, members with assignments, share-partitions with their in-flight records."""
    group = find(cluster, group_id)
    if group is None:
        return tag("p", "no such share group", class_="empty")
    summary = tag("div", join(tag("div", tag("b", value) + esc(name)) for name, value in [
        ("type", "share"), ("state", group.state_name), ("group epoch", group.group_epoch),
        ("assignment epoch", group.assignment_epoch), ("assignor", "simple"), ("members", len(group.members)),
        ("total lag", total_lag(cluster, group_id))]), class_="summary")
    hint = tag("p", "Records from the start offset (SPSO) to the end offset (SPEO) are in flight; lag counts the "
                    "records from the start offset to the high watermark not yet acknowledged or archived.",
               class_="hint")
    return (summary + heading("Members", members_table(group, links))
            + heading("Share-partitions", hint + partitions_part(cluster, group_id, links)))
