"""SIGINT and SIGTERM that arrive while the command line is still starting.

``mockbroker`` calls :func:`install` before it imports anything else.  Until the event loop starts,
a signal ends the process at once with exit status 0, as a later Ctrl-C does (SystemExit: no
KeyboardInterrupt traceback from the middle of an import; nothing listens yet).  Just before the
loop starts, :func:`defer` makes a signal only a note in :data:`received`, which ``serve`` reads once
its loop's own handlers are in place: so Ctrl-C at any moment from process start stops the broker.
Other commands put Python's default handlers back (:func:`restore`) and exit as the signal asked if
one came already.

It imports only ``_signal``, the C module the interpreter loaded before any line of mockbroker ran: the
``signal`` module would load ``enum`` first, a window of milliseconds (more on a loaded machine) in which a
Ctrl-C still met Python's default handler and printed a KeyboardInterrupt traceback.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # (no stub: its names and types are the signal module's)

TYPE_CHECKING = False  # typing costs ~7 ms to import; mypy reads this name as typing's
if TYPE_CHECKING:
    import asyncio
    from types import FrameType

SIGNALS = (_signal.SIGINT, _signal.SIGTERM)
received: list[int] = []  # the signals seen since install(), in order
_installed: list[bool] = []
_exit_at_once: list[bool] = []


def _remember(signum: int, _frame: FrameType | None) -> None:
    received.append(signum)
    if _exit_at_once:
        raise SystemExit(0)


def install() -> None:
    """From now on SIGINT and SIGTERM are noted in :data:`received` and end the process (status 0)."""
    for sig in SIGNALS:
        _signal.signal(sig, _remember)
    _installed.append(True)
    _exit_at_once.append(True)


def defer() -> None:
    """From now on a signal is only noted (the event loop is about to start: it must not be interrupted)."""
    _exit_at_once.clear()


def restore() -> None:
    """Python's default handlers again; a signal already received ends the process as it would have
    (exit status 128 + the signal's number, no traceback).  Nothing when install() was not called."""
    if not _installed:
        return
    _installed.clear()
    _exit_at_once.clear()
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
    if received:
        raise SystemExit(128 + received[0])


def ignore() -> None:
    """Ignore both signals (the broker has stopped and the process is exiting)."""
    for sig in SIGNALS:
        _signal.signal(sig, _signal.SIG_IGN)


def stop_event() -> asyncio.Event:
    """An event set by SIGINT or SIGTERM on the running event loop, already set when one of them came while the
    command started (:data:`received`): what a long-running command waits on."""
    import asyncio  # (the caller's loop runs: asyncio is loaded already)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    if received:
        stop.set()
    return stop

