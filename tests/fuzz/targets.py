"""The fuzz targets: one function per target, each taking the fuzzer's bytes and raising only on a finding.

Every target catches exactly what the code under test may raise on bad input (the codec's
:class:`~mockbroker.codec_errors.CodecError` family, a closed connection where Kafka closes one)
and lets anything else escape: atheris reports an escaped exception as a crash.  Properties that
do not raise on their own (a frame buffer larger than ``socket.request.max.bytes``, decompressed
output above its cap, the C record checker disagreeing with the Python one) are asserted.

Input layouts (the corpus builder, ``tests/fuzz/build_corpus.py``, writes seeds in them):

* ``frames``: byte 0 picks ``socket.request.max.bytes`` (:data:`FRAME_LIMITS`) and with bit 7 hands
  each read (and each large frame, whole) to the C produce lane's ``borrow`` first (as a broker's
  connections do), byte 1 the read sizes; the rest is the byte stream a client sends; both readers
  (the C one and PureConnection's) get it.
* ``requests`` and ``dispatch``: byte 0 even: the rest is a whole request frame (header and body);
  odd: bytes 1-2 pick one of the (api key, version) pairs the broker registers, a valid request
  header for it is prepended to the rest (the body).  ``dispatch`` inputs may hold several frames
  separated by :data:`SEP` (the first as above, the others whole frames); byte 0 bit 1 puts them on
  a SASL_PLAINTEXT connection, bit 2 adds a fault rule on every request (bits 3-5: the action from
  :data:`FAULT_ACTIONS`, bit 7: error scope "partition"); without bit 2, bit 3 offers each frame to
  the C produce lane's ``borrow`` before dispatching it: the even ones from the connection's staging
  buffer, the odd ones whole in a buffer of their own (as a large frame comes).
* ``batches``: byte 0's low two bits pick the format (0 and 3: a v2 batch, 1: a v0/v1 message
  set, 2: bare records for the record checkers: count, flags, base timestamp, then the records), bit 2
  has the harness fix CRCs and lengths so mutations get past them, bit 3 allows a partial tail; the
  rest is the data.
* ``decompress``: byte 0 the codec id (0-4, 5 unknown), byte 1 the cap (``record_targets.CAPS``),
  the rest the compressed data.
* ``lane``: the C produce lane against the Python Produce handler (layout: lane_target.py).

The ``batches`` and ``decompress`` targets live in record_targets.py (with :class:`Finding`), ``lane`` in
lane_target.py.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Callable
from typing import Any

from mockbroker.codec_errors import CodecError
from mockbroker.protocol import api, fast_produce
from mockbroker.server.connection import LARGE_FRAME, STAGING_BYTES, CloseConnection, Connection, PureConnection
from tests.fuzz.lane_target import fuzz_lane
from tests.fuzz.record_targets import SEP, Finding, fuzz_batches, fuzz_decompress

FRAME_LIMITS = (0, 1, 8, 100, 4096, LARGE_FRAME - 1, LARGE_FRAME, LARGE_FRAME + 1, 200_000, 1 << 20, 3 << 20)
_SIZE = struct.Struct(">i")



def quiet_logs() -> None:
    """For fuzz runs (run.py): closes are expected by the million. Not at import: the regression tests
    import this module inside pytest, where other tests read mockbroker's log lines."""
    logging.getLogger("mockbroker").setLevel(logging.CRITICAL)


def _registered() -> list[tuple[int, int]]:
    from mockbroker.handlers import load_all
    from mockbroker.handlers.registry import HANDLERS

    load_all()

    return [(h.api_key, v) for h in sorted(HANDLERS.values(), key=lambda h: h.api_key)
            for v in range(h.min_version, h.max_version + 1)]


def preload() -> None:
    """Import every handler and generated request/response module now (so atheris instruments them)."""
    for key, _ in _registered():
        api.request_module(key)
        api.response_module(key)
    api.module("RequestHeader")
    api.module("ResponseHeader")


# -- the frame reader ----------------------------------------------------------------------------

class _Transport:
    def __init__(self) -> None:
        self.closed = False
        self.paused = False

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 1)

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def writelines(self, buffers: list[Any]) -> None: ...

    def write(self, data: Any) -> None: ...


def _borrow() -> Any:
    """The C produce lane's borrow(broker, connection, end), None when it is not built."""
    from mockbroker.handlers import produce_lane

    return produce_lane.borrow_function()


