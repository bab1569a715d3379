"""The C FetchRequest reader (mockbroker/native/codecs/fetch_request_reader.h) against the generated reader:
for random requests of every version it takes (4-18) the same objects, field by field and type by
type, ending at the same place; it declines (None) every request with tagged fields; and on damaged
bytes it gives either None or exactly what the generated reader gives (never a request that reader
refuses)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from mockbroker.codec_errors import CodecError
from mockbroker.protocol import api, fast_fetch
from mockbroker.protocol.runtime import ZERO_UUID

pytestmark = pytest.mark.skipif(fast_fetch.decode is None,
                                reason="the C extension is not built (or MOCKBROKER_PURE_PYTHON is set)")

Q = api.request_module(1)
VERSIONS = range(4, 19)


def _name(rng: random.Random) -> str:
    return rng.choice(("t", "orders", "ünïcode-tøpic", "x" * rng.randrange(1, 300)))


def _request(rng: random.Random, version: int) -> Any:
    by_id = version >= 13

    def topic() -> Any:
        parts = [Q.FetchPartition(partition=rng.randrange(1 << 31), current_leader_epoch=rng.randrange(-1, 1 << 31),
                                  fetch_offset=rng.randrange(-1, 1 << 63), last_fetched_epoch=rng.randrange(-1, 50),
                                  log_start_offset=rng.randrange(-1, 1 << 40),
                                  partition_max_bytes=rng.randrange(-(1 << 31), 1 << 31))
                 for _ in range(rng.randrange(0, 5))]
        return Q.FetchTopic(topic="" if by_id else _name(rng), topic_id=rng.randbytes(16) if by_id else ZERO_UUID,
                            partitions=parts)

    def forgotten() -> Any:
        return Q.ForgottenTopic(topic="" if by_id else _name(rng), topic_id=rng.randbytes(16) if by_id else ZERO_UUID,
                                partitions=[rng.randrange(-(1 << 31), 1 << 31) for _ in range(rng.randrange(0, 4))])

    return Q.FetchRequest(
        replica_id=-1 if version >= 15 else rng.choice((-1, 0, 3)), replica_state=Q.ReplicaState(),
        max_wait_ms=rng.randrange(-(1 << 31), 1 << 31), min_bytes=rng.randrange(0, 1 << 20),
        max_bytes=rng.randrange(0, 1 << 31), isolation_level=rng.choice((0, 1, -3)),
        session_id=rng.randrange(0, 1 << 31) if version >= 7 else 0,
        session_epoch=rng.randrange(-1, 1 << 31) if version >= 7 else -1,
        topics=[topic() for _ in range(rng.randrange(0, 4))],
        forgotten_topics_data=[forgotten() for _ in range(rng.randrange(0, 3))] if version >= 7 else [],
        rack_id=rng.choice(("", "rack-1", "ü")) if version >= 11 else "")


def _encoded(request: Any, version: int) -> bytes:
    out = bytearray()
    api.encode_message(Q, version, request, out, [])
    return bytes(out)


def _generated(data: bytes, version: int) -> tuple[Any, int] | None:
    try:
        return Q.READERS[version](memoryview(data), 0)  # type: ignore[no-any-return]
    except CodecError:
        return None


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (an int is not a bool, a list not a tuple)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if hasattr(a, "__slots__") and not isinstance(a, (bytes, str, int)):
        return all(_same(getattr(a, s), getattr(b, s)) for s in a.__slots__)
    return bool(a == b)


@pytest.mark.parametrize("version", VERSIONS)
def test_random_requests_decode_as_the_generated_reader_decodes_them(version: int) -> None:
    rng = random.Random(version)
    assert fast_fetch.decode is not None
    for _ in range(60):
        data = _encoded(_request(rng, version), version)
        framed = memoryview(b"\x00" * 7 + data + b"\x01\x02")  # a body inside a frame, bytes after it
        fast, usual = fast_fetch.decode(framed, 7, version), Q.READERS[version](framed, 7)
        assert fast is not None and fast[1] == usual[1] == 7 + len(data)
        assert _same(fast[0], usual[0])
        assert fast[0].replica_state is not usual[0].replica_state  # a fresh one each, as the reader makes


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 12])
def test_requests_with_tagged_fields_are_left_to_the_generated_reader(version: int) -> None:
    rng = random.Random(100 + version)
    variants = [("cluster_id", "some-cluster"), ("unknown_tags", [(7, b"x")])]
    if version >= 15:
        variants.append(("replica_state", Q.ReplicaState(replica_id=2, replica_epoch=5)))
    assert fast_fetch.decode is not None
    for attr, value in variants:
        request = _request(rng, version)
        request.topics = [Q.FetchTopic(topic="t" if version < 13 else "", topic_id=bytes(16), partitions=[])]
        setattr(request, attr, value)
        assert fast_fetch.decode(memoryview(_encoded(request, version)), 0, version) is None, attr
    if version >= 17:
        request = _request(rng, version)
        request.topics = [Q.FetchTopic(topic="", topic_id=bytes(16), partitions=[Q.FetchPartition(
            partition=0, fetch_offset=0, partition_max_bytes=1, replica_directory_id=b"d" * 16)])]
        assert fast_fetch.decode(memoryview(_encoded(request, version)), 0, version) is None


@pytest.mark.parametrize("version", VERSIONS)
def test_damaged_bytes_give_none_or_what_the_generated_reader_gives(version: int) -> None:
    rng = random.Random(200 + version)
    assert fast_fetch.decode is not None
    for _ in range(15):
        data = _encoded(_request(rng, version), version)
        damaged = [data[:cut] for cut in range(len(data))]
        for _ in range(30):
            flipped = bytearray(data)
            flipped[rng.randrange(len(data))] = rng.randrange(256)
            damaged.append(bytes(flipped))
        for bad in damaged:
            fast, usual = fast_fetch.decode(memoryview(bad), 0, version), _generated(bad, version)
            if fast is not None:
                assert usual is not None and fast[1] == usual[1] and _same(fast[0], usual[0]), bad


def test_versions_it_does_not_take_are_left_to_the_generated_reader() -> None:
    assert fast_fetch.decode is not None
    data = memoryview(_encoded(_request(random.Random(1), 4), 4))
    assert fast_fetch.decode(data, 0, 3) is None and fast_fetch.decode(data, 0, 19) is None
    assert fast_fetch.decode(data, len(data) + 1, 4) is None
