"""The cluster's ticker: once a second while nothing runs on the clock, every 100 ms while something
does (group members, a transaction under way) and for the tick after any request the Python dispatch
answers that may start something (reads -- dispatch.CLOCK_FREE -- leave an idle ticker alone).  Read
on the loop thread from MockCluster's own timer handle."""

from __future__ import annotations

import time

from mockbroker.cluster import IDLE_TICK_SECONDS, TICK_SECONDS, MockCluster
from mockbroker.protocol import api

from .wire import WireClient

AV, JG, MD, HB = (api.request_module(k) for k in (18, 11, 3, 12))
SHORT = TICK_SECONDS + 0.01  # the loop's clock is read in steps: a little slack over the short interval


def _next_tick_in(c: MockCluster) -> float:
    """Seconds until the ticker's next tick, read on the loop thread."""
    def read() -> float:
        assert c._ticker is not None and c._loop is not None
        return c._ticker.when() - c._loop.time()
    return c.call(read)


def _wait_for_idle_tick(c: MockCluster) -> None:
    deadline = time.monotonic() + 5
    while _next_tick_in(c) <= SHORT and time.monotonic() < deadline:
        time.sleep(0.05)


def _ticker_handle(c: MockCluster) -> object:
    return c.call(lambda: c._ticker)


def test_an_idle_cluster_ticks_once_a_second_and_a_request_brings_the_next_tick_near(single: MockCluster) -> None:
    _wait_for_idle_tick(single)
    assert SHORT < _next_tick_in(single) <= IDLE_TICK_SECONDS + 0.01
    assert single.state.ticker_idle
    deadline = time.monotonic() + 5
    while _next_tick_in(single) < 0.7 and time.monotonic() < deadline:  # an idle tick just scheduled:
        time.sleep(0.02)  # what follows happens well before it is due
    idle = _ticker_handle(single)
    with WireClient(single.brokers[0].port) as c:
        c.call(18, 3, AV.ApiVersionsRequest(client_software_name="wire", client_software_version="1"))
        c.call(3, 12, MD.MetadataRequest(topics=None))
        assert _ticker_handle(single) is idle and single.state.ticker_idle  # reads start nothing on the clock
        beat = c.call(12, 0, HB.HeartbeatRequest(group_id="nobody", generation_id=1, member_id="m"))
        assert beat.error_code != 0  # no such group: answered, but a group request may start timers ...
    assert _ticker_handle(single) is not idle  # ... so it woke the ticker (or the tick it brought near ran)
    _wait_for_idle_tick(single)  # with nothing on the clock the tick after that is a second away again
    assert single.state.ticker_idle


def test_a_group_with_a_member_keeps_the_ticker_at_its_short_interval(single: MockCluster) -> None:
    with WireClient(single.brokers[0].port) as c:
        join = c.call(11, 3, JG.JoinGroupRequest(
            group_id="ticking", session_timeout_ms=6000, rebalance_timeout_ms=6000, member_id="",
            protocol_type="consumer", protocols=[JG.JoinGroupRequestProtocol(name="range", metadata=b"")]))
        assert join.error_code == 0
        time.sleep(3 * TICK_SECONDS)
        for _ in range(5):  # the member's session runs on the clock: every tick schedules the short one
            assert _next_tick_in(single) <= SHORT and not single.state.ticker_idle
            time.sleep(TICK_SECONDS)
