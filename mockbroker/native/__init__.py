"""The optional C extensions, all in one place (see ARCHITECTURE.md, "Native code").

``codecs/`` holds pure functions over bytes; ``lanes/`` holds the only C that touches broker objects.  The
built modules (``_speedups``, ``_fastproduce``, ``_fastfetch``, ``_producelane``, ``_reading``) are imported by
the Python modules they stand in for, never directly by handlers, and always through :func:`load`; the Python
path is the reference semantics and runs alone with ``MOCKBROKER_PURE_PYTHON=1``, where no C compiler was found
at install time, or (for the lanes) on a Python the lanes were not tested on.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType

__all__ = ["LANES", "TESTED_PYTHONS", "lanes_tested_here", "load", "pure_python_forced"]

#: The extensions that read and write CPython type internals (object slots, type layouts): loaded only on a
#: CPython whose version CI runs them on (noxfile.py's sessions and pyproject.toml's classifiers say the same).
LANES = frozenset({"_producelane", "_fastfetch", "_reading"})
TESTED_PYTHONS = frozenset({(3, 11), (3, 12), (3, 13)})


def pure_python_forced() -> bool:
    """True when ``MOCKBROKER_PURE_PYTHON`` is set to anything but empty or ``0``."""
    return os.environ.get("MOCKBROKER_PURE_PYTHON", "") not in ("", "0")


def lanes_tested_here() -> bool:
    """True on a CPython whose minor version is in TESTED_PYTHONS: the only place the lanes may load."""
    return sys.implementation.name == "cpython" and tuple(sys.version_info[:2]) in TESTED_PYTHONS


def load(name: str) -> ModuleType | None:
    """The built extension ``mockbroker.native.<name>``, or None where the Python path must run alone:
    ``MOCKBROKER_PURE_PYTHON`` set, a lane (see LANES) on an untested Python, or the module not built."""
    if pure_python_forced() or (name in LANES and not lanes_tested_here()):
        return None
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ImportError:  # not built (no C compiler at install time): the Python path does everything
        return None
