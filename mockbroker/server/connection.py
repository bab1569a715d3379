"""One client connection: length-prefixed framing, strictly ordered request handling, backpressure.

Reading uses asyncio's BufferedProtocol: the socket writes into a staging buffer the broker's
connections share (get_buffer, recv and buffer_updated run back to back on the loop, and every whole
frame is copied out at once; a connection keeps only the few bytes of a partial frame).  A frame
larger than LARGE_FRAME gets a buffer of its own that the rest of it is read straight into, so a
1 MiB produce request is copied once (by the kernel), not three times, and an idle connection costs
no buffer at all.  Frames of 1 MiB and more get an anonymous mapping populated in one call
(MAP_POPULATE): about a tenth less broker CPU than a zero-filled bytearray for 1 MiB messages.
Smaller ones, with the C reader, a bytearray that is not zero-filled and whose pages are made present
in one call (_reading.frame_buffer): about a tenth less for librdkafka's 128 KiB produce requests.

Like Kafka, a connection handles one request at a time: the next frame is processed only after the
previous one has its response (or, for acks=0 produce, none).  Frames that are already buffered
while a long-polling fetch waits stay queued and are answered in order.  A frame larger than
``socket.request.max.bytes`` (or with a negative size) closes the connection before anything is
allocated for it; so does any request Kafka would refuse to parse.

Idle connections (Kafka's ``connections.max.idle.ms``): ``last_active`` is the monotonic time of
the last bytes read or queued for writing; the broker's one sweep task (mockbroker.server.idle)
closes connections idle longer than the limit.  A frame that starts but never completes gets no
timer of its own: as in Kafka, only the idle limit ends it (the log line says how much of it came).

The loop calls get_buffer and buffer_updated around every read of every connection, so they are in C
(mockbroker/native/lanes/_reading.c, the ``Reader`` base class): the usual read -- nothing queued, the produce
lane's borrow() answers every frame in it -- then makes no Python call at all.  ``PyReader`` is their
pure-Python twin (used without the extension or with MOCKBROKER_PURE_PYTHON set; ``PureConnection``
is a connection over it, for the tests that hold the two equal).  Both keep the reading state in the
same attributes (READ_FIELDS) and call the same Python methods for everything but the usual read.
"""

from __future__ import annotations

import asyncio
import logging
import mmap
import os
import socket
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, Self, TypeVar

from mockbroker import native
from mockbroker.errors import CloseConnection  # raised by dispatch, handlers and fault rules
from mockbroker.handlers.pending import Pending

log = logging.getLogger("mockbroker.server")

_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
MMAP_FRAME = 1024 * 1024  # frames this large get pages the kernel maps in one call (no per-page faults)


# a buffer for a large frame: a zero-filled bytearray (its pages fault in before recv), or with the C
# reader _reading.frame_buffer's, not zero-filled, its pages present: in huge pages where it can
_new_frame: Callable[[int], bytearray] = bytearray


def _frame_buffer(size: int) -> bytearray | mmap.mmap:
    """A buffer for one large frame whose pages exist before the socket writes into it: faulting
    them in one by one inside recv is the slowest way (perf: the kernel's page-fault path dominated)."""
    if size >= MMAP_FRAME and _POPULATE and _new_frame is bytearray:
        try:
            return mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _POPULATE)
        except OSError:  # out of mappings (vm.max_map_count): the plain way still works
            pass
    return _new_frame(size)


_SIZE = struct.Struct(">i")
_NO_FRAME = memoryview(b"")  # shared by every connection not reading a large frame
MAX_QUEUED_FRAMES = 64
STAGING_BYTES = 256 * 1024  # one per broker: small frames land here and are copied out whole
LARGE_FRAME = 32 * 1024  # a frame above this gets a buffer of its own, read into without copies

# dispatch(connection, frame) -> buffers to send, None (no response), or an awaitable of either
_Conn = TypeVar("_Conn")
Dispatch = Callable[[_Conn, memoryview], "list[Any] | Awaitable[list[Any] | None] | None"]


