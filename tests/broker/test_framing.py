"""Framing in the server's Connection: frames arrive whole however the bytes are split into reads.

Pure unit test of the protocol object: bytes go in through get_buffer/buffer_updated exactly as the
event loop feeds them; a recording dispatch collects the frames.  Small frames come out of the shared
staging buffer, large ones out of their own buffers.  Every test runs on both readers: Connection (the
C Reader of mockbroker/native/lanes/_reading.c where it is built) and PureConnection (its Python twin), and
scripted sessions -- reads of any size, a lane borrow() that takes, refuses or fails frames from the
staging buffer and large frames whole, answers that wait, a queue that fills up, a bad frame size
behind queued frames -- must go the same on both.
"""

from __future__ import annotations

import asyncio
import os
import random
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockbroker.server import connection as connection_module
from mockbroker.server.connection import LARGE_FRAME, MAX_QUEUED_FRAMES, STAGING_BYTES, Connection, PureConnection

READERS = [Connection, PureConnection]


class _Transport:
    def __init__(self, events: list[Any] | None = None) -> None:
        self.closed = False
        self.events = [] if events is None else events

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 1)

    def close(self) -> None:
        self.closed = True
        self.events.append("close")

    def pause_reading(self) -> None:
        self.events.append("pause")

    def resume_reading(self) -> None:
        self.events.append("resume")

    def writelines(self, buffers: list[Any]) -> None:
        self.events.append(("write", b"".join(buffers)))


def _feed(conn: Connection, data: bytes, cuts: list[int]) -> None:
    pos = 0
    for size in [*cuts, len(data)]:
        while pos < len(data) and size > 0:
            buf = conn.get_buffer(-1)
            n = min(size, len(buf), len(data) - pos)
            buf[:n] = data[pos : pos + n]
            conn.buffer_updated(n)
            pos += n
            size -= n


@pytest.mark.skipif(os.environ.get("MOCKBROKER_PURE_PYTHON", "") not in ("", "0"),
                    reason="MOCKBROKER_PURE_PYTHON is set: connections read through the Python twin")
def test_the_c_reader_is_built() -> None:
    """The C reader is what brokers use where the extension is built (.ci/run requires it to be)."""
    assert connection_module._Reader.__module__ == "mockbroker.native._reading"
    assert Connection.get_buffer is connection_module._Reader.get_buffer


@pytest.mark.skipif(connection_module._Reader is connection_module.PyReader,
                    reason="the C reader is not in use (MOCKBROKER_PURE_PYTHON set, or not built)")
def test_large_frames_are_read_into_the_c_readers_buffers() -> None:
    """Not zero-filled (the frame overwrites all of it before it is handled: the tests above check
    every byte), exactly the frame's size: an arena frame in huge pages up to ARENA_FRAME_MAX where
    transparent huge pages are on (tests/broker/test_frame_arena.py), else a plain bytearray."""
    from mockbroker.native import _reading

    assert connection_module._new_frame is _reading.frame_buffer
    for size in (LARGE_FRAME + 1, 200_000, connection_module.MMAP_FRAME - 1, _reading.ARENA_FRAME_MAX + 1):
        buf = connection_module._frame_buffer(size)
        assert type(buf) in (bytearray, _reading.ArenaFrame) and len(buf) == size
        assert type(buf) is bytearray or size <= _reading.ARENA_FRAME_MAX
        view = memoryview(buf)
        view[-1:] = b"x"  # writable to its last byte
        assert view[-1] == ord("x") and view.nbytes == size


