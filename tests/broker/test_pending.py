"""Pending, the answer a long-polling Fetch settles: steps then callbacks in the settling call,
cancellation, failing steps and callbacks, and awaiting it as a Future."""

from __future__ import annotations

import asyncio
import logging

import pytest

from mockbroker.handlers.pending import Pending


def test_settling_runs_the_steps_then_the_callbacks_in_the_same_call() -> None:
    pending = Pending()
    seen: list[object] = []
    pending.add_done_callback(lambda p: seen.append(("first", p.result())))
    pending.then(lambda body: body + 1).then(lambda body: [body * 10])
    pending.add_done_callback(lambda p: seen.append(("second", p.result())))
    assert not pending.done() and seen == []
    pending.settle(1)
    assert seen == [("first", [20]), ("second", [20])]
    assert pending.done() and not pending.cancelled() and pending.exception() is None
    pending.settle(2)  # settled once only
    assert pending.result() == [20] and len(seen) == 2
    late: list[object] = []
    pending.add_done_callback(lambda p: late.append(p.result()))  # after the fact: called at once
    assert late == [[20]]


def test_a_failing_step_becomes_the_result_and_a_failing_callback_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    pending = Pending()
    pending.then(lambda body: 1 / body)
    seen: list[object] = []

    def broken(_p: Pending) -> None:
        raise RuntimeError("callback bug")

    pending.add_done_callback(broken)
    pending.add_done_callback(lambda p: seen.append(type(p.exception())))
    with caplog.at_level(logging.ERROR, logger="mockbroker.server"):
        pending.settle(0)
    assert seen == [ZeroDivisionError]
    with pytest.raises(ZeroDivisionError):
        pending.result()
    assert "a callback of a pending answer failed" in caplog.text and "callback bug" in caplog.text


def test_cancelling_runs_the_callbacks_once_and_ignores_a_later_settle() -> None:
    pending = Pending()
    seen: list[bool] = []
    pending.add_done_callback(lambda p: seen.append(p.cancelled()))
    assert pending.cancel() is True
    assert pending.cancel() is False
    pending.settle("late")
    assert seen == [True] and pending.cancelled() and pending.done()


def test_awaiting_it_gets_the_settled_value_and_cancelling_the_waiter_cancels_it() -> None:
    async def scenario() -> tuple[object, bool]:
        loop = asyncio.get_running_loop()
        answered = Pending().then(lambda body: body.upper())
        loop.call_later(0.01, answered.settle, "answer")
        value = await answered
        abandoned = Pending()
        waiter = asyncio.ensure_future(_wait(abandoned))
        await asyncio.sleep(0.01)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        return value, abandoned.cancelled()

    async def _wait(pending: Pending) -> object:
        return await pending

    assert asyncio.run(scenario()) == ("ANSWER", True)
