"""Pending: an answer to come that its maker settles on the event loop's thread, with its callbacks
run at once.

A long-polling Fetch (handlers/k01_fetch._LongPoll) answers when an append brings its bytes.  With
asyncio Futures each callback runs one loop pass after the one before (call_soon): the answer passed
through the handler's Future, dispatch's and the connection's before it was written.  A Pending runs
them in the call that settles it: dispatch's steps (journal, encode: :meth:`then`) turn the answer
body into its frame, then the done callbacks run (the long poll's clean-up, the connection's write
and its next queued request, the broker's task set).

It looks like a finished Future to its callbacks (``cancelled()``, ``exception()``, ``result()``), so
the connection and the broker handle it as they handle a Task.  Whatever awaits it instead (fault
rules, client quotas) gets an asyncio Future through ``__await__``; cancelling that Future cancels it.
Used only from the event loop's thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Generator, Sequence
from typing import Any

log = logging.getLogger("mockbroker.server")

WAITING, SETTLED, CANCELLED = 0, 1, 2


class Pending:
    __slots__ = ("_callbacks", "_exception", "_future", "_result", "_steps", "state")

    def __init__(self) -> None:
        self.state = WAITING
        self._steps: list[Callable[[Any], Any]] = []
        self._callbacks: list[Callable[[Pending], None]] = []
        self._result: Any = None
        self._exception: BaseException | None = None
        self._future: asyncio.Future[Any] | None = None

    # -- what a Future offers its callbacks ---------------------------------------------------
    def done(self) -> bool:
        return self.state != WAITING

    def cancelled(self) -> bool:
        return self.state == CANCELLED

    def exception(self) -> BaseException | None:
        return self._exception

    def result(self) -> Any:
        if self._exception is not None:
            raise self._exception
        return self._result

    def add_done_callback(self, callback: Callable[[Pending], None]) -> None:
        """``callback(self)`` once settled or cancelled (at once if it is already)."""
        if self.state == WAITING:
            self._callbacks.append(callback)
        else:
            self._run_callbacks((callback,))

    # -- its maker's and dispatch's side -------------------------------------------------------
    def then(self, step: Callable[[Any], Any]) -> Pending:
        """Pass the settled value through ``step`` before the done callbacks see it (an exception it
        raises becomes the result)."""
        self._steps.append(step)
        return self

    def settle(self, value: Any) -> None:
        if self.state != WAITING:
            return
        try:
            for step in self._steps:
                value = step(value)
        except Exception as exc:
            self._exception = exc
        else:
            self._result = value
        self.state = SETTLED
        self._run_callbacks()

    def cancel(self) -> bool:
        if self.state != WAITING:
            return False
        self.state = CANCELLED
        self._exception = asyncio.CancelledError()
        self._run_callbacks()
        return True

    def _run_callbacks(self, callbacks: Sequence[Callable[[Pending], None]] | None = None) -> None:
        """Call each of ``callbacks`` (by default the waiting ones, taken off), as the event loop treats
        a failing callback: said, and the others still run."""
        if callbacks is None:
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback(self)
            except Exception:
                log.exception("a callback of a pending answer failed")

    # -- for code that awaits it -----------------------------------------------------------------
    def future(self) -> asyncio.Future[Any]:
        """An asyncio Future that finishes as this does; cancelling it cancels this."""
        if self._future is None:
            future = self._future = asyncio.get_running_loop().create_future()
            self.add_done_callback(lambda done: _copy(done, future))
            future.add_done_callback(lambda f: self.cancel() if f.cancelled() else None)
        return self._future

    def __await__(self) -> Generator[Any, None, Any]:
        return self.future().__await__()


def _copy(source: Pending, target: asyncio.Future[Any]) -> None:
    if target.done():
        return
    if source.cancelled():
        target.cancel()
    elif (exc := source.exception()) is not None:
        target.set_exception(exc)
    else:
        target.set_result(source.result())