def test_huge_pages_are_off_where_free_memory_goes_back_to_a_hypervisor(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    balloon = tmp_path / "virtio3"
    balloon.mkdir()
    (balloon / "features").write_text("0110010" + "0" * 57 + "\n")  # bit 5: free page reporting
    monkeypatch.delenv("MOCKBROKER_HUGE_PAGES", raising=False)
    assert connection_module._huge_pages_pay(str(tmp_path)) is False
    (balloon / "features").write_text("0110000" + "0" * 57 + "\n")
    assert connection_module._huge_pages_pay(str(tmp_path)) is True
    assert connection_module._huge_pages_pay(str(tmp_path / "absent")) is True
    monkeypatch.setenv("MOCKBROKER_HUGE_PAGES", "0")
    assert connection_module._huge_pages_pay(str(tmp_path / "absent")) is False
    monkeypatch.setenv("MOCKBROKER_HUGE_PAGES", "1")
    (balloon / "features").write_text("0110010" + "0" * 57 + "\n")
    assert connection_module._huge_pages_pay(str(tmp_path)) is True


def _connection(shared: memoryview, seen: list[bytes], limit: int = 10 * 2**20,
                cls: type = Connection) -> Connection:
    conn = cls(0, lambda c, frame: seen.append(bytes(frame)), limit, shared)
    conn.connection_made(_Transport())  # type: ignore[arg-type]
    return conn


frame_sizes = st.lists(st.sampled_from([0, 1, 7, 300, LARGE_FRAME, LARGE_FRAME + 1, 200_000, 600_000, 1_100_000]),
                       min_size=1, max_size=6)


@pytest.mark.parametrize("cls", READERS)
@settings(max_examples=60, deadline=None)
@given(frame_sizes, st.lists(st.integers(1, 300_000), max_size=20), st.randoms(use_true_random=False))
def test_frames_come_out_whole_for_any_split_of_the_bytes(cls: type, sizes: list[int], cuts: list[int],
                                                          rnd: Any) -> None:
    shared = memoryview(bytearray(STAGING_BYTES))
    frames = [bytes(rnd.getrandbits(8) for _ in range(min(n, 64))) * (n // 64 + 1) for n in sizes]
    frames = [f[:n] for f, n in zip(frames, sizes, strict=True)]
    seen: list[bytes] = []
    other_seen: list[bytes] = []
    conn = _connection(shared, seen, cls=cls)
    other = _connection(shared, other_seen, cls=cls)  # shares the staging buffer and reads in between
    data = b"".join(struct.pack(">i", len(f)) + f for f in frames)
    start = 0
    for size in cuts:  # conn's bytes in reads of these sizes, other's small frame read in between
        _feed(conn, data[start : start + size], [])
        _feed(other, struct.pack(">i", 3) + b"abc", [2])
        start += size
    _feed(conn, data[start:], [])
    assert seen == frames
    assert other_seen == [b"abc"] * len(cuts)


@pytest.mark.parametrize("cls", READERS)
def test_a_frame_over_the_limit_closes_before_anything_is_allocated(cls: type) -> None:
    seen: list[bytes] = []
    conn = _connection(memoryview(bytearray(STAGING_BYTES)), seen, limit=1000, cls=cls)
    _feed(conn, struct.pack(">i", 1001) + b"x" * 10, [])
    assert conn.closed and seen == [] and conn._frame is None


def _session(cls: type, seed: int) -> list[Any]:
    """One scripted session on a connection of ``cls``: everything it did, in order.  The script comes
    from ``seed`` alone, so the same seed must give the same list on both readers."""
    rnd = random.Random(seed)
    loop = asyncio.new_event_loop()
    events: list[Any] = []
    pending: list[asyncio.Future[Any]] = []

    def dispatch(conn: Any, frame: memoryview) -> Any:
        declined = conn.lane_declined is frame
        events.append(("dispatch", bytes(frame), declined))
        if rnd.random() < 0.3:  # an answer that waits (a long poll): the connection is busy until it comes
            future = loop.create_future()
            pending.append(future)
            return future
        return [b"answer:" + bytes(frame[:8])]

    def borrow(conn: Any, end: int, frame: memoryview | None = None) -> int:
        if frame is not None:  # a large frame, whole: 1 answered, 0 left to dispatch, -1 refused
            roll = rnd.random()
            answer = 1 if roll < 0.4 else 0 if roll < 0.7 else -1
            if roll > 0.95:
                events.append(("whole", bytes(frame[:8]), "fails"))
                raise RuntimeError("the lane failed")
            events.append(("whole", bytes(frame[:8]), answer))
            if answer == 1:
                conn.write([b"lane:whole"])
            return answer
        staging = bytes(conn._staging[:end])
        pos, frames = 0, 0
        while end - pos >= 4:  # whole frames the "lane" may take
            size = struct.unpack_from(">i", staging, pos)[0]
            if size < 0 or end - pos - 4 < size:
                break
            if rnd.random() < 0.4:
                break
            pos += 4 + size
            frames += 1
        roll = rnd.random()
        if roll < 0.05:
            events.append(("borrow", end, "fails"))
            raise RuntimeError("the lane failed")
        answer = ~pos if roll < 0.3 and pos < end else pos  # ~pos: the lane refused the frame there
        events.append(("borrow", end, answer))
        conn.write([b"lane:%d" % frames])
        return answer

    staging = memoryview(bytearray(STAGING_BYTES))
    conn = cls(0, dispatch, 2 * LARGE_FRAME, staging)
    conn.connection_made(_Transport(events))
    if rnd.random() < 0.7:
        conn.borrow = borrow
    sizes = [rnd.choice([0, 1, 9, 100, 2000, LARGE_FRAME + 5]) for _ in range(rnd.randint(1, 200))]
    stream = b"".join(struct.pack(">i", n) + bytes([i % 251]) * n for i, n in enumerate(sizes))
    if rnd.random() < 0.2:  # a bad size somewhere: closes once the frames before it are answered
        cut = rnd.randint(0, len(stream))
        stream = stream[:cut] + struct.pack(">i", rnd.choice([-1, 2 * LARGE_FRAME + 1])) + stream[cut:]
    pos = 0
    while pos < len(stream) and not conn.closed:
        if pending and rnd.random() < 0.3:  # a waiting answer comes, its callbacks run
            pending.pop(0).set_result([b"late"])
            loop.run_until_complete(asyncio.sleep(0))
        if conn._paused_reading:  # the loop reads nothing while reading is paused
            if not pending:
                break
            continue
        buf = conn.get_buffer(-1)
        n = min(rnd.choice([1, 3, 50, 700, 5000, 70000]), len(buf), len(stream) - pos)
        buf[:n] = stream[pos : pos + n]
        conn.last_active = 0.0
        conn.buffer_updated(n)
        pos += n
        events.append(("state", len(conn._queue), conn._busy, conn._paused_reading, conn.closed,
                       conn.partial_request(), conn._poison, conn.last_active > 0))
    while pending:
        pending.pop(0).set_result([b"late"])
        loop.run_until_complete(asyncio.sleep(0))
    events.append(("end", len(conn._queue), conn._busy, conn._paused_reading, conn.closed, conn.partial_request(),
                   conn._poison, bytes(conn._left)))
    loop.close()
    return events


@pytest.mark.parametrize("seed", range(300))
def test_both_readers_go_the_same_way_through_a_session(seed: int, caplog: Any) -> None:
    caplog.set_level("CRITICAL")  # the sessions close connections on purpose, with error lines
    c_events, py_events = _session(Connection, seed), _session(PureConnection, seed)
    assert c_events == py_events


def test_sessions_reach_every_branch() -> None:
    """The scripted sessions do fill the queue, take and refuse frames in the lane, fail it and poison."""
    seen: set[str] = set()
    for seed in range(300):
        for event in _session(Connection, seed):
            if event == "pause":
                seen.add("pause")
            elif event == "resume":
                seen.add("resume")
            elif event[0] in ("borrow", "whole"):
                way = "lane" if event[0] == "borrow" else "lane, whole frame,"
                seen.add(f"{way} fails" if event[2] == "fails" else f"{way} refuses" if event[2] < 0
                         else f"{way} takes" if event[0] == "borrow" or event[2] == 1 else f"{way} leaves")
            elif event[0] == "dispatch" and event[2]:
                seen.add("declined frame dispatched")
            elif event[0] == "state" and event[6] is not None:
                seen.add("poisoned")
            elif event[0] == "state" and event[5] is not None and event[5][1] > LARGE_FRAME:
                seen.add("large frame read in parts")
    assert seen == {"pause", "resume", "lane fails", "lane refuses", "lane takes", "declined frame dispatched",
                    "poisoned", "large frame read in parts", "lane, whole frame, fails", "lane, whole frame, refuses",
                    "lane, whole frame, takes", "lane, whole frame, leaves"}
    assert MAX_QUEUED_FRAMES < 200  # a session's 200 frames can fill the queue
