"""(Re)build the committed seed corpora under tests/fuzz/corpus/<target>/.

    python -m tests.fuzz.build_corpus

Seeds come from the request frames real clients sent (tests/golden_frames: confluent-kafka,
kafka-python old and new, aiokafka), the record batches inside their Produce requests, a default
request body for every (api key, version) the broker registers, and batches, message sets and
compressed blocks the project's own builders make with each codec.  Each file is named by the hash
of its content, so rebuilding is idempotent; the directories are emptied first.
"""

from __future__ import annotations

import hashlib
import shutil
import struct
from pathlib import Path

from mockbroker import records as rec
from mockbroker.protocol import api
from tests.fuzz import targets

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
GOLDEN = HERE.parent / "golden_frames"
MAX_SEED = 16384  # bigger golden frames are left out (the committed corpus stays small)


def _golden() -> list[bytes]:
    return [p.read_bytes() for p in sorted(GOLDEN.glob("*/*.bin")) if p.stat().st_size <= MAX_SEED]


def _request_seeds() -> list[bytes]:
    seeds = [b"\x00" + frame for frame in _golden()]
    pairs = targets._registered()
    for index, (key, version) in enumerate(pairs):
        body = bytearray()
        holes: list = []
        try:
            api.encode_message(api.request_module(key), version, _default_request(key), body, holes)
        except Exception:  # a version whose required fields have no default: the golden frames cover it
            continue
        seeds.append(b"\x01" + struct.pack(">H", index) + b"".join(bytes(b) for b in api.assemble(body, holes)))
    return seeds


def _frame(key: int, version: int, body: object) -> bytes:
    return api.to_bytes(api.encode_request(key, version, 1, body, "fuzz"))[4:]


def _dispatch_seeds(requests: list[bytes]) -> list[bytes]:
    """The request seeds, runs of consecutive golden frames of one client, and SASL conversations."""
    out = list(requests)
    for client in sorted(GOLDEN.iterdir()):
        frames = [p.read_bytes() for p in sorted(client.glob("*.bin")) if p.stat().st_size <= MAX_SEED]
        for i in range(0, len(frames), 4):
            out.append(b"\x00" + targets.SEP.join(frames[i : i + 4]))
    golden = _golden()
    for action in range(len(targets.FAULT_ACTIONS)):  # golden frames under each fault action
        for scope in (0, 0x80):
            for frame in golden[action::16][:2]:
                out.append(bytes([4 | action << 3 | scope]) + frame)
    hs, au, md = api.request_module(17), api.request_module(36), api.request_module(3)
    user, password = targets.SASL_USER
    plain = f"\0{user}\0{password}".encode()
    metadata = _frame(3, 12, md.MetadataRequest(topics=None))
    for version in (0, 1):
        shake = _frame(17, version, hs.SaslHandshakeRequest(mechanism="PLAIN"))
        for auth_version in (0, 1, 2):
            token = plain if version == 0 else _frame(36, auth_version, au.SaslAuthenticateRequest(auth_bytes=plain))
            out.append(b"\x02" + targets.SEP.join([shake, token, metadata]))
            if version == 0:
                break
        for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            shake = _frame(17, 1, hs.SaslHandshakeRequest(mechanism=mech))
            first = _frame(36, 2, au.SaslAuthenticateRequest(auth_bytes=f"n,,n={user},r=abcdefgh".encode()))
            out.append(b"\x02" + targets.SEP.join([shake, first]))
    return out


def _default_request(key: int) -> object:
    mod = api.request_module(key)
    return getattr(mod, mod.NAME)()


def _produced() -> list[bytes]:
    out = []
    for frame in _golden():
        req = api.decode_request(frame, allow_trailing=True)
        if req.api_key == 0:
            out += [bytes(p.records) for t in req.body.topic_data for p in t.partition_data if p.records]
    return out


def _built_batches() -> list[bytes]:
    rows = [(b"k1", b"v" * 40, [("h", b"x")]), (None, b"value"), (b"k3", None), (b"k4", b"abc" * 30)]
    out = []
    for codec in (rec.NONE, rec.GZIP, rec.SNAPPY, rec.LZ4, rec.ZSTD):
        out.append(rec.build_batch(rows, compression=codec, base_timestamp=1_700_000_000_000))
        out.append(rec.build_batch(rows[:1], compression=codec, producer_id=7, producer_epoch=1, base_sequence=0,
                                   transactional=True, base_timestamp=1_700_000_000_000))
    out.append(rec.build_control_batch(True, 7, 1, 5, 1_700_000_000_000))
    return out


def _built_message_sets() -> list[bytes]:
    rows = [(b"k", b"v" * 30), (None, b"value"), (b"k3", None)]
    out = []
    for magic in (0, 1):
        for codec in (rec.NONE, rec.GZIP, rec.SNAPPY, rec.LZ4):
            if rec.legacy_codec_allowed(codec, magic):
                out.append(rec.build_message_set(rows, magic, codec))
    return out