NO_FIELDS: tuple[str, ...] = ()  # the __slots__ of a mixin (see ConnectionMethods)
# the reading state: members of the C Reader, slots of PyReader; connection.py reads and writes them alike
READ_FIELDS = ("_busy", "_filled", "_frame", "_frame_view", "_left", "_paused_reading", "_poison", "_queue",
               "_staging", "borrow", "closed", "last_active")


class ReadingState(Protocol):
    """What the reading twins (_reading.c's Reader, PyReader) use of their connection: READ_FIELDS, the
    frame borrow() refused, and the ConnectionMethods they call."""

    _busy: bool
    _filled: int
    _frame: bytearray | mmap.mmap | None
    _frame_view: memoryview
    _left: bytes
    _paused_reading: bool
    _poison: str | None
    _queue: list[memoryview]
    _staging: memoryview
    borrow: Callable[..., int] | None
    closed: bool
    last_active: float
    lane_declined: memoryview | None

    def _failed_inside(self, exc: Exception) -> None: ...
    def _split_staging(self, pos: int, end: int) -> None: ...
    def _pause_reading(self) -> None: ...
    def _process(self) -> None: ...


class PyReader(asyncio.BufferedProtocol):
    """asyncio.BufferedProtocol's reading methods in Python: the twin of _reading.c's Reader (the methods
    they call, _split_staging, _failed_inside, _pause_reading and _process, are ConnectionMethods')."""

    __slots__ = READ_FIELDS
    # the slots' types, as ReadingState declares them
    _busy: bool
    _filled: int
    _frame: bytearray | mmap.mmap | None
    _frame_view: memoryview
    _left: bytes
    _paused_reading: bool
    _poison: str | None
    _queue: list[memoryview]
    _staging: memoryview
    borrow: Callable[..., int] | None
    closed: bool
    last_active: float

    def get_buffer(self: ReadingState, sizehint: int) -> memoryview:
        if self._frame is not None:  # the socket writes straight into the large frame's own buffer
            return self._frame_view[self._filled:]
        left = self._left
        if left:
            self._staging[: len(left)] = left
        return self._staging[len(left):]

    def buffer_updated(self: ReadingState, nbytes: int) -> None:
        if self.closed or self._poison is not None:
            return
        self.last_active = time.monotonic()
        if self._frame is not None:
            self._filled += nbytes
            if self._filled < len(self._frame):
                return
            frame: memoryview | None = self._frame_view  # the queue (or the lane) holds the frame from here
            self._frame, self._frame_view = None, _NO_FRAME
            if self.borrow is not None and not self._queue and not self._busy:
                try:
                    answer = self.borrow(self, 0, frame)
                except Exception as exc:
                    self._failed_inside(exc)
                    return
                if answer == 1:
                    frame = None
                elif answer < 0:  # the lane refused it: dispatch must not offer it again
                    self.lane_declined = frame
            if frame is not None:
                self._queue.append(frame)
        else:
            end, start = len(self._left) + nbytes, 0
            if self.borrow is not None and not self._queue and not self._busy:
                try:
                    start = self.borrow(self, end)
                except Exception as exc:
                    self._failed_inside(exc)
                    return
            if start == end:
                self._left = b""
            else:
                self._split_staging(start, end)
                if self.closed:
                    return
        if len(self._queue) > MAX_QUEUED_FRAMES:
            self._pause_reading()
        if not self._busy and (self._queue or self._poison is not None or self._paused_reading):
            self._process()


def _plain_socket_fd(transport: asyncio.BaseTransport) -> int:
    """The descriptor of a TCP transport's socket (-1: none), for listeners without TLS (connection_made
    asks only for those: the listeners are TCP servers, so no type check; uvloop makes the socket type an
    enum through Python's enum machinery, ~4k instructions a connection)."""
    fileno = getattr(transport.get_extra_info("socket"), "fileno", None)
    if fileno is None:
        return -1
    try:
        return int(fileno())
    except (OSError, ValueError, TypeError):
        return -1


