"""The public face of the wire codec: frames in, message objects out, and back.

A *frame* is what follows the 4-byte size prefix on the socket.  Request frames start with a
request header (v1, or v2 for flexible versions; the header's ClientId is never compact), response
frames with a response header (v0, or v1 for flexible versions, except ApiVersions which always
answers with v0 so that any client can read it).

Message modules are imported lazily the first time an API is used, so start-up stays fast.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Callable
from types import ModuleType
from typing import Any

from mockbroker.codec_errors import CodecError, InvalidLengthError, InvalidValueError, TruncatedError
from mockbroker.plain import Slotted
from mockbroker.protocol.generated import APIS, OTHERS
from mockbroker.protocol.runtime import EncodeError, Struct, assemble

__all__ = ["APIS", "assemble"]

API_VERSIONS_KEY = 18
_HEADER_PREFIX = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")
_I16 = struct.Struct(">h")
_SIZE_CORR = struct.Struct(">ii")
_REQ_PREFIX = struct.Struct(">ihhi")
_modules: dict[str, ModuleType] = {}
_request_modules: dict[int, ModuleType] = {}
_response_modules: dict[int, ModuleType] = {}
_fast_produce: ModuleType | None = None  # mockbroker.protocol.fast_produce, loaded with the first Produce


def _produce_codec() -> ModuleType:
    global _fast_produce
    from mockbroker.protocol import fast_produce

    _fast_produce = fast_produce
    return fast_produce


class UnknownApiError(CodecError):
    """A request header names an API key this broker does not know (Kafka closes the socket)."""


class UnsupportedVersionError(CodecError):
    """A request header names a version outside the API's range."""


def module(name: str) -> ModuleType:
    """The generated module for a message, by module name (``produce_request``) or message name."""
    mod = _modules.get(name)
    if mod is None:
        mod = importlib.import_module(f"mockbroker.protocol.generated.{OTHERS.get(name, name)}")
        _modules[name] = mod
    return mod


def api_name(api_key: int) -> str:
    return APIS[api_key][0] if api_key in APIS else f"api{api_key}"


def version_range(api_key: int) -> tuple[int, int]:
    return APIS[api_key][3]


def is_flexible(api_key: int, version: int) -> bool:
    first = APIS[api_key][4]
    return first is not None and version >= first


def request_module(api_key: int) -> ModuleType:
    mod = _request_modules.get(api_key)
    if mod is None:
        mod = _request_modules[api_key] = module(APIS[api_key][1])
    return mod


def response_module(api_key: int) -> ModuleType:
    mod = _response_modules.get(api_key)
    if mod is None:
        mod = _response_modules[api_key] = module(APIS[api_key][2])
    return mod


def request_header_version(api_key: int, version: int) -> int:
    return 2 if is_flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if is_flexible(api_key, version) else 0


class Request(Slotted):
    """A decoded request frame.  ``header_tags`` holds the header's tagged fields, if any."""

    __slots__ = ("api_key", "api_version", "body", "client_id", "correlation_id", "header_tags", "trailing_bytes")

    def __init__(self, api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: Struct,
                 header_tags: list[Any] | None = None, trailing_bytes: int = 0) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.body = body
        self.header_tags = header_tags
        self.trailing_bytes = trailing_bytes


