"""Runtime support for the generated message codec: the base class of every message struct,
unsigned-varint helpers, slow-path readers and the output-buffer assembly used by writers.

The generated modules under ``mockbroker.protocol.generated`` inline the hot paths (fixed-width
fields through precompiled ``struct.Struct`` objects, one-byte varints) and call into this module
for everything else.  Nothing here knows about sockets or broker state.
"""

from __future__ import annotations

import struct
from typing import Any, ClassVar

from mockbroker.codec_errors import (
    CodecError,
    InvalidLengthError,
    InvalidValueError,
    InvalidVarintError,
    TruncatedError,
)

ZERO_UUID = bytes(16)

# Records fields longer than this are not copied into the output: the writer leaves a "hole"
# and the final buffer list points at the caller's buffer instead (see ``assemble``).
HOLE_THRESHOLD = 256


class EncodeError(ValueError):
    """A message object that cannot be written in the requested version."""


class FieldSpec:
    """What the generator knew about one field: used by tests, ``repr`` and generic tooling."""

    __slots__ = (
        "attr",
        "default",
        "element",
        "flexible",
        "kind",
        "name",
        "nullable",
        "tag",
        "tagged",
        "versions",
    )

    def __init__(
        self,
        name: str,
        attr: str,
        kind: str,
        versions: tuple[int, int],
        nullable: tuple[int, int] | None,
        tagged: tuple[int, int] | None,
        tag: int | None,
        default: Any,
        element: Any,
        flexible: bool | None,
    ) -> None:
        self.name = name  # the spec's name, e.g. "TopicData"
        self.attr = attr  # the Python attribute, e.g. "topic_data"
        self.kind = kind  # "int16", "string", "array", "struct", ...
        self.versions = versions
        self.nullable = nullable
        self.tagged = tagged
        self.tag = tag
        self.default = default
        self.element = element  # element kind for arrays of primitives, or a Struct subclass
        self.flexible = flexible  # None: as the message; False: never compact (RequestHeader.ClientId)

    def present_in(self, version: int) -> bool:
        lo, hi = self.versions
        if not lo <= version <= hi:
            return False
        if self.tagged is not None:
            return self.tagged[0] <= version <= self.tagged[1]
        return True

    def nullable_in(self, version: int) -> bool:
        return self.nullable is not None and self.nullable[0] <= version <= self.nullable[1]

    def tagged_in(self, version: int) -> bool:
        return self.tagged is not None and self.tagged[0] <= version <= self.tagged[1]


class Struct:
    """Base of every generated struct: slots, equality over all fields, a readable repr."""

    __slots__: tuple[str, ...] = ()
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = ()

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    def __repr__(self) -> str:
        inner = ", ".join(
            f"{s}={getattr(self, s)!r}"
            for s in self.__slots__
            if not (s == "unknown_tags" and getattr(self, s) is None)
        )
        return f"{type(self).__name__}({inner})"

    __hash__ = None  # type: ignore[assignment]


def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    """Read an unsigned varint (at most 5 bytes, 32 bits) starting at ``pos``."""
    result = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise TruncatedError("data ends inside an unsigned varint", pos)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if result > 0xFFFFFFFF:
                raise InvalidVarintError("unsigned varint exceeds 32 bits", pos)
            return result, pos
        shift += 7
        if shift > 28:
            raise InvalidVarintError("unsigned varint longer than 5 bytes", pos)


