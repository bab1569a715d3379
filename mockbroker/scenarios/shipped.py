"""The shipped scenarios and how a reference to a scenario is resolved: an existing file path wins, else a
shipped name (with or without ``.yaml``); anything else is an error naming the nearest shipped scenarios.

The shipped scenarios live in the repository's top-level ``scenarios/`` folder (beside ``mockbroker/``);
the wheel packages that folder as ``mockbroker/scenarios/library/`` (setup.py's ``build_py``).
:data:`LIBRARY` is the packaged folder where it holds scenarios (an installed wheel or sdist), else the
repository's own (a source checkout or an editable install, where a ``library/`` left behind by an older
checkout may hold only bytecode): one folder, never both."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import yaml

PACKAGED = Path(__file__).with_name("library")  # where a wheel puts the top-level scenarios/ folder
LIBRARY = PACKAGED if any(PACKAGED.glob("*.yaml")) else Path(__file__).resolve().parents[2] / "scenarios"


class UnknownScenario(LookupError):
    """Neither an existing file nor a shipped scenario's name; the message names the nearest ones."""


def names() -> list[str]:
    """The shipped scenarios' names, sorted."""
    return sorted(p.stem for p in LIBRARY.glob("*.yaml"))


def path_of(name: str) -> Path:
    """The file of the shipped scenario ``name`` (raises :class:`UnknownScenario`)."""
    return resolve(name, files=False)


def resolve(ref: str | Path, *, files: bool = True) -> Path:
    """The file a scenario reference means: ``ref`` itself when it is an existing file (and ``files``),
    else the shipped scenario of that name (``throttling`` or ``throttling.yaml``)."""
    path = Path(ref)
    if files and path.is_file():
        return path
    text = str(ref)
    stem = text[:-5] if text.endswith(".yaml") else text[:-4] if text.endswith(".yml") else text
    if "/" not in stem and "\\" not in stem and (LIBRARY / f"{stem}.yaml").is_file():
        return LIBRARY / f"{stem}.yaml"
    raise UnknownScenario(unknown_message(text))


def unknown_message(ref: str) -> str:
    """One line: no such file or shipped name, with the nearest shipped names."""
    shipped = names()
    stem = Path(ref).name.removesuffix(".yaml").removesuffix(".yml")
    looks_like_path = "/" in ref or "\\" in ref or ref.endswith((".yaml", ".yml"))
    what = "no such file" if looks_like_path else "no shipped scenario of that name"
    if looks_like_path and stem in shipped:
        return f"{ref}: {what}; the shipped scenario {stem!r} runs by name: {stem}"
    near = difflib.get_close_matches(stem, shipped, n=3, cutoff=0.4)
    if not near:  # words in common ("leader", "fetch") still point somewhere
        words = set(re.split(r"[-_.]", stem.lower())) - {""}
        near = [n for n in shipped if words & set(n.split("-"))][:3]
    hint = f"; nearest shipped: {', '.join(near)}" if near else ""
    return f"{ref}: {what}{hint} (mockbroker scenario list shows them all)"


def summary(path: Path) -> str:
    """The first sentence of a scenario's description, on one line ('' when it has none)."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return ""
    text = " ".join(str((data or {}).get("description", "")).split()) if isinstance(data, dict) else ""
    sentence = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    return sentence.removesuffix(".")
