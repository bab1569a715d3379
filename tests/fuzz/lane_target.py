"""The ``lane`` fuzz target: the C produce lane (mockbroker/native/lanes/_producelane.c) against the Python
Produce handler, on Produce requests whose batches have their lengths and CRCs made right, so that
mutations get past the envelope to what sits behind it: the record checks, the lz4 decoding through
the system's liblz4, the producer-state checks and the appends.

Each input is one Produce frame, given to a broker with the lane (through the staging buffer, whole
as a large frame is, or through dispatch) and to one without it.  The answer (or the closed
connection) must be the same, and so must everything both brokers have stored (batches, offsets,
sizes, the memory count).  The two brokers live for :data:`INPUTS_PER_PAIR` inputs, so sequences of
idempotent producers and offsets carry over from one input to the next.

Input layout:

* byte 0: bits 0-3 the Produce version (3 + n % 10); bits 4-5 how the lane is offered the frame
  (:data:`WAYS`); bit 6 the records part of each batch is compressed as one lz4 frame (byte 2 says
  how); bit 7 the batches get an idempotent producer (id 1-3 from byte 43, epoch 0, a small sequence).
* byte 1: bits 0-2 the topic (:func:`topic_names`), bits 3-4 the first partition, bits 5-6 acks
  (:data:`ACKS`), bit 7 a transactional id.
* byte 2: the lz4 frame's options: bits 0-1 block size, bit 2 content checksum, bit 3 block checksums,
  bit 4 independent blocks, bit 5 no content size; bits 6-7 how many bytes of the frame to change
  afterwards (each by a (position, xor) pair from bytes 3-8).
* byte 9: the brokers' settings for this input: bit 0 ``mock.produce.validation=envelope``, bit 1
  ``mock.produce.reused.sequences=reject``, bits 2-7 (n > 0) a memory cap ``mock.log.max.total.bytes``
  n KiB above what is stored (both brokers get the same settings; the lane re-reads them).
* bytes 10-: up to :data:`MAX_BATCHES` batches separated by :data:`SEP`, one per partition entry
  (partition first, first + 1, ...); each gets magic 2 and its length and CRC fixed.
"""

from __future__ import annotations

import struct
from typing import Any

import lz4.frame

from mockbroker import records as rec
from mockbroker.handlers import produce_lane
from mockbroker.protocol import api
from mockbroker.server import dispatch, warm_up
from tests.fuzz.record_targets import SEP, Finding, _fix_v2

MAX_BATCHES = 4
HEAD = 10  # bytes before the batches
INPUTS_PER_PAIR = 100  # inputs two brokers see before a fresh pair (their state is compared after each)
WAYS = ("staging", "whole", "", "staging")
ACKS = (1, -1, 0, 1)
_BLOCK_SIZES = (lz4.frame.BLOCKSIZE_DEFAULT, lz4.frame.BLOCKSIZE_MAX64KB, lz4.frame.BLOCKSIZE_MAX256KB,
                lz4.frame.BLOCKSIZE_MAX4MB)
_PAIR: list[Any] = []  # [lane broker, handler broker, inputs seen]


def topic_names() -> list[str]:
    from tests.broker.test_produce_lane import TOPICS

    return [*TOPICS, "missing"]


def _lz4_part(records: bytes, options: int, flips: bytes) -> bytes:
    frame = bytearray(lz4.frame.compress(
        records, block_size=_BLOCK_SIZES[options & 3], content_checksum=bool(options & 4),
        block_checksum=bool(options & 8), block_linked=not options & 16, store_size=not options & 32))
    for i in range((options >> 6) & 3):
        if 2 * i + 1 < len(flips) and frame:
            frame[flips[2 * i] % len(frame)] ^= flips[2 * i + 1] or 1
    return bytes(frame)


