"""Server-side partition assignors for KIP-848 consumer groups: ``uniform`` (Kafka's default) and
``range``.

Both are pure functions from (members' subscriptions, partitions per topic, current assignment) to
the target assignment.  ``uniform`` spreads every subscribed partition as evenly as the
subscriptions allow and keeps partitions where they are when that stays balanced (sticky);
``range`` gives each member a contiguous range of each topic it subscribes to, members in id order.
Assignments are ``{member_id: {topic: set(partitions)}}``.
"""

from __future__ import annotations

from collections.abc import Mapping

Assignment = dict[str, dict[str, set[int]]]


def _empty(members: Mapping[str, set[str]]) -> Assignment:
    return {m: {} for m in members}


def range_assign(members: Mapping[str, set[str]], partitions: Mapping[str, int],
                 current: Mapping[str, Mapping[str, set[int]]] | None = None) -> Assignment:
    """Per topic, members subscribed to it (sorted by id) take consecutive ranges, the first ones one
    partition more when the count does not divide evenly."""
    out = _empty(members)
    for topic in sorted(partitions):
        subscribers = sorted(m for m, topics in members.items() if topic in topics)
        if not subscribers:
            continue
        count = partitions[topic]
        share, extra = divmod(count, len(subscribers))
        start = 0
        for i, member in enumerate(subscribers):
            n = share + (1 if i < extra else 0)
            if n:
                out[member][topic] = set(range(start, start + n))
            start += n
    return out


def uniform_assign(members: Mapping[str, set[str]], partitions: Mapping[str, int],
                   current: Mapping[str, Mapping[str, set[int]]] | None = None) -> Assignment:
    """Every subscribed partition to one subscriber, counts as even as the subscriptions allow;
    a partition stays with its current owner while that owner is below its fair share."""
    out = _empty(members)
    counts = dict.fromkeys(members, 0)
    wanted = [(t, p) for t in sorted(partitions) for p in range(partitions[t])
              if any(t in topics for topics in members.values())]
    subscribers = {t: sorted(m for m, topics in members.items() if t in topics) for t in partitions}
    total = len(wanted)
    fair = -(-total // len(members)) if members else 0  # ceiling: nobody needs more than this
    owner_of = {}
    for member, topics in (current or {}).items():
        for topic, parts in topics.items():
            for p in parts:
                owner_of[(topic, p)] = member
    unplaced = []
    for tp in wanted:
        owner = owner_of.get(tp)
        if owner is not None and owner in members and tp[0] in members[owner] and counts[owner] < fair:
            out[owner].setdefault(tp[0], set()).add(tp[1])
            counts[owner] += 1
        else:
            unplaced.append(tp)
    for topic, p in unplaced:
        member = min(subscribers[topic], key=lambda m: (counts[m], m))
        out[member].setdefault(topic, set()).add(p)
        counts[member] += 1
    _rebalance(out, counts, members)
    return out


def _rebalance(out: Assignment, counts: dict[str, int], members: Mapping[str, set[str]]) -> None:
    """Move partitions from the fullest to the emptiest member that can take them until counts
    differ by at most one (or no move is possible)."""
    while True:
        moved = False
        for rich in sorted(counts, key=lambda m: (-counts[m], m)):
            for poor in sorted(counts, key=lambda m: (counts[m], m)):
                if counts[rich] - counts[poor] <= 1:
                    continue
                for topic in sorted(out[rich]):
                    if topic in members[poor] and out[rich][topic]:
                        p = max(out[rich][topic])
                        out[rich][topic].discard(p)
                        if not out[rich][topic]:
                            del out[rich][topic]
                        out[poor].setdefault(topic, set()).add(p)
                        counts[rich] -= 1
                        counts[poor] += 1
                        moved = True
                        break
                if moved:
                    break
            if moved:
                break
        if not moved:
            return


ASSIGNORS = {"uniform": uniform_assign, "range": range_assign}
DEFAULT_ASSIGNOR = "uniform"