def write_uvarint(out: bytearray, value: int) -> None:
    """Append an unsigned varint."""
    if value < 0:
        raise EncodeError(f"unsigned varint cannot hold {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def check_span(buf: memoryview, pos: int, length: int, what: str) -> int:
    """Return ``pos + length`` after checking the buffer holds that many bytes."""
    end = pos + length
    if end > len(buf):
        raise TruncatedError(f"{what} of {length} bytes runs past the end of the data", pos)
    return end


def bad_length(length: int, pos: int, what: str) -> CodecError:
    if length == -1:
        return InvalidLengthError(f"null {what}, but the field is not nullable in this version", pos)
    return InvalidLengthError(f"invalid {what} length {length}", pos)


def bad_count(count: int, pos: int) -> CodecError:
    return InvalidLengthError(f"array count {count} is larger than the remaining data", pos)


def decode_utf8(buf: memoryview, pos: int, end: int) -> str:
    try:
        return str(buf[pos:end], "utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidValueError(f"string is not valid UTF-8 ({exc.reason})", pos) from None


def read_primitive_array(buf: memoryview, pos: int, count: int, code: str) -> tuple[list[Any], int]:
    """Read ``count`` fixed-width values (``code`` is a struct code such as ``i`` or ``16s``)."""
    fmt = struct.Struct(f">{count}{code}") if code != "16s" else struct.Struct(">" + "16s" * count)
    end = check_span(buf, pos, fmt.size, "array")
    return list(fmt.unpack_from(buf, pos)), end


def wrap_error(exc: BaseException, path: str, pos: int) -> CodecError:
    """Turn a low-level failure inside a generated reader into a :class:`CodecError`."""
    if isinstance(exc, CodecError):
        exc.add_context(path)
        return exc
    if isinstance(exc, (struct.error, IndexError)):
        return TruncatedError("data ends inside a field", pos, path)
    return InvalidValueError(f"{type(exc).__name__}: {exc}", pos, path)


def write_tags(out: bytearray, tags: list[tuple[int, bytes]]) -> None:
    """Append a tagged-field section: count, then (tag, size, data) in tag order."""
    tags.sort(key=lambda t: t[0])
    write_uvarint(out, len(tags))
    for tag, data in tags:
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data


def write_unknown_tags(out: bytearray, unknown: list[tuple[int, bytes]] | None) -> None:
    if unknown:
        write_tags(out, list(unknown))
    else:
        out.append(0)


def assemble(out: bytearray, holes: list[tuple[int, Any]]) -> list[Any]:
    """Interleave the written bytes with the records buffers that were left as holes."""
    if not holes:
        return [out]
    view = memoryview(out)
    parts: list[Any] = []
    start = 0
    for at, buf in holes:
        if at > start:
            parts.append(view[start:at])
        parts.append(buf)
        start = at
    if start < len(out):
        parts.append(view[start:])
    return parts


class EncodedList(list):  # type: ignore[type-arg]
    """A list of structs that keeps its encoding, for answers that repeat (Metadata for many partitions).

    Generated writers hand an EncodedList to :meth:`encode_into` instead of looping over it; the bytes
    written by one element writer are kept and reused the next time.  The list and its structs must not
    change after the first encode.  Elements that leave holes (records) are never cached.  ``derived``
    lets other readers of the answer (the journal's error-code walk) keep what they computed from it.
    """

    __slots__ = ("_encoded", "derived")

    def __init__(self, items: Any = ()) -> None:
        super().__init__(items)
        self._encoded: dict[Any, bytes] = {}
        self.derived: dict[Any, Any] = {}

    def encode_into(self, writer: Any, out: bytearray, holes: list[tuple[int, Any]]) -> None:
        data = self._encoded.get(writer)
        if data is not None:
            out += data
            return
        start, had_holes = len(out), len(holes)
        for e in self:
            writer(e, out, holes)
        if len(holes) == had_holes:
            self._encoded[writer] = bytes(out[start:])


class _Missing:
    """Marks an omitted constructor argument whose default is a fresh mutable value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

_NULL_RECORDS_COMPACT = b"\x00"
_NULL_RECORDS = b"\xff\xff\xff\xff"
_I32 = struct.Struct(">i")


def write_records(out: bytearray, holes: list[tuple[int, Any]], value: Any, compact: bool) -> None:
    """Write a records field: ``None``, one bytes-like object, or a list of buffers (stored
    batches served as they are).  Large buffers become holes instead of being copied."""
    if value is None:
        out += _NULL_RECORDS_COMPACT if compact else _NULL_RECORDS
        return
    chunks = value if isinstance(value, (list, tuple)) else (value,)
    total = 0
    for c in chunks:
        total += c.nbytes if isinstance(c, memoryview) else len(c)
    if compact:
        write_uvarint(out, total + 1)
    else:
        out += _I32.pack(total)
    for c in chunks:
        if len(c) > HOLE_THRESHOLD:
            holes.append((len(out), c))
        else:
            out += c


def pack_array(code: str, values: list[Any]) -> bytes:
    """Pack a list of fixed-width values (``code`` is a struct code such as ``i`` or ``16s``)."""
    if code == "16s":
        for v in values:
            if len(v) != 16:
                raise EncodeError(f"uuid must be 16 bytes, got {len(v)}")
        return b"".join(values)
    return struct.pack(f">{len(values)}{code}", *values)

NULL16 = b"\xff\xff"
NULL32 = b"\xff\xff\xff\xff"
