"""Fails unless every C extension was built and loads on this Python (CI must exercise them: the C-vs-Python
comparison tests skip without them).  Run by .ci/run for `make test`'s venv and by noxfile.py's core sessions."""

from __future__ import annotations

import sys

from mockbroker import native

EXTENSIONS = ("_speedups", "_fastproduce", "_fastfetch", "_producelane", "_reading")


def main() -> None:
    where = f"Python {sys.version.split()[0]}"
    if native.pure_python_forced():
        sys.exit(f"MOCKBROKER_PURE_PYTHON is set: the C extensions cannot be checked on {where}")
    missing = [name for name in EXTENSIONS if native.load(name) is None]
    if missing:
        sys.exit(f"the C extensions {', '.join(missing)} were not built or do not load on {where} "
                 "(no C compiler or Python headers? a Python the lanes are not tested on?)")
    print(f"C extensions built and loaded on {where}")


if __name__ == "__main__":
    main()