def peek_header(frame: bytes | memoryview) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the first 8 bytes, for error replies."""
    if len(frame) < 8:
        raise TruncatedError("request frame shorter than its 8-byte header prefix", 0)
    return _HEADER_PREFIX.unpack_from(frame, 0)


def decode_message(mod: ModuleType, version: int, buf: memoryview, pos: int = 0) -> tuple[Any, int]:
    reader = mod.READERS.get(version)
    if reader is None:
        raise UnsupportedVersionError(f"{mod.NAME} has no version {version}", pos)
    try:
        return reader(buf, pos)  # type: ignore[no-any-return]  # the generated readers are unannotated
    except CodecError as exc:
        exc.add_context(f"{mod.NAME} v{version}")
        raise


def _read_client_id(buf: memoryview) -> tuple[str | None, int]:
    if len(buf) < 10:
        raise TruncatedError("request header ends before its client id", 8, "RequestHeader")
    n = _I16.unpack_from(buf, 8)[0]
    if n < 0:
        if n != -1:
            raise InvalidLengthError(f"invalid client id length {n}", 8, "RequestHeader")
        return None, 10
    end = 10 + n
    if end > len(buf):
        raise TruncatedError("client id runs past the end of the frame", 10, "RequestHeader")
    try:
        return str(buf[10:end], "utf-8"), end
    except UnicodeDecodeError:
        raise InvalidValueError("client id is not valid UTF-8", 10, "RequestHeader") from None


def decode_request(frame: bytes | memoryview, allow_trailing: bool = False,
                   prefix: tuple[int, int, int] | None = None) -> Request:
    """Decode a whole request frame (header and body); raises CodecError on any bad byte.

    Kafka ignores bytes after the end of a request body, and librdkafka relies on it (its
    "all topics" Metadata v9+ request carries three stray zero bytes).  With ``allow_trailing``
    they are counted in ``Request.trailing_bytes`` instead of rejected.  ``prefix`` is what
    :func:`peek_header` already read of this frame."""
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    api_key, version, corr = prefix or peek_header(buf)
    entry = APIS.get(api_key)
    if entry is None:
        raise UnknownApiError(f"unknown api key {api_key}", 0)
    lo, hi = entry[3]
    if not lo <= version <= hi:
        raise UnsupportedVersionError(f"{entry[0]} v{version} is outside {lo}-{hi}", 2)
    client_id, pos = _read_client_id(buf)
    tags = None
    flexible = entry[4] is not None and version >= entry[4]
    if flexible:
        if pos < len(buf) and buf[pos] == 0:
            pos += 1
        else:
            header, pos = decode_message(module("RequestHeader"), 2, buf)
            tags = header.unknown_tags
    fast = (_fast_produce or _produce_codec()).decode_request if api_key == 0 else _DECODERS.get(api_key)
    decoded = fast(buf, pos, version) if fast is not None else None  # None: not the usual case, or not built
    body, pos = decoded or decode_message(request_module(api_key), version, buf, pos)
    if pos != len(buf) and not allow_trailing:
        raise InvalidLengthError(f"{len(buf) - pos} bytes left over after {entry[0]} v{version} request", pos)
    return Request(api_key, version, corr, client_id, body, tags, len(buf) - pos)


def decode_response(api_key: int, version: int, frame: bytes | memoryview) -> tuple[int, Struct]:
    """Decode a response frame for a request we sent: (correlation id, body)."""
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    header, pos = decode_message(module("ResponseHeader"), response_header_version(api_key, version), buf)
    body, pos = decode_message(response_module(api_key), version, buf, pos)
    if pos != len(buf):
        raise InvalidLengthError(f"{len(buf) - pos} bytes left over after the response", pos)
    return header.correlation_id, body


def encode_message(mod: ModuleType, version: int, obj: Struct, out: bytearray, holes: list[Any]) -> None:
    writer = mod.WRITERS.get(version)
    if writer is None:
        raise EncodeError(f"{mod.NAME} has no version {version}")
    try:
        writer(obj, out, holes)
    except (struct.error, TypeError, AttributeError, ValueError, OverflowError) as exc:
        if isinstance(exc, EncodeError):
            raise EncodeError(f"{mod.NAME} v{version}: {exc}") from None
        raise EncodeError(f"{mod.NAME} v{version}: {type(exc).__name__}: {exc}") from exc


def _framed(out: bytearray, holes: list[Any]) -> list[Any]:
    if not holes:  # the usual answer: one buffer
        _SIZE.pack_into(out, 0, len(out) - 4)
        return [out]
    size = len(out) - 4 + sum(len(h) if not isinstance(h, memoryview) else h.nbytes for _, h in holes)
    _SIZE.pack_into(out, 0, size)
    return assemble(out, holes)


def encode_response(api_key: int, version: int, correlation_id: int, body: Struct) -> list[Any]:
    """A size-prefixed response frame as a list of buffers (for ``transport.writelines``)."""
    out = bytearray(_SIZE_CORR.pack(0, correlation_id))
    if response_header_version(api_key, version) == 1:
        out.append(0)  # no tagged fields in the response header
    holes: list[Any] = []
    if api_key == 0:
        fast = (_fast_produce or _produce_codec()).encode_response  # None: not built
        done = fast is not None and fast(body, version, out) is not None  # its None: not the usual answer
    else:
        encoder = _ENCODERS.get(api_key)
        done = encoder is not None and encoder(body, version, out, holes) is not None
    if not done:
        encode_message(response_module(api_key), version, body, out, holes)
    return _framed(out, holes)


# api key -> encoder(body, version, out, holes) that writes the answer's body (records buffers it does
# not copy as holes, as the generated writers leave them) and returns True, or writes nothing and
# returns None (the generated writer then does): answers that repeat, or a C encoder
Encoder = Callable[[Struct, int, bytearray, list[Any]], "bool | None"]
_ENCODERS: dict[int, Encoder] = {}


def set_response_encoder(api_key: int, encoder: Encoder) -> None:
    _ENCODERS[api_key] = encoder


# api key -> decoder(frame, pos, version) that reads a request body into the generated classes and
# returns (body, end), or None (the generated reader then decodes it or names the problem): a C reader
Decoder = Callable[[memoryview, int, int], "tuple[Struct, int] | None"]
_DECODERS: dict[int, Decoder] = {}


def set_request_decoder(api_key: int, decoder: Decoder) -> None:
    _DECODERS[api_key] = decoder


def encode_request(
    api_key: int, version: int, correlation_id: int, body: Struct, client_id: str | None = "mockbroker"
) -> list[Any]:
    """A size-prefixed request frame as a list of buffers."""
    out = bytearray(_REQ_PREFIX.pack(0, api_key, version, correlation_id))
    if client_id is None:
        out += b"\xff\xff"
    else:
        raw = client_id.encode()
        out += _I16.pack(len(raw))
        out += raw
    if is_flexible(api_key, version):
        out.append(0)
    holes: list[Any] = []
    encode_message(request_module(api_key), version, body, out, holes)
    return _framed(out, holes)


def to_bytes(parts: list[Any]) -> bytes:
    return b"".join(parts)