_FRAMES_BROKER: Any = None  # the frames target's broker for borrow (kept between inputs: its state grows)


def _recording_borrow(seen: list[bytes]) -> Callable[[Connection, int], int] | None:
    """borrow(), recording the frames it consumed (in order, into ``seen``) and checking its answer."""
    global _FRAMES_BROKER
    real = _borrow()
    if real is None:
        return None
    if _FRAMES_BROKER is None:
        _FRAMES_BROKER = fresh_broker()

    def borrow(conn: Connection, end: int, frame: memoryview | None = None) -> int:
        if frame is not None:  # a large frame, whole: 1 answered, 0 dispatched, -1 refused
            got = real(_FRAMES_BROKER, conn, end, frame)
            if got not in (-1, 0, 1):
                raise Finding(f"borrow() answered {got} for a whole frame")
            if got == 1:
                seen.append(bytes(frame))
            return got
        got = real(_FRAMES_BROKER, conn, end)
        upto = ~got if got < 0 else got
        if not 0 <= upto <= end:
            raise Finding(f"borrow() answered {got} for {end} bytes")
        taken, _ = _reference_frames(bytes(conn._staging[:upto]), conn.max_request_bytes)
        if sum(4 + len(f) for f in taken) != upto:
            raise Finding(f"borrow() stopped at {upto}, inside a frame")
        seen.extend(taken)
        return got

    return borrow


def _reference_frames(stream: bytes, limit: int) -> tuple[list[bytes], bool]:
    """What a correct reader makes of ``stream``: its whole frames, and whether it must close."""
    frames, pos = [], 0
    while len(stream) - pos >= 4:
        size = _SIZE.unpack_from(stream, pos)[0]
        if size < 0 or size > limit:
            return frames, True
        if len(stream) - pos - 4 < size:
            break
        frames.append(stream[pos + 4 : pos + 4 + size])
        pos += 4 + size
    return frames, False


_STAGING = memoryview(bytearray(STAGING_BYTES))


def fuzz_frames(data: bytes) -> None:
    """Feed a byte stream to a Connection in reads of fuzzer-chosen sizes: it must cut exactly the
    frames a reference reader finds, close only on a bad size, and never allocate a frame buffer
    above socket.request.max.bytes.  Both readers (the C Reader and PureConnection's Python twin) get
    the same reads and must do the same."""
    if len(data) < 2:
        return
    limit = FRAME_LIMITS[data[0] % len(FRAME_LIMITS)]
    read = (data[1] % 64) * 37 + 1  # reads of 1..2332 bytes
    stream = data[2:]
    results = [_read_frames(cls, limit, read, stream, bool(data[0] & 0x80)) for cls in (Connection, PureConnection)]
    if results[0] != results[1]:
        raise Finding(f"the C reader and the Python twin differ: {results[0]!r:.200} vs {results[1]!r:.200}")


def _read_frames(cls: type, limit: int, read: int, stream: bytes, borrow: bool) -> tuple[list[bytes], bool]:
    """One reader's frames and whether it closed, checked against the reference reader."""
    seen: list[bytes] = []
    conn = cls(0, lambda c, frame: seen.append(bytes(frame)), limit, _STAGING)
    if borrow:
        conn.borrow = _recording_borrow(seen)
    transport = _Transport()
    conn.connection_made(transport)
    pos = 0
    while pos < len(stream) and not conn.closed:
        buf = conn.get_buffer(-1)
        n = min(read, len(buf), len(stream) - pos)
        if n == 0:
            raise Finding("get_buffer returned an empty buffer with bytes still to read")
        buf[:n] = stream[pos : pos + n]
        conn.buffer_updated(n)
        pos += n
        if conn._frame is not None and len(conn._frame) > limit:
            raise Finding(f"frame buffer of {len(conn._frame)} bytes above the limit {limit}")
    expected, must_close = _reference_frames(stream, limit)
    # before a bad size closes the connection, the whole frames of that same read may go unanswered
    # (the client gets no answer to them either way): what was dispatched must be a prefix
    if seen != expected and not (must_close and seen == expected[: len(seen)]):
        raise Finding(f"{cls.__name__}: frames differ: got {len(seen)}, expected {len(expected)}")
    if conn.closed != must_close or transport.closed != must_close:
        raise Finding(f"{cls.__name__}: connection closed={conn.closed}, expected {must_close}")
    return seen, conn.closed


