"""Framing in the server's Connection: frames arrive whole however the bytes are split into reads.

Pure unit test of the protocol object: bytes go in through get_buffer/buffer_updated exactly as the
event loop feeds them; a recording dispatch collects the frames.  Small frames come out of the shared
staging buffer, large ones out of their own buffers.
"""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mockbroker.server.connection import LARGE_FRAME, STAGING_BYTES, Connection


class _Transport:
    def __init__(self) -> None:
        self.closed = False

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 1)

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def writelines(self, buffers: list[Any]) -> None: ...


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


def _connection(shared: memoryview, seen: list[bytes], limit: int = 10 * 2**20) -> Connection:
    conn = Connection(0, lambda c, frame: seen.append(bytes(frame)), limit, shared)
    conn.connection_made(_Transport())  # type: ignore[arg-type]
    return conn


frame_sizes = st.lists(st.sampled_from([0, 1, 7, 300, LARGE_FRAME, LARGE_FRAME + 1, 200_000, 600_000, 1_100_000]),
                       min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(frame_sizes, st.lists(st.integers(1, 300_000), max_size=20), st.randoms(use_true_random=False))
def test_frames_come_out_whole_for_any_split_of_the_bytes(sizes: list[int], cuts: list[int], rnd: Any) -> None:
    shared = memoryview(bytearray(STAGING_BYTES))
    frames = [bytes(rnd.getrandbits(8) for _ in range(min(n, 64))) * (n // 64 + 1) for n in sizes]
    frames = [f[:n] for f, n in zip(frames, sizes, strict=True)]
    seen: list[bytes] = []
    other_seen: list[bytes] = []
    conn = _connection(shared, seen)
    other = _connection(shared, other_seen)  # shares the staging buffer and reads in between
    data = b"".join(struct.pack(">i", len(f)) + f for f in frames)
    start = 0
    for size in cuts:  # conn's bytes in reads of these sizes, other's small frame read in between
        _feed(conn, data[start : start + size], [])
        _feed(other, struct.pack(">i", 3) + b"abc", [2])
        start += size
    _feed(conn, data[start:], [])
    assert seen == frames
    assert other_seen == [b"abc"] * len(cuts)


def test_a_frame_over_the_limit_closes_before_anything_is_allocated() -> None:
    seen: list[bytes] = []
    conn = _connection(memoryview(bytearray(STAGING_BYTES)), seen, limit=1000)
    _feed(conn, struct.pack(">i", 1001) + b"x" * 10, [])
    assert conn.closed and seen == [] and conn._frame is None