def _huge_pages_pay(balloons: str = "/sys/bus/virtio/drivers/virtio_balloon") -> bool:
    """Whether large frames go in huge pages (mockbroker/native/lanes/frame_arena.h): MOCKBROKER_HUGE_PAGES=1
    or 0 decides; otherwise yes, unless the kernel hands free memory back to a hypervisor in 2 MiB
    blocks (virtio-balloon free page reporting, as on Firecracker VMs).  There a huge page comes back
    unbacked and its first touch costs the host a fault per 4 KiB: 22 MB kept in huge pages took
    30 ms of CPU, in small pages 10, in huge pages the host still backed 2.5."""
    chosen = os.environ.get("MOCKBROKER_HUGE_PAGES", "")
    if chosen in ("0", "1"):
        return chosen == "1"
    try:
        devices = [name for name in os.listdir(balloons) if name.startswith("virtio")]
    except OSError:
        return True
    for name in devices:
        try:
            with open(f"{balloons}/{name}/features") as features:
                bits = features.read()
        except OSError:
            continue
        if bits[5:6] == "1":  # VIRTIO_BALLOON_F_REPORTING
            return False
    return True


_Reader: type = PyReader
_reading = native.load("_reading")  # None: not built, MOCKBROKER_PURE_PYTHON, or an untested Python
if _reading is not None:
    _reading.set_limits(MAX_QUEUED_FRAMES, _NO_FRAME, LARGE_FRAME)
    _Reader = _reading.Reader
    _new_frame = _reading.frame_buffer
    if not _huge_pages_pay():
        _reading.use_arenas(0)