def _batch(raw: bytes, head: bytes) -> bytes:
    """One batch from the fuzzer's bytes: magic 2, the lz4 frame or idempotent fields ``head`` asks
    for, batchLength and CRC made right (shorter than a batch header: left as it is)."""
    buf = bytearray(raw)
    if len(buf) < rec.HEADER_SIZE:
        return bytes(buf)
    buf[16] = 2
    if head[0] & 0x40:
        buf[rec.HEADER_SIZE:] = _lz4_part(bytes(buf[rec.HEADER_SIZE:]), head[2], head[3:9])
        attributes = struct.unpack_from(">h", buf, 21)[0]
        struct.pack_into(">h", buf, 21, (attributes & ~0x07) | rec.LZ4)
    if head[0] & 0x80:
        struct.pack_into(">qhi", buf, 43, 1 + buf[43] % 3, 0, struct.unpack_from(">i", buf, 53)[0] % 64)
    _fix_v2(buf)
    return bytes(buf)


def produce_frame(data: bytes) -> tuple[bytes, int, str] | None:
    """(the Produce frame without its size, its version, the way the lane is offered it) for an input."""
    if len(data) < HEAD + 1:
        return None
    head, body = data[:HEAD], data[HEAD:]
    version = 3 + (head[0] & 15) % 10
    names = topic_names()
    topic, first = names[head[1] & 7], (head[1] >> 3) & 3
    m = api.request_module(0)
    parts = [m.PartitionProduceData(index=(first + i) % 4, records=_batch(raw, head))
             for i, raw in enumerate(body.split(SEP, MAX_BATCHES - 1))]
    request = m.ProduceRequest(transactional_id="txn" if head[1] & 0x80 else None, acks=ACKS[(head[1] >> 5) & 3],
                               timeout_ms=1000, topic_data=[m.TopicProduceData(name=topic, partition_data=parts)])
    frame = api.to_bytes(api.encode_request(0, version, 7, request, "fuzz-lane"))[4:]
    return frame, version, WAYS[(head[0] >> 4) & 3]


def _settle(state: Any, settings: int) -> None:
    """The settings byte (9) applied to one broker's cluster state, each set only when it changes."""
    config = state.config
    wanted = {"mock.produce.validation": "envelope" if settings & 1 else "strict",
              "mock.produce.reused.sequences": "reject" if settings & 2 else "duplicate",
              "mock.log.max.total.bytes": state.memory_cap.total + (settings >> 2) * 1024 if settings >> 2 else None}
    for key, value in wanted.items():
        if config.get(key) != value:
            if value is None:
                config.reset(key)
            else:
                config.set(key, value)


def _set_lane(on: bool) -> None:
    dispatch._LANE = on
    produce_lane._lane.enable_staging(on)


def fuzz_lane(data: bytes) -> None:
    """The lane and the handler give the same answer and store the same for one Produce frame."""
    from tests.broker.test_produce_lane import _bare_broker, _outcome, _stored_state

    if produce_lane._lane is None:
        raise RuntimeError("the lane target needs the C extension (and MOCKBROKER_PURE_PYTHON unset)")
    made = produce_frame(data)
    if made is None:
        return
    frame, version, way = made
    warm_up.pending = False  # dispatch is called outside an event loop here
    if not _PAIR or _PAIR[2] >= INPUTS_PER_PAIR:
        _PAIR[:] = [_bare_broker(), _bare_broker(), 0]
    lane, handler = _PAIR[0], _PAIR[1]
    _PAIR[2] += 1
    for broker in (lane, handler):
        _settle(broker.cluster, data[HEAD - 1])
    try:
        _set_lane(True)
        got_lane = _outcome(lane, frame, borrow=way)
        _set_lane(False)
        got_handler = _outcome(handler, frame)
    finally:
        _set_lane(True)
    if got_lane != got_handler:
        _PAIR.clear()  # the pair differs from here on
        raise Finding(f"Produce v{version} ({way or 'dispatch'}): the lane answered {got_lane!r}, "
                      f"the handler {got_handler!r}")
    if _stored_state(lane.cluster) != _stored_state(handler.cluster):
        _PAIR.clear()
        raise Finding(f"Produce v{version} ({way or 'dispatch'}): the lane and the handler stored different things")
