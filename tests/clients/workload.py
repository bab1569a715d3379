"""The records every real-client test produces and checks: keys, values, headers, timestamps."""

from __future__ import annotations

from dataclasses import dataclass

PARTITIONS = 4
BASE_TS = 1_760_000_000_000  # a fixed CreateTime, within the broker's accepted range of "now"


@dataclass(frozen=True)
class Rec:
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int


def workload(count: int, with_headers: bool = True, seed: int = 0) -> list[Rec]:
    out = []
    for i in range(count):
        key = None if i % 97 == 0 else f"key-{seed}-{i}".encode()
        value = None if i % 211 == 5 else (f"value-{i}-".encode() * (1 + i % 7))
        headers = (("h1", f"{i}".encode()), ("empty", b"")) if with_headers and i % 3 else ()
        out.append(Rec(i % PARTITIONS, key, value, headers, BASE_TS + i))
    return out


def by_partition(recs: list[Rec]) -> dict[int, list[Rec]]:
    out: dict[int, list[Rec]] = {}
    for r in recs:
        out.setdefault(r.partition, []).append(r)
    return out


def check_consumed(expected: list[Rec], got: dict[int, list[tuple[int, Rec]]], headers: bool = True,
                   timestamps: bool = True) -> None:
    """``got``: partition -> [(offset, record)] in consumption order."""
    want = by_partition(expected)
    assert sorted(got) == sorted(want), f"partitions {sorted(got)} != {sorted(want)}"
    for p, recs in want.items():
        seen = got[p]
        assert [o for o, _ in seen] == list(range(len(recs))), f"partition {p}: offsets are not 0..{len(recs) - 1}"
        for (_, g), w in zip(seen, recs, strict=True):
            assert g.key == w.key and g.value == w.value, f"partition {p}: {g} != {w}"
            if headers:
                assert g.headers == w.headers, f"partition {p}: headers {g.headers} != {w.headers}"
            if timestamps:
                assert g.timestamp == w.timestamp, f"partition {p}: timestamp {g.timestamp} != {w.timestamp}"