class ConnectionMethods:
    """Everything a connection does but get_buffer/buffer_updated: framing what the lane leaves, the
    request loop, writing, closing.  Mixed into Connection (C reading) and PureConnection."""

    # no storage of its own: a name, not a literal (), so that type checkers take the declarations below
    # (not an empty __slots__) as its fields
    __slots__ = NO_FIELDS
    # declared for readers and type checkers; the storage is READ_FIELDS + OWN_FIELDS
    _busy: bool
    _filled: int
    _frame: bytearray | mmap.mmap | None
    _frame_view: memoryview
    _left: bytes
    _paused_reading: bool
    _poison: str | None
    _queue: list[memoryview]
    _staging: memoryview
    closed: bool
    last_active: float

    def __init__(self, broker_id: int, dispatch: Dispatch[Self], max_request_bytes: int, staging: memoryview,
                 on_close: Callable[[Self], None] | None = None,
                 on_task: Callable[[asyncio.Future[Any] | Pending], None] | None = None,
                 listener: str = "PLAINTEXT", security_protocol: str = "PLAINTEXT") -> None:
        self.broker_id = broker_id
        self.listener = listener  # the listener's name (Kafka's ListenerName) and its security protocol
        self.security_protocol = security_protocol
        self.sasl: Any = None  # a mockbroker.server.sasl.SaslSession on SASL_* listeners
        self.on_task = on_task
        self.dispatch = dispatch
        # borrow(connection, end) -> offset: answers the leading whole Produce frames of staging[:end]
        # (the C produce lane: native/lanes/produce_lane_staging.h) when nothing is queued or pending; the
        # rest is split into frames and dispatched as usual.  ~offset: the lane refused the frame there.
        # borrow(connection, 0, frame) -> 1 answered, 0 left to dispatch, -1 refused: a large frame, whole.
        self.borrow: Callable[..., int] | None = None
        self.lane_declined: memoryview | None = None  # the copy of a frame borrow() refused, for dispatch
        self.max_request_bytes = max_request_bytes
        self.on_close = on_close
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self._staging = staging  # shared with the broker's other connections (see the module docstring)
        self._left = b""  # the start of a partial frame, put back at the staging buffer's start
        self._poison: str | None = None  # a bad frame size seen behind queued frames: close once they are answered
        self._frame: bytearray | mmap.mmap | None = None  # a large frame being read into its own buffer
        self._frame_view = _NO_FRAME
        self._filled = 0
        # frames read but not yet handled, oldest first: a list (56 bytes empty; a deque is ~600, and
        # what an idle connection costs is a benchmark row); at most MAX_QUEUED_FRAMES + a read's worth
        self._queue: list[memoryview] = []
        self._busy = False
        self.task: asyncio.Future[Any] | Pending | None = None
        self._paused_reading = False
        self._write_paused = False
        self._drained: asyncio.Future[None] | None = None
        self.closed = False
        self.last_active = time.monotonic()  # last bytes read or written (connections.max.idle.ms)
        self.client_software: str | None = None  # "name/version" from ApiVersions v3+
        # who the client is: "User:ANONYMOUS" until SASL authenticates it (Kafka's KafkaPrincipal string)
        self.principal = "User:ANONYMOUS"
        self.send_buffer_bytes = -1  # Kafka's socket.send.buffer.bytes (-1: the OS default), set by the broker
        # the plaintext TCP socket's descriptor while the connection is open, else -1: the produce lane sends
        # its answers straight to it when the transport holds nothing unsent (native/lanes/direct_send.h)
        self.socket_fd = -1

    # -- asyncio.Protocol -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # (a stream transport: the listeners are TCP)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        if self.send_buffer_bytes > 0:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer_bytes)
        if self.security_protocol in ("SSL", "SASL_SSL"):
            from mockbroker.server.security import ssl_principal

            self.principal = ssl_principal(transport) or self.principal
        else:
            self.socket_fd = _plain_socket_fd(transport)

    def connection_lost(self: Self, exc: Exception | None) -> None:
        partial = None if self.closed else self.partial_request()
        if partial is not None:  # the client went away in the middle of a request frame
            log.info("broker %s: %s disconnected with a partial request frame (%d of %s bytes received)",
                     self.broker_id, self.peer, partial[0], partial[1] if partial[1] >= 0 else "?")
        self.closed = True
        self.socket_fd = -1
        self._queue.clear()
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if self.on_close is not None:
            self.on_close(self)

    def pause_writing(self) -> None:
        self._write_paused = True
        self._pause_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._maybe_resume_reading()

    # -- reading: what the twins' buffer_updated calls ----------------------------------------
    def _failed_inside(self, exc: Exception) -> None:
        """Handling a request (dispatch, or the produce lane's borrow()) raised: a broker bug, said loudly;
        only this connection is dropped."""
        log.error("broker %s: request from %s failed inside the broker", self.broker_id, self.peer, exc_info=exc)
        self.close(f"internal error: {exc!r}")

    def _split_staging(self, pos: int, end: int) -> None:
        """Queue every whole frame in ``staging[pos:end]`` (each copied out: the buffer is shared) and
        keep the start of a partial one; a large partial frame moves to a buffer of its own.  A
        negative ``pos`` (``~pos``): borrow() refused the frame there, dispatch must not offer it again."""
        view, declined = self._staging, pos < 0
        if declined:
            pos = ~pos
        while end - pos >= 4:
            size = _SIZE.unpack_from(view, pos)[0]
            if size < 0 or size > self.max_request_bytes:
                reason = f"frame size {size} is outside 0..{self.max_request_bytes} (socket.request.max.bytes)"
                if not self._queue and not self._busy:
                    self.close(reason)
                    return
                # Kafka reads the next frame only after answering the one before: answer those first
                self._poison, self._left = reason, b""
                self._pause_reading()
                return
            if end - pos - 4 >= size:
                frame = memoryview(bytes(view[pos + 4 : pos + 4 + size]))
                if declined:
                    self.lane_declined, declined = frame, False
                self._queue.append(frame)
                pos += 4 + size
                continue
            if size > LARGE_FRAME:
                self._frame = _frame_buffer(size)
                self._frame_view = memoryview(self._frame)
                self._filled = end - pos - 4
                self._frame_view[: self._filled] = view[pos + 4 : end]
                pos = end
            break
        self._left = bytes(view[pos:end]) if pos < end else b""

    # -- request loop -----------------------------------------------------------------------
    def _process(self: Self) -> None:
        while self._queue and not self.closed:
            frame = self._queue.pop(0)
            try:
                result = self.dispatch(self, frame)
            except CloseConnection as exc:
                self.close(str(exc))
                return
            except Exception as exc:
                self._failed_inside(exc)
                return
            if isinstance(result, list):
                self.write(result)
            elif result is not None:
                self._busy = True
                # a Pending (a long poll) calls _async_done as it is settled; anything else is run as a Task
                self.task = result if type(result) is Pending else asyncio.ensure_future(result)
                self.task.add_done_callback(self._async_done)
                if self.on_task is not None:
                    self.on_task(self.task)
                return
        if self._poison is not None:
            if not self.closed:
                self.close(self._poison)
            return
        self._maybe_resume_reading()

    def _async_done(self, task: asyncio.Future[Any] | Pending) -> None:
        self._busy = False
        self.task = None
        if self.closed:
            return
        if task.cancelled():  # the broker stopping (teardown) or going down: nothing the client did
            self.close("request handling was cancelled", level=logging.DEBUG)
            return
        exc = task.exception()
        if isinstance(exc, CloseConnection):
            self.close(str(exc))
            return
        if exc is not None:
            log.error("broker %s: handler failed for %s", self.broker_id, self.peer, exc_info=exc)
            self.close(f"internal error: {exc!r}")
            return
        result = task.result()
        if result:
            self.write(result)
        self._process()

    def write(self, buffers: list[Any]) -> None:
        if self.transport is not None and not self.closed:
            self.last_active = time.monotonic()
            self.transport.writelines(buffers)

    @property
    def busy(self) -> bool:
        """A request is being answered (a long poll, a delayed or throttled answer)."""
        return self._busy

    def partial_request(self) -> tuple[int, int] | None:
        """(bytes received, bytes announced) of a request frame that has started but not completed."""
        if self._frame is not None:
            return self._filled + 4, len(self._frame) + 4
        left = self._left
        if not left:
            return None
        return len(left), (_SIZE.unpack_from(left)[0] + 4 if len(left) >= 4 else -1)

    async def drain(self) -> None:
        """Wait until the transport accepts more data (used by long-running writers)."""
        if self._write_paused and not self.closed:
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained

    def _pause_reading(self) -> None:
        if not self._paused_reading and self.transport is not None and not self.closed:
            self._paused_reading = True
            self.transport.pause_reading()

    def _maybe_resume_reading(self) -> None:
        if self._paused_reading and not self._write_paused and len(self._queue) <= MAX_QUEUED_FRAMES // 2:
            self._paused_reading = False
            if self.transport is not None and not self.closed:
                self.transport.resume_reading()

    def close_soon(self, reason: str, delay_s: float = 0.0) -> None:
        """Close after the response being written has gone out (Kafka's 'send this, then disconnect'),
        ``delay_s`` later (Kafka's connection.failed.authentication.delay.ms)."""
        asyncio.get_running_loop().call_later(delay_s, self.close, reason)

    def close(self, reason: str, abort: bool = False, level: int = logging.WARNING) -> None:
        """Close with a log line (at ``level``); ``abort`` drops responses not yet taken by the client
        (idle expiry)."""
        if self.closed:
            return
        log.log(level, "broker %s: closing connection from %s: %s", self.broker_id, self.peer, reason)
        self.closed = True
        self.socket_fd = -1
        self._queue.clear()
        if self.transport is not None:
            if abort:
                self.transport.abort()
            else:
                self.transport.close()


OWN_FIELDS = ("_drained", "_write_paused", "broker_id", "client_software", "dispatch", "lane_declined", "listener",
              "max_request_bytes", "on_close", "on_task", "peer", "principal", "sasl", "security_protocol",
              "send_buffer_bytes", "socket_fd", "task", "transport")


class Connection(ConnectionMethods, _Reader, asyncio.BufferedProtocol):
    """A client connection; reads through _reading.c's Reader where it is built."""

    __slots__ = OWN_FIELDS


class PureConnection(ConnectionMethods, PyReader):
    """The same connection reading through PyReader (the twin the tests hold equal to the C Reader)."""

    __slots__ = OWN_FIELDS
