"""The C FetchResponse encoder (mockbroker/native/lanes/_fastfetch.c) against the generated writer: for
random answers of every version it takes (4-18) the same bytes and the same holes, and where it
declines (tags, leader hints, odd values, cached lists) it leaves ``out`` and ``holes`` untouched."""

from __future__ import annotations

import random
from typing import Any

import pytest

from mockbroker.protocol import api, fast_fetch
from mockbroker.protocol.runtime import HOLE_THRESHOLD, EncodedList

pytestmark = pytest.mark.skipif(fast_fetch.encode is None,
                                reason="the C extension is not built (or MOCKBROKER_PURE_PYTHON is set)")

R = api.response_module(1)


def _records(rng: random.Random) -> Any:
    kind = rng.randrange(6)
    if kind == 0:
        return None
    if kind == 1:
        return b""
    if kind == 2:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
    sizes = [rng.choice((10, 200, HOLE_THRESHOLD, HOLE_THRESHOLD + 1, 5000)) for _ in range(rng.randrange(1, 4))]
    chunks = [memoryview(bytes(rng.randrange(256) for _ in range(n))) for n in sizes]
    return chunks if kind < 5 else tuple(chunks)


def _partition(rng: random.Random, unusual: bool) -> Any:
    part = R.PartitionData(
        partition_index=rng.randrange(100), error_code=rng.choice((0, 0, 1, 74)), high_watermark=rng.randrange(1 << 40),
        last_stable_offset=rng.randrange(-1, 1 << 40), log_start_offset=rng.randrange(-1, 1000),
        aborted_transactions=rng.choice((None, [], [R.AbortedTransaction(producer_id=rng.randrange(1 << 40),
                                                                          first_offset=rng.randrange(1000))
                                                    for _ in range(rng.randrange(1, 3))])),
        preferred_read_replica=rng.choice((-1, 2)), records=_records(rng))
    if unusual:
        choice = rng.randrange(6)
        if choice == 0:
            part.diverging_epoch = R.EpochEndOffset(epoch=3, end_offset=10)
        elif choice == 1:
            part.current_leader = R.LeaderIdAndEpoch(leader_id=1, leader_epoch=4)
        elif choice == 2:
            part.snapshot_id = R.SnapshotId(end_offset=5, epoch=1)
        elif choice == 3:
            part.unknown_tags = [(9, b"x")]
        elif choice == 4:
            part.aborted_transactions = EncodedList([R.AbortedTransaction(producer_id=1, first_offset=2)])
        else:
            part.error_code = 1 << 20  # out of int16: the generated writer names it
    return part


def _answer(rng: random.Random, unusual: bool) -> Any:
    topics = [R.FetchableTopicResponse(topic=f"topic-{i}", topic_id=bytes([i + 1]) * 16,
                                       partitions=[_partition(rng, unusual and rng.random() < 0.5)
                                                   for _ in range(rng.randrange(5))])
              for i in range(rng.randrange(4))]
    body = R.FetchResponse(throttle_time_ms=rng.choice((0, 25)), error_code=rng.choice((0, 0, 70)),
                           session_id=rng.choice((0, 12345)), responses=topics)
    if unusual and rng.random() < 0.2:
        body.node_endpoints = [R.NodeEndpoint(node_id=1, host="h", port=1)]
    return body


def _generated(body: Any, version: int) -> tuple[bytes, list[tuple[int, Any]]] | None:
    out, holes = bytearray(b"head"), [(0, b"kept")]
    try:
        api.encode_message(R, version, body, out, holes)
    except api.EncodeError:
        return None
    return bytes(out), holes


@pytest.mark.parametrize("unusual", [False, True])
def test_the_c_encoder_writes_what_the_generated_writer_writes(unusual: bool) -> None:
    rng = random.Random(20261127 + unusual)
    taken = declined = 0
    for _ in range(300):
        body = _answer(rng, unusual)
        for version in range(4, 19):
            out, holes = bytearray(b"head"), [(0, b"kept")]
            done = fast_fetch.encode(body, version, out, holes)  # type: ignore[misc]
            expected = _generated(body, version)
            if done is None:
                declined += 1
                assert (bytes(out), holes) == (b"head", [(0, b"kept")]), version
                continue
            taken += 1
            assert expected is not None, version
            assert bytes(out) == expected[0], version
            assert [(at, id(buf)) for at, buf in holes] == [(at, id(buf)) for at, buf in expected[1]], version
    assert taken > 1000 if not unusual else (taken > 100 and declined > 1000)


def test_whole_answers_frame_the_same_with_and_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """encode_response (size, header, body, holes assembled) is byte for byte the same either way."""
    rng = random.Random(7)
    bodies = [_answer(rng, False) for _ in range(50)]
    fast = [b"".join(bytes(b) for b in api.encode_response(1, v, 9, body)) for body in bodies for v in (4, 11, 12, 16)]
    monkeypatch.setitem(api._ENCODERS, 1, lambda *args: None)
    slow = [b"".join(bytes(b) for b in api.encode_response(1, v, 9, body)) for body in bodies for v in (4, 11, 12, 16)]
    assert fast == slow
