"""Golden frames recorded from real clients (tools/record_client_frames.py) decode, re-encode to the
same bytes, and the record batches inside their Produce requests decode and re-encode too."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from mockbroker import records as rec
from mockbroker.protocol import api
from mockbroker.records.batch import HEADER_SIZE
from mockbroker.records.record import encode_record

GOLDEN = Path(__file__).resolve().parents[1] / "golden_frames"
FRAMES = sorted(GOLDEN.glob("*/*.bin"))
CLIENTS = {"confluent_kafka", "kafka_python", "kafka_python_0_10", "kafka_python_0_9", "aiokafka"}


def test_every_client_has_golden_frames() -> None:
    assert {p.parent.name for p in FRAMES} == CLIENTS
    pairs = Counter((p.parent.name, p.name.split("_", 1)[1].rsplit(".", 1)[0]) for p in FRAMES)
    print(f"{len(FRAMES)} frames, {len(pairs)} (client, api, version) pairs")
    for client in CLIENTS:
        assert any(api_v.startswith("Produce_v") for c, api_v in pairs if c == client)
        assert any(api_v.startswith("Fetch_v") for c, api_v in pairs if c == client)


@pytest.mark.parametrize("path", FRAMES, ids=[f"{p.parent.name}/{p.name}" for p in FRAMES])
def test_frame_decodes_and_re_encodes_byte_for_byte(path: Path) -> None:
    frame = path.read_bytes()
    req = api.decode_request(frame, allow_trailing=True)
    if req.trailing_bytes:
        # librdkafka's all-topics Metadata v9+ request leaves three zero bytes (Kafka ignores them)
        assert path.parent.name == "confluent_kafka" and req.api_key == 3
        assert frame[-req.trailing_bytes :] == b"\x01\x00\x00"
        frame = frame[: -req.trailing_bytes]
    again = api.to_bytes(api.encode_request(req.api_key, req.api_version, req.correlation_id, req.body,
                                            req.client_id))[4:]
    assert again == frame


def _produce_partitions() -> list[tuple[str, int, memoryview]]:
    out = []
    for path in FRAMES:
        req = api.decode_request(path.read_bytes(), allow_trailing=True)
        if req.api_key != 0:
            continue
        for topic in req.body.topic_data:
            for part in topic.partition_data:
                out.append((f"{path.parent.name}/{path.name}", req.api_version, part.records))
    return out


PRODUCED = _produce_partitions()


@pytest.mark.parametrize(("name", "version", "records"), PRODUCED, ids=[p[0] for p in PRODUCED])
def test_produced_batches_decode_and_re_encode(name: str, version: int, records: memoryview) -> None:
    assert isinstance(records, memoryview)  # a view of the frame, not a copy
    entries = list(rec.iter_batches(records))
    assert entries
    for _pos, magic, view in entries:
        if magic == 2:
            _check_v2(view)
        else:
            _check_legacy(view, magic)


def _check_v2(view: memoryview) -> None:
    header, records = rec.decode_batch(view)
    # the records part re-encodes byte for byte, compressed or not
    body = bytearray()
    for r in records:
        encode_record(body, r.offset_delta, r.timestamp_delta, r.key, r.value, r.headers, r.attributes)
    payload = view[HEADER_SIZE:]
    plain = rec.decompress(header.compression, payload) if header.compression else bytes(payload)
    assert bytes(body) == plain
    rebuilt = rec.build_batch(records, base_offset=header.base_offset, compression=header.compression,
                              base_timestamp=header.base_timestamp, timestamp_type=header.timestamp_type,
                              producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                              base_sequence=header.base_sequence, transactional=header.is_transactional,
                              partition_leader_epoch=header.partition_leader_epoch)
    if header.compression == rec.NONE:
        assert rebuilt == bytes(view)  # the whole batch, CRC included
    else:
        again_header, again = rec.decode_batch(rebuilt)  # our compressor's output reads back the same
        assert [(r.key, r.value, r.headers) for r in again] == [(r.key, r.value, r.headers) for r in records]
        assert again_header.max_timestamp == header.max_timestamp


def _check_legacy(view: memoryview, magic: int) -> None:
    messages = rec.decode_message_set(view)
    assert messages and {m.magic for m in messages} == {magic}
    codec = view[17] & 0x07  # the wrapper (or first) message's attributes
    if codec == rec.NONE:
        rebuilt = rec.build_message_set(
            [(m.key, m.value, m.timestamp if magic else None, m.offset) for m in messages], magic)
        assert rebuilt == bytes(view)
    else:
        upgraded = rec.legacy_to_v2(view)
        _header, records = rec.decode_batch(rec.iter_batches(upgraded).__next__()[2])
        assert [(bytes(r.key) if r.key is not None else None, bytes(r.value)) for r in records] == [
            (bytes(m.key) if m.key is not None else None, bytes(m.value)) for m in messages]
