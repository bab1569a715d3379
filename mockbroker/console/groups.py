"""Console pages of groups: the list (``/ui/groups``: classic, KIP-848 consumer and share groups with their
type, state, members, protocol or assignor and total lag) and one group (``/ui/groups/ID``): its members with
their assignments, its committed offsets with the log end and lag, and offsets pending in open transactions.
Share groups' own part (members, share-partitions and their in-flight records) is in
mockbroker.console.share_groups.

Viewing never makes a coordinator: the group and share coordinators are made on first use
(``cluster.state.groups`` / ``.share`` are cached properties), so an unused one means no groups of its kind.
Lag is Kafka's tools' lag: the high watermark (log end) minus the committed offset.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from mockbroker.codec_errors import CodecError
from mockbroker.console import share_groups
from mockbroker.console.markup import Links, Query, Safe, View, esc, join, pill, section, table, tag
from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster
    from mockbroker.state.consumer_groups import ConsumerGroupState
    from mockbroker.state.groups import Group, GroupCoordinator

Heading = Callable[[object, object], Safe]  # a titled part: a section on a page, an h4 in the report
_ASSIGNMENT = api.module("ConsumerProtocolAssignment")
LAG_HINT = ("Lag is the high watermark (log end offset) minus the committed offset, as Kafka's tools count it "
            "(read_committed consumers stop earlier, at the last stable offset).")
STATE_KINDS = {"Stable": "ok", "Empty": "", "Dead": "bad", "PreparingRebalance": "warn",
               "CompletingRebalance": "warn", "Assigning": "warn", "Reconciling": "warn"}


def coordinator(cluster: MockCluster) -> GroupCoordinator | None:
    """The group coordinator if anything made it (viewing does not)."""
    state = cluster.state
    return state.groups if "groups" in state.__dict__ else None


def classic_groups(cluster: MockCluster) -> list[Group]:
    """Classic and consumer groups that exist (members, offsets or a rebalance), by id."""
    groups = coordinator(cluster)
    return sorted(groups.listed(), key=lambda g: g.group_id) if groups is not None else []


def find_group(cluster: MockCluster, group_id: str) -> Group | None:
    groups = coordinator(cluster)
    group = groups.groups.get(group_id) if groups is not None else None
    if group is None:
        return None
    if group in groups.listed() or group.pending_txn:  # type: ignore[union-attr]
        return group
    return None


def decode_assignment(data: bytes) -> dict[str, list[int]] | None:
    """A classic consumer's assignment bytes (ConsumerProtocolAssignment: a version, then topics with
    partitions) as topic -> partitions; None when they are not that (another protocol type's bytes)."""
    if len(data) < 2:
        return None
    version = struct.unpack_from(">h", data)[0]
    if version < 0:
        return None
    try:
        value, _end = api.decode_message(_ASSIGNMENT, min(version, max(_ASSIGNMENT.READERS)), memoryview(data), 2)
    except CodecError:
        return None
    return {tp.topic: sorted(tp.partitions) for tp in value.assigned_partitions}


def high_watermark(cluster: MockCluster, topic: str, partition: int) -> int | None:
    """The partition's high watermark, None when the topic or partition is gone."""
    t = cluster.state.topics.get(topic)
    if t is None or not 0 <= partition < len(t.partitions):
        return None
    return int(t.partitions[partition].high_watermark)


def lag(cluster: MockCluster, topic: str, partition: int, committed: int) -> int | None:
    hw = high_watermark(cluster, topic, partition)
    return None if hw is None or committed < 0 else max(0, hw - committed)


def total_lag(cluster: MockCluster, group: Group) -> int:
    return sum(lag(cluster, t, p, offset) or 0 for (t, p), (offset, _epoch, _meta) in group.offsets.items())


def parts_text(parts: dict[str, Any], links: Links) -> Safe:
    """topic: partitions, one line per topic (topics linked)."""
    if not parts:
        return esc("")
    lines = [tag("div", links.to(links.topic(t), t) + Safe(": ") + ", ".join(str(p) for p in sorted(parts[t])))
             for t in sorted(parts)]
    return join(lines)


def state_pill(state: str) -> Safe:
    return pill(state, STATE_KINDS.get(state, "info"))


# -- the list -------------------------------------------------------------------------------------------
def _protocol(group: Group) -> str:
    if group.consumer is not None:
        return f"assignor {group.consumer.assignor}"
    return f"{group.protocol_type or ''} / {group.protocol_name or ''}".strip(" /")


def _members(group: Group) -> int:
    return len(group.consumer.members) if group.consumer is not None else len(group.members)


def groups_table(cluster: MockCluster, links: Links) -> Safe:
    rows: list[list[object]] = []
    for g in classic_groups(cluster):
        rows.append([links.to(links.group(g.group_id), g.group_id), g.group_type, state_pill(g.state_name),
                     _members(g), _protocol(g), total_lag(cluster, g)])
    for sg in share_groups.listed(cluster):
        rows.append([links.to(links.group(sg.group_id), sg.group_id), "share", state_pill(sg.state_name),
                     len(sg.members), "share / simple", share_groups.total_lag(cluster, sg.group_id)])
    rows.sort(key=lambda r: str(r[0]))
    return table(["group", "type", "state", "members", "protocol / assignor", "total lag"], rows, empty="no groups")


def groups_view(cluster: MockCluster, links: Links, query: Query) -> View:
    live = tag("p", LAG_HINT + " A share group's lag counts the records from its start offset not yet "
                              "acknowledged or archived.", class_="hint") + groups_table(cluster, links)
    return View("Groups", live)


# -- one classic or consumer group ----------------------------------------------------------------------
def _summary(items: list[tuple[str, object]]) -> Safe:
    return tag("div", join(tag("div", tag("b", value) + esc(name)) for name, value in items), class_="summary")


def _classic_summary(cluster: MockCluster, group: Group) -> Safe:
    return _summary([("type", "classic"), ("state", group.state), ("generation", group.generation),
                     ("protocol type", group.protocol_type or "-"), ("protocol", group.protocol_name or "-"),
                     ("leader", group.leader or "-"), ("members", len(group.members)),
                     ("total lag", total_lag(cluster, group))])


def _assignment_cell(data: bytes, protocol_type: str | None, links: Links) -> Safe:
    if not data:
        return tag("span", "none yet", class_="empty")
    parts = decode_assignment(data) if protocol_type in ("consumer", None, "") else None
    if parts is None:
        return esc(f"{len(data)} bytes ({protocol_type or 'unknown'} protocol)")
    return parts_text(parts, links) if parts else tag("span", "no partitions", class_="empty")


def classic_members(group: Group, links: Links) -> Safe:
    rows = [[m.member_id, m.group_instance_id or "", m.client_id,
             m.client_host, _assignment_cell(m.assignment, group.protocol_type, links),
             pill("leader", "info") if m.member_id == group.leader else ""]
            for m in group.members.values()]
    return table(["member id", "instance id", "client id", "client host", "assignment", ""], rows,
                 empty="no members")


def _consumer_summary(cluster: MockCluster, group: Group, cg: ConsumerGroupState) -> Safe:
    return _summary([("type", "consumer (KIP-848)"), ("state", cg.state_name()), ("group epoch", cg.group_epoch),
                     ("assignment epoch", cg.assignment_epoch), ("assignor", cg.assignor),
                     ("members", len(cg.members)), ("total lag", total_lag(cluster, group))])


def consumer_members(cg: ConsumerGroupState, links: Links) -> Safe:
    rows = []
    for m in cg.members.values():
        subscribed = ", ".join(sorted(m.subscribed)) + (f" /{m.regex}/" if m.regex else "")
        target = cg.target.get(m.member_id, {})
        rows.append([m.member_id, m.instance_id or "", m.client_id, m.client_host, m.rack_id or "", m.epoch,
                     subscribed, parts_text(m.assigned, links), parts_text(m.revoking, links),
                     parts_text(target, links)])
    return table(["member id", "instance id", "client id", "client host", "rack", "epoch", "subscribed",
                  "assigned", "revoking", "target"], rows, empty="no members")


def offsets_table(cluster: MockCluster, group: Group, links: Links) -> Safe:
    rows = []
    for (topic, partition), (offset, epoch, metadata) in sorted(group.offsets.items()):
        hw = high_watermark(cluster, topic, partition)
        behind = lag(cluster, topic, partition, offset)
        rows.append([links.to(links.topic(topic), topic), partition, offset, "-" if hw is None else hw,
                     "-" if behind is None else behind, "" if epoch < 0 else epoch, metadata or ""])
    return table(["topic", "partition", "committed", "log end (high watermark)", "lag", "leader epoch", "metadata"],
                 rows, empty="no committed offsets")


def _transactional_id(cluster: MockCluster, producer_id: int) -> str | None:
    state = cluster.state
    if "transactions" not in state.__dict__:
        return None
    txn = state.transactions.by_producer_id.get(producer_id)
    return txn.transactional_id if txn is not None else None


def pending_table(cluster: MockCluster, group: Group, links: Links) -> Safe:
    rows = []
    for producer_id, offsets in sorted(group.pending_txn.items()):
        txn_id = _transactional_id(cluster, producer_id)
        who = (links.to(links.transactions(), txn_id) + Safe(f" (producer {producer_id})")) if txn_id is not None \
            else esc(f"producer {producer_id}")
        for (topic, partition), (offset, _epoch, metadata) in sorted(offsets.items()):
            rows.append([who, links.to(links.topic(topic), topic), partition, offset, metadata or ""])
    return table(["transaction", "topic", "partition", "offset", "metadata"], rows,
                 empty="no offsets pending in open transactions")


def group_body(cluster: MockCluster, group: Group, links: Links, heading: Heading = section) -> Safe:
    """One classic or consumer group: summary, members, committed offsets with lag, pending offsets."""
    if group.consumer is not None:
        top = _consumer_summary(cluster, group, group.consumer) + heading(
            "Members", consumer_members(group.consumer, links))
    else:
        top = _classic_summary(cluster, group) + heading("Members", classic_members(group, links))
    return (top + heading("Committed offsets", tag("p", LAG_HINT, class_="hint") + offsets_table(cluster, group, links))
            + heading("Offsets in open transactions", pending_table(cluster, group, links)))


def group_view(cluster: MockCluster, links: Links, group_id: str, query: Query) -> View:
    if share_groups.find(cluster, group_id) is not None:
        return View(f"Share group {group_id}", share_groups.group_body(cluster, group_id, links))
    group = find_group(cluster, group_id)
    if group is None:
        raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"no group '{group_id}'")
    return View(f"Group {group_id}", group_body(cluster, group, links))


# -- the report -----------------------------------------------------------------------------------------
def _sub(title: object, body: object) -> Safe:
    return tag("h4", title) + esc(body)


def groups_section(cluster: MockCluster, links: Links) -> Safe:
    """Every group with its members, assignments, committed offsets and lag (the report's section)."""
    parts = [groups_table(cluster, links)]
    ids = sorted([(g.group_id, g) for g in classic_groups(cluster)] +
                 [(sg.group_id, None) for sg in share_groups.listed(cluster)], key=lambda item: item[0])
    for group_id, group in ids:
        anchor = "group-" + quote(group_id, safe="")
        body = share_groups.group_body(cluster, group_id, links, _sub) if group is None \
            else group_body(cluster, group, links, _sub)
        parts.append(tag("div", tag("h3", group_id) + body, id=anchor, class_="group"))
    return join(parts)