# -- request decoders ----------------------------------------------------------------------------

_PAIRS: list[tuple[int, int]] = []


def _frame_from(data: bytes) -> bytes | None:
    """The request frame an input stands for (see the module docstring), None if too short."""
    if not data:
        return None
    if data[0] % 2 == 0:
        return data[1:]
    if len(data) < 3:
        return None
    if not _PAIRS:
        _PAIRS.extend(_registered())
    key, version = _PAIRS[((data[1] << 8) | data[2]) % len(_PAIRS)]
    header = struct.pack(">hhih", key, version, 7, 4) + b"fuzz"
    if api.is_flexible(key, version):
        header += b"\x00"  # no header tags
    return header + data[3:]


def _produce_pair(frame: bytes) -> None:
    """The C Produce decoder (where built) decodes a Produce body as the generated reader does, or declines."""
    if fast_produce.decode_request is None or len(frame) < 10:
        return
    key, version, _corr = struct.unpack_from(">hhi", frame)
    if key != 0 or not 0 <= version <= 13:
        return
    view = memoryview(frame)
    try:
        _client_id, pos = api._read_client_id(view)
    except CodecError:
        return
    if version >= 9:  # the flexible header's tag count: only an empty one here
        if pos >= len(frame) or frame[pos] != 0:
            return
        pos += 1
    got = fast_produce.decode_request(view, pos, version)
    try:
        expected = api.request_module(0).READERS[version](view, pos)
    except CodecError:
        expected = None
    if got is not None and (expected is None or got[1] != expected[1] or got[0] != expected[0]):
        raise Finding(f"C Produce v{version} decoder says {got}, the generated reader {expected}")


def fuzz_requests(data: bytes) -> None:
    """api.decode_request on a request frame: a Request or a CodecError, nothing else; and what
    decodes re-encodes to bytes that decode and encode to the same bytes again.  A Produce frame also
    goes through the C decoder and the generated reader separately, which must agree."""
    frame = _frame_from(data)
    if frame is None:
        return
    _produce_pair(frame)
    request = None
    for trailing in (False, True):
        try:
            request = api.decode_request(frame, allow_trailing=trailing)
        except CodecError:
            continue
        if not trailing and request.trailing_bytes:
            raise Finding("trailing bytes accepted without allow_trailing")
    if request is None:
        return
    # the encoder writes unknown tags in tag order, so compare encodings: encode(decode(e)) == e
    once = _encode(request)
    if _encode(api.decode_request(once)) != once:
        raise Finding(f"api {request.api_key} v{request.api_version} does not re-encode to the same request")


def _encode(request: api.Request) -> bytes:
    return api.to_bytes(api.encode_request(request.api_key, request.api_version, request.correlation_id,
                                           request.body, request.client_id))[4:]


# -- the whole dispatch path ---------------------------------------------------------------------

_LOOP: asyncio.AbstractEventLoop | None = None
DISPATCH_WAIT_S = 0.02  # how long an answer that waits (long polls, joins) may take before it is dropped
MAX_FRAMES = 8
SASL_USER = ("alice", "alice-secret")
_CREDENTIALS: Any = None


def _credentials() -> Any:
    """A copy of one store holding SASL_USER (its SCRAM credentials are derived once, not per input)."""
    global _CREDENTIALS
    from mockbroker.state.credentials import CredentialStore

    if _CREDENTIALS is None:
        _CREDENTIALS = CredentialStore()
        _CREDENTIALS.add_user(*SASL_USER)
    store = CredentialStore()
    store._plain = dict(_CREDENTIALS._plain)
    store._scram = {user: dict(creds) for user, creds in _CREDENTIALS._scram.items()}
    return store


def fresh_broker() -> Any:
    """A BrokerServer (not listening) over a fresh three-broker ClusterState with a few topics."""
    from mockbroker.server.broker import BrokerServer
    from mockbroker.state.cluster import ClusterState

    state = ClusterState({"group.initial.rebalance.delay.ms": 0})
    for node in range(3):
        state.add_broker(node, "127.0.0.1", 19092 + node)
    state.create_topic("orders", 6, 3)
    state.create_topic("compacted", 2, 1, {"cleanup.policy": "compact"})
    state.create_topic("t", 1, 1)
    return BrokerServer(state, 0, "127.0.0.1", 19092)


