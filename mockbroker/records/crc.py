"""CRC-32C for record batches: mockbroker's folding C function on CPUs with AVX-512 and VPCLMULQDQ
(``native/codecs/crc32c_fold.h``), elsewhere the crc32c package's C function (hardware where the CPU has it).

The package's ``__init__`` imports :mod:`importlib.metadata` to read its own version, ~15 ms of CPU
that a broker paid at its first Produce (the first produce waited for it, and every benchmark load
on a fresh broker counted it).  :func:`load_crc32c` loads the package's extension module directly;
should the package's layout change, importing the package is the fallback.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable
from typing import Any

from mockbroker import native

EXTENSION = "crc32c._crc32c"


def _load_extension() -> Any:
    spec = importlib.util.find_spec("crc32c")  # locates the package without running its __init__
    folders = spec.submodule_search_locations if spec is not None else None
    for folder in folders or ():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_crc32c" + suffix)
            if os.path.exists(path):
                loader = importlib.machinery.ExtensionFileLoader(EXTENSION, path)
                # a spec from a loader is never None
                module = importlib.util.module_from_spec(importlib.util.spec_from_loader(EXTENSION, loader))  # type: ignore[arg-type]
                loader.exec_module(module)
                sys.modules[EXTENSION] = module  # a later `import crc32c` reuses it
                return module
    return None


def _folding_crc32c() -> Callable[[Any], int] | None:
    """mockbroker's own ``_speedups.crc32c`` where this CPU folds long buffers by carry-less
    multiplication (AVX-512 and VPCLMULQDQ: about twice the package's speed on long batches), else None."""
    _speedups = native.load("_speedups")  # None: built without a C compiler, or MOCKBROKER_PURE_PYTHON set
    if _speedups is None:
        return None
    folds = getattr(_speedups, "crc32c_folds", None)
    return _speedups.crc32c if folds is not None and folds() else None


def load_crc32c() -> Callable[[Any], int]:
    """The fastest ``crc32c(data) -> int`` here: mockbroker's folding one where the CPU runs it, else
    the crc32c package's, loaded the cheap way when possible."""
    folding = _folding_crc32c()
    if folding is not None:
        return folding
    module = sys.modules.get(EXTENSION) or sys.modules.get("crc32c")
    if module is None:
        try:
            module = _load_extension()
        except (ImportError, OSError, ValueError):
            module = None
    if module is None or not hasattr(module, "crc32c"):
        import crc32c as module
    return module.crc32c  # type: ignore[union-attr, no-any-return]  # the import above binds module where it was None
