"""The produce lane's own lz4 decoding (mockbroker/native/codecs/lz4_frames.h: the system's liblz4) against the
Python path (python-lz4 through mockbroker.records.compression).

Each lz4 frame below goes in one Produce request to a cluster with the lane and to one without: the
answers and what each cluster stored must be the same.  Frames the C decoding must take (every block size,
checksum and block mode liblz4 writes) count in ``lz4_taken()``; frames it must leave to the Python path
(two frames in a row, trailing bytes, a truncated or damaged frame, output past the cap) do not, and the
Python path then accepts or names them as it always has.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import lz4.frame
import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.handlers import produce_lane
from mockbroker.protocol import api
from mockbroker.records.compression import DEFAULT_MAX_SIZE
from mockbroker.state.clock import ManualClock
from tests.broker.test_produce_lane import NOW, _port, _same, _set_lane, _stored
from tests.broker.wire import read_frame
from tests.records.helpers import fix_v2_crc

pytestmark = pytest.mark.skipif(not produce_lane.available(),
                                reason="the C extension is not built (or MOCKBROKER_PURE_PYTHON is set)")


def _system_lz4() -> bool:
    return bool(produce_lane._lane.setup_lz4(DEFAULT_MAX_SIZE))


def _lz4_batch(records: list[Any], frame: Any) -> bytes:
    """A v2 batch of ``records`` whose records part is ``frame(raw_records)`` (lz4 codec id, CRC fixed)."""
    plain = rec.build_batch(records, compression=rec.NONE, base_timestamp=NOW)
    data = bytearray(plain[:rec.HEADER_SIZE]) + frame(bytes(plain[rec.HEADER_SIZE:]))
    struct.pack_into(">i", data, 8, len(data) - 12)
    struct.pack_into(">h", data, 21, (struct.unpack_from(">h", data, 21)[0] & ~0x07) | rec.LZ4)
    return bytes(fix_v2_crc(data))


def _records(n: int, size: int) -> list[Any]:
    return [(f"k{i}".encode(), bytes([65 + i % 26]) * size, [], NOW + i) for i in range(n)]


def _damage(data: bytes, at: int) -> bytes:
    out = bytearray(data)
    out[at] ^= 0x5A
    return bytes(out)


# name, records, frame maker, taken by the C decoding
CASES = [
    ("default", _records(20, 100), lz4.frame.compress, True),
    ("4 MiB blocks, checksums, independent blocks", _records(300, 20_000),
     lambda raw: lz4.frame.compress(raw, block_size=lz4.frame.BLOCKSIZE_MAX4MB, content_checksum=True,
                                    block_checksum=True, block_linked=False), True),
    ("64 KiB linked blocks, no stored size", _records(40, 5_000),
     lambda raw: lz4.frame.compress(raw, block_size=lz4.frame.BLOCKSIZE_MAX64KB, store_size=False), True),
    ("stored uncompressed blocks", [(b"k", bytes(range(256)) * 40, [], NOW)],
     lambda raw: lz4.frame.compress(raw, compression_level=0, block_linked=False), True),
    ("two frames in a row", _records(30, 100), lambda raw: lz4.frame.compress(raw[:50]) + lz4.frame.compress(raw[50:]),
     False),
    ("a byte after the frame", _records(10, 100), lambda raw: lz4.frame.compress(raw) + b"\x00", False),
    ("truncated", _records(10, 100), lambda raw: lz4.frame.compress(raw)[:-3], False),
    ("damaged block", _records(10, 300), lambda raw: _damage(lz4.frame.compress(raw, content_checksum=True), 30),
     False),
    ("damaged header checksum", _records(5, 100), lambda raw: _damage(lz4.frame.compress(raw), 6), False),
    ("records that do not add up", _records(5, 100), lambda raw: lz4.frame.compress(raw[:-1]), True),
]


@pytest.fixture
def clusters() -> Iterator[tuple[MockCluster, MockCluster]]:
    with ExitStack() as stack:
        pair = [stack.enter_context(MockCluster(brokers=1, clock=ManualClock(NOW))) for _ in range(2)]
        for c in pair:
            c.create_topic("t", 1)
        yield pair[0], pair[1]


def _produce_frame(batch: bytes, correlation: int) -> bytes:
    m = api.request_module(0)
    body = m.ProduceRequest(transactional_id=None, acks=1, timeout_ms=5000, topic_data=[
        m.TopicProduceData(name="t", partition_data=[m.PartitionProduceData(index=0, records=batch)])])
    return api.to_bytes(api.encode_request(0, 9, correlation, body, "lz4-test"))


@pytest.mark.skipif(not produce_lane.available() or not _system_lz4(),
                    reason="the system's liblz4 (liblz4.so.1) does not load here: lz4 batches take the Python path")
def test_lane_lz4_answers_and_stores_what_the_python_path_does(clusters: tuple[MockCluster, MockCluster],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    lane, handler = clusters
    lz4_lane = produce_lane._lane
    with socket.create_connection(("127.0.0.1", _port(lane))) as a, \
            socket.create_connection(("127.0.0.1", _port(handler))) as b:
        for i, (name, records, frame, taken) in enumerate(CASES):
            request = _produce_frame(_lz4_batch(records, frame), i)
            before = lz4_lane.lz4_taken()
            _set_lane(monkeypatch, True)
            a.sendall(request)
            got_lane = read_frame(a)
            decoded_here = lz4_lane.lz4_taken() - before
            _set_lane(monkeypatch, False)
            b.sendall(request)
            got_handler = read_frame(b)
            assert _same(got_lane, got_handler, 9), name
            assert decoded_here == taken, name
        _set_lane(monkeypatch, True)
    stored_lane, stored_handler = lane.call(_stored, lane), handler.call(_stored, handler)
    assert stored_lane == stored_handler
    # the good frames (and the two frames in a row, which the Python path accepts) were stored
    assert stored_lane["logs"]["t-0"][0] == sum(len(r) for _, r, _, taken in CASES[:5])


@pytest.mark.skipif(not produce_lane.available() or not _system_lz4(),
                    reason="the system's liblz4 (liblz4.so.1) does not load here: lz4 batches take the Python path")
def test_lane_lz4_leaves_output_past_the_cap_to_the_python_path(clusters: tuple[MockCluster, MockCluster],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A frame of zeros that decompresses past the cap: the C decoding stops at the cap plus one block and
    the Python path names it (INVALID_RECORD, a decompression bomb)."""
    lane, handler = clusters
    bomb = _lz4_batch([(None, b"", [], NOW)], lambda raw: lz4.frame.compress(raw + bytes(DEFAULT_MAX_SIZE + 1)))
    request = _produce_frame(bomb, 1)
    before = produce_lane._lane.lz4_taken()
    answers = []
    for on, c in ((True, lane), (False, handler)):
        _set_lane(monkeypatch, on)
        with socket.create_connection(("127.0.0.1", _port(c))) as s:
            s.sendall(request)
            answers.append(read_frame(s))
    _set_lane(monkeypatch, True)
    assert _same(*answers, 9)
    assert produce_lane._lane.lz4_taken() == before
    _corr, body = api.decode_response(0, 9, answers[0][4:])
    assert body.responses[0].partition_responses[0].error_code == 87  # INVALID_RECORD