FAULT_ACTIONS = ("error", "delay", "drop_before", "drop_after", "throttle", "corrupt_crc", "truncate", "observe")


def _add_fault(broker: Any, mode: int) -> None:
    """A fault rule on every request (byte 0 bit 2): bits 3-5 pick the action, bit 7 the error scope."""
    action = FAULT_ACTIONS[(mode >> 3) & 7]
    broker.cluster.faults.add(action=action, times=None, error=6 if action == "error" else 0,
                              scope="partition" if mode & 0x80 else "request", delay_ms=1, throttle_ms=1)


async def _dispatch_all(frames: list[bytes], sasl: bool, mode: int = 0) -> None:
    from mockbroker.server.dispatch import dispatch
    from mockbroker.server.sasl import SaslSession, enabled_mechanisms

    broker = fresh_broker()
    protocol = "SASL_PLAINTEXT" if sasl else "PLAINTEXT"
    conn = Connection(0, lambda c, f: None, 1 << 20, _STAGING, listener=protocol, security_protocol=protocol)
    conn.connection_made(_Transport())  # type: ignore[arg-type]
    if mode & 4:
        _add_fault(broker, mode)
    if sasl:
        broker.cluster.credentials = _credentials()
        conn.sasl = SaslSession(broker.cluster.credentials, enabled_mechanisms(broker.cluster.config), 0)
    try:
        borrow = _borrow() if mode & 0x0C == 0x08 else None
        for i, frame in enumerate(frames):
            if conn.closed:
                return
            if borrow is not None and len(frame) + 4 <= len(_STAGING) and i % 2 == 0:
                _STAGING[:4] = _SIZE.pack(len(frame))
                _STAGING[4 : 4 + len(frame)] = frame
                got = borrow(broker, conn, len(frame) + 4)
                _STAGING[: 4 + len(frame)] = bytes(4 + len(frame))  # a view the lane kept would now read zeros
                if got == len(frame) + 4:
                    broker.cluster.tick()
                    continue
                if got not in (0, ~0):
                    raise Finding(f"borrow() answered {got} for one whole frame of {len(frame)} bytes")
                frame = memoryview(frame)
                if got == ~0:
                    conn.lane_declined = frame
            elif borrow is not None:  # as a large frame comes: whole, in its own buffer
                own = memoryview(bytearray(frame))
                got = borrow(broker, conn, 0, own)
                if got == 1:
                    broker.cluster.tick()
                    continue
                if got not in (0, -1):
                    raise Finding(f"borrow() answered {got} for a whole frame of {len(frame)} bytes")
                frame = own
                if got == -1:
                    conn.lane_declined = frame
            result = dispatch(broker, conn, memoryview(frame) if isinstance(frame, bytes) else frame)
            if result is not None and not isinstance(result, list):
                try:
                    result = await asyncio.wait_for(result, DISPATCH_WAIT_S)
                except TimeoutError:
                    return  # still waiting (a long poll, a join): a wait is an allowed answer
            if result is not None and not isinstance(result, list):
                raise Finding(f"dispatch answered {type(result).__name__}")
            broker.cluster.tick()  # time-driven work (rebalances, reassignments, expiry) on what it did
    except CloseConnection:
        pass
    finally:
        for task in asyncio.all_tasks() - {asyncio.current_task()}:
            task.cancel()


def fuzz_dispatch(data: bytes) -> None:
    """dispatch() on a sequence of request frames (split at SEP; byte 0 bit 1: a SASL listener's
    connection, where user alice/alice-secret exists; bit 2: a fault rule) against a fresh cluster:
    answers, no answer, or a closed connection; any other exception (a handler bug on decoded
    garbage, a fault action failing on it) is a finding."""
    global _LOOP
    if not data:
        return
    first, *rest = data.split(SEP, MAX_FRAMES - 1)
    frame = _frame_from(first)
    if frame is None:
        return
    if _LOOP is None:
        _LOOP = asyncio.new_event_loop()
    _LOOP.run_until_complete(_dispatch_all([frame, *rest], bool(data[0] & 2), data[0]))


TARGETS: dict[str, Callable[[bytes], None]] = {
    "frames": fuzz_frames,
    "requests": fuzz_requests,
    "dispatch": fuzz_dispatch,
    "batches": fuzz_batches,
    "decompress": fuzz_decompress,
    "lane": fuzz_lane,
}
