"""The huge-page arenas large request frames are read into (mockbroker/native/lanes/frame_arena.h).

Pure unit tests of _reading.frame_buffer in this process: frames are placed one after another, a
2 MiB page nothing lives in any more goes back to the kernel once the arena has moved past it, and an
arena is unmapped with its last frame.  The process's own /proc/self/smaps says what is mapped and
resident.
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from mockbroker.server import connection as connection_module

MiB = 1024 * 1024
HUGE_PAGE = 2 * MiB
THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")

if connection_module._Reader is connection_module.PyReader:
    pytest.skip("the C reader is not in use (MOCKBROKER_PURE_PYTHON set, or not built)", allow_module_level=True)
if not THP.exists() or "[never]" in THP.read_text():
    pytest.skip("transparent huge pages are off here: large frames are plain bytearrays", allow_module_level=True)

from mockbroker.native import _reading  # noqa: E402


@pytest.fixture(autouse=True)
def _arenas_on() -> Iterator[None]:
    """On for these tests, whatever connection._huge_pages_pay chose for this machine."""
    before = _reading.use_arenas(1)
    yield
    _reading.use_arenas(before)


def _address(frame: object) -> int:
    holder = ctypes.c_char.from_buffer(frame)  # type: ignore[arg-type]
    address = ctypes.addressof(holder)
    del holder
    return address


def _mapping(address: int) -> dict[str, int] | None:
    """The smaps fields (kB) of the mapping holding ``address``, or None when nothing maps it."""
    fields: dict[str, int] | None = None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            if fields is not None:
                return fields
            start, end = (int(x, 16) for x in head.split("-"))
            fields = {"start": start, "end": end} if start <= address < end else None
        elif fields is not None and line.split()[-1] == "kB":
            fields[head.rstrip(":")] = int(line.split()[1])
    return fields


def _fresh_arena() -> list[object]:
    """Frames of 1 MiB until one starts a new arena (not right after the one before): the list ends
    with that frame, at the arena's start."""
    frames: list[object] = [_reading.frame_buffer(MiB)]
    while True:
        frames.append(_reading.frame_buffer(MiB))
        if _address(frames[-1]) != _address(frames[-2]) + MiB:
            return frames


def test_frames_sit_one_after_another_and_too_large_ones_get_a_bytearray() -> None:
    older = _fresh_arena()
    first = older.pop()
    del older
    base = _address(first)
    assert base % HUGE_PAGE == 0
    second, third = _reading.frame_buffer(40_000), _reading.frame_buffer(100_001)
    assert _address(second) == base + MiB  # 64-byte steps
    assert _address(third) == base + MiB + 40_000 + (-40_000 % 64)
    assert type(_reading.frame_buffer(_reading.ARENA_FRAME_MAX + 1)) is bytearray
    mapping = _mapping(base)  # (an adjacent arena's mapping may have merged with it)
    assert mapping is not None and mapping["start"] <= base and mapping["end"] >= base + 16 * MiB


def test_pages_go_back_to_the_kernel_and_the_arena_with_its_last_frame() -> None:
    older = _fresh_arena()
    arena = [older.pop()]
    del older
    gc.collect()
    base = _address(arena[0])
    arena += [_reading.frame_buffer(MiB) for _ in range(15)]  # 16 MiB: the arena is full
    assert [_address(f) for f in arena] == [base + i * MiB for i in range(16)]
    resident = _mapping(base)
    assert resident is not None and resident["Rss"] >= 15 * 1024  # every page present before recv writes
    del arena[:14]  # pages 0-6 hold nothing now: given back
    resident = _mapping(base)
    assert resident is not None and resident["Rss"] <= 2 * 1024
    kept = arena.pop()
    arena.pop()
    next_arena = _reading.frame_buffer(MiB)  # does not fit: the arena retires, kept alone holds it
    assert not base <= _address(next_arena) < base + 16 * MiB
    assert _mapping(base) is not None
    del kept
    assert _mapping(base) is None  # its last frame gone: unmapped



def test_any_order_of_frames_coming_and_going_leaves_no_arena_behind() -> None:
    """Frames of random sizes taken and dropped in random order (a seeded walk), some kept for a while:
    every byte written stays readable while its frame lives, and once all are gone and a new arena
    has started, nothing the old ones mapped is left."""
    import random

    rnd = random.Random(8)
    before = _reading.arena_count()
    live: list[tuple[object, int]] = []  # (frame, the byte written at both ends)
    for step in range(600):
        if live and rnd.random() < 0.45:
            frame, mark = live.pop(rnd.randrange(len(live)))
            view = memoryview(frame)  # type: ignore[arg-type]
            assert view[0] == mark and view[-1] == mark
            del view, frame
        else:
            size = rnd.choice([33_000, 100_000, 300_000, MiB, _reading.ARENA_FRAME_MAX])
            frame = _reading.frame_buffer(size)
            assert type(frame) is _reading.ArenaFrame
            view = memoryview(frame)
            view[0] = view[-1] = step % 256
            del view
            live.append((frame, step % 256))
    assert _reading.arena_count() > before  # the walk needed ~40 arenas' worth of frames
    for frame, mark in live:
        view = memoryview(frame)  # type: ignore[arg-type]
        assert view[0] == mark and view[-1] == mark
        del view
    live.clear()
    del frame
    fresh = _fresh_arena()  # the arena current at the end retires and goes too
    del fresh
    gc.collect()
    assert _reading.arena_count() <= max(before, 1)
