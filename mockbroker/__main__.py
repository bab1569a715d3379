"""``python -m mockbroker`` and the ``mockbroker`` command: the command line (see ``mockbroker.cli``).

SIGINT and SIGTERM are caught from the first line on (``mockbroker.early_signals``), so a Ctrl-C while
the modules still load stops ``serve`` instead of being lost.

The cycle collector is off while the command line's modules load: start-up makes only objects that
live as long as the process (modules, classes, the generated codec), so its passes over them find
nothing and cost about 5 % of the broker's start.  ``cli.main`` turns it back on: ``serve`` once
the cluster listens (``server.collector.install``), every other command at once.
"""

import _signal  # type: ignore[import-not-found]  # loaded by the interpreter already: costs nothing


def _exit_at_once(_signum: int, _frame: object) -> None:
    raise SystemExit(0)


if __name__ == "__main__":  # python -m mockbroker (not a test importing run): caught before any other line,
    # so no import (not even early_signals') leaves a window for Python's own handler and its
    # KeyboardInterrupt traceback; early_signals.install() takes over in run()
    _signal.signal(_signal.SIGINT, _exit_at_once)
    _signal.signal(_signal.SIGTERM, _exit_at_once)

import gc  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

from mockbroker import early_signals  # noqa: E402


def run() -> int:
    early_signals.install()
    gc.disable()
    from mockbroker.cli import main

    try:
        return main()
    except BrokenPipeError:  # the reader went away (``mockbroker scenario list | head``): no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the flush at exit does not fail again
        return 1


if __name__ == "__main__":
    sys.exit(run())
