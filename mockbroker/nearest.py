"""Did-you-mean: the known name nearest to a wrong one, for every refusal that names what was wrong (config
names, API names, error codes, fault and scenario fields, shipped scenarios).  A base module: it imports
nothing from the package, so every layer may use it; ``difflib`` loads only when a name is wrong."""

from __future__ import annotations

from collections.abc import Iterable

CUTOFF = 0.6  # difflib's similarity ratio; below it a suggestion misleads more than it helps


def did_you_mean(word: str, known: Iterable[str], cutoff: float = CUTOFF, prefix: bool = False) -> str | None:
    """The known name closest to ``word`` (a typo, or another case), else None.

    Case is ignored when comparing; the known name is returned as spelt.  With ``prefix``, when nothing
    is close by difflib's ratio, the shortest known name that starts with ``word`` is suggested
    (``NOT_LEADER`` for ``NOT_LEADER_OR_FOLLOWER``)."""
    import difflib

    spelt: dict[str, str] = {}
    for name in sorted(known):
        spelt.setdefault(name.casefold(), name)
    key = word.casefold()
    if key in spelt:
        return spelt[key]
    near = difflib.get_close_matches(key, list(spelt), 1, cutoff)
    if near:
        return spelt[near[0]]
    starts = [name for folded, name in spelt.items() if prefix and key and folded.startswith(key)]
    return min(starts, key=len) if starts else None


def hint(word: str, known: Iterable[str], cutoff: float = CUTOFF, prefix: bool = False) -> str:
    """`` (did you mean 'x'?)`` when a known name is close to ``word``, else ''."""
    found = did_you_mean(word, known, cutoff, prefix)
    return f" (did you mean {found!r}?)" if found is not None else ""