def seeds() -> dict[str, list[bytes]]:
    golden = _golden()
    frames = []
    for i, frame in enumerate(golden[::4]):
        stream = struct.pack(">i", len(frame)) + frame
        frames.append(bytes([len(targets.FRAME_LIMITS) - 1, i % 64]) + stream * 2)
    frames.append(bytes([4, 0]) + struct.pack(">i", 5000) + b"x" * 20)  # over a 4096 limit
    requests = _request_seeds()
    produced = _produced()
    v2 = [b for b in produced if len(b) > 16 and b[16] == 2] + _built_batches()
    legacy = [b for b in produced if len(b) > 16 and b[16] < 2] + _built_message_sets()
    batches = [b"\x00" + b for b in v2] + [b"\x01" + b for b in legacy]
    for b in v2:
        if len(b) > rec.HEADER_SIZE and not b[22] & 7:  # uncompressed: its records for the checkers
            count = int.from_bytes(b[57:61], "big") % 16
            batches.append(b"\x02" + bytes([count, 4]) + b[27:35] + b[rec.HEADER_SIZE :])
    payloads = [b"", b"a", bytes(range(256)), b"hello kafka " * 200, golden[0]]
    decompress = []
    for codec in (rec.NONE, rec.GZIP, rec.SNAPPY, rec.LZ4, rec.ZSTD):
        for i, payload in enumerate(payloads):
            decompress.append(bytes([codec, 7]) + rec.compress(codec, payload))
            if codec == rec.SNAPPY:
                decompress.append(bytes([codec, 0x80 | 7]) + rec.compress(codec, payload, xerial=True))
            if i == 3:
                decompress.append(bytes([codec, 3]) + rec.compress(codec, payload))  # over a 4096 cap
    return {"frames": frames, "requests": requests, "dispatch": _dispatch_seeds(requests), "batches": batches,
            "decompress": decompress, "lane": _lane_seeds(v2)}


def _lane_seeds(v2: list[bytes]) -> list[bytes]:
    """Batches for the lane target: each as it is and, if uncompressed, as an lz4 frame (with and
    without a changed byte); several in one request; an idempotent producer's run of batches."""
    out = []
    for i, b in enumerate(_lane_time(b) for b in v2):
        version, way = (i % 10), (i % 4) << 4
        settings = (0, 0, 0, 1, 2, 4 | 1)[i % 6]  # strict, envelope, reject reused sequences, a cap
        out.append(bytes([version | way, 0 if i % 3 else i % 32, 0, 0, 0, 0, 0, 0, 0, settings]) + b)  # mostly plain-0
        if len(b) > rec.HEADER_SIZE and not b[22] & 7:
            out.append(bytes([0x40 | version | way, 0, i % 64, 0, 0, 0, 0, 0, 0, 0]) + b)
            out.append(bytes([0x40 | version | way, 0, 0x40 | (i % 64), 11, 0x20, 0, 0, 0, 0, 0]) + b)
    plain = [b for b in v2 if len(b) > rec.HEADER_SIZE and not b[22] & 7][:4]
    out.append(bytes([9, 0x28, 0, 0, 0, 0, 0, 0, 0, 0]) + targets.SEP.join(plain))
    from tests.broker.test_produce_lane import NOW

    rows = [(b"k", b"v" * 30, [], NOW - 60_000)] * 3  # a fixed time: the same bytes (and CRC) at every build
    for sequence in (0, 3, 6, 6, 20):
        batch = _lane_time(rec.build_batch(rows, producer_id=1, producer_epoch=0, base_sequence=sequence))
        out.append(bytes([0x80 | 6, 0x20, 0, 0, 0, 0, 0, 0, 0, 2 if sequence == 6 else 0]) + batch)
    return out


def _lane_time(batch: bytes) -> bytes:
    """``batch`` moved in time to just before the lane target's clock (a broker refuses timestamps more
    than an hour ahead); the harness fixes the CRC."""
    from tests.broker.test_produce_lane import NOW

    if len(batch) < rec.HEADER_SIZE:
        return batch
    base, last = struct.unpack_from(">qq", batch, 27)
    return batch[:27] + struct.pack(">qq", NOW - 60_000, NOW - 60_000 + max(last - base, 0)) + batch[43:]


def main() -> None:
    for target, items in seeds().items():
        folder = CORPUS / target
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for item in items:
            (folder / hashlib.sha1(item).hexdigest()).write_bytes(item)
        print(f"{target}: {len(list(folder.iterdir()))} seeds, {sum(f.stat().st_size for f in folder.iterdir())} bytes")


if __name__ == "__main__":
    main()
