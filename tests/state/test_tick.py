"""ClusterState.tick's producer expiry: every partition is walked at most once a second (or as often as
``producer.id.expiration.ms`` when that is shorter, and every 1 % of expirations over 100 s), so a
producer goes at most a second, or 1 % of its expiration, late."""

from __future__ import annotations

from mockbroker.state.clock import ManualClock
from mockbroker.state.cluster import ClusterState


def _cluster(expiration_ms: int) -> tuple[ClusterState, ManualClock]:
    clock = ManualClock()
    state = ClusterState({"producer.id.expiration.ms": expiration_ms}, clock)
    state.add_broker(0, "127.0.0.1", 9092)
    state.create_topic("t", 2)
    return state, clock


def _append(state: ClusterState, clock: ManualClock, pid: int) -> None:
    now = clock.now_ms()
    state.partition("t", 1).producers.record_append(pid, 0, 0, 0, 0, 0, now, now, False)


def test_a_producer_expires_at_most_a_second_after_its_expiration() -> None:
    state, clock = _cluster(5000)
    entries = state.partition("t", 1).producers.entries
    _append(state, clock, 7)
    state.tick()  # looks now, and not again for a second
    clock.advance(4999)
    state.tick()
    assert 7 in entries  # 4,999 ms idle
    clock.advance(1)
    state.tick()
    assert 7 in entries  # expired, but the last look was 1 ms ago
    clock.advance(999)
    state.tick()
    assert 7 not in entries


def test_a_short_expiration_is_looked_at_every_tick() -> None:
    state, clock = _cluster(50)
    entries = state.partition("t", 1).producers.entries
    state.tick()
    _append(state, clock, 8)
    clock.advance(50)
    state.tick()
    assert 8 not in entries


def test_a_long_expiration_is_looked_at_every_hundredth_of_it() -> None:
    state, clock = _cluster(200_000)  # looked at every 2 s, not every second
    entries = state.partition("t", 1).producers.entries
    _append(state, clock, 9)
    state.tick()
    clock.advance(199_000)
    state.tick()
    assert 9 in entries  # 199 s idle
    clock.advance(1_000)
    state.tick()
    assert 9 in entries  # expired, but the last look was 1 s ago: up to 2 s (1 %) late
    clock.advance(1_000)
    state.tick()
    assert 9 not in entries
