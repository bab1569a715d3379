"""The one error family every decoder in mockbroker raises on bad bytes.

Protocol (request/response) decoding and record decoding both raise subclasses of
:class:`CodecError`, which names what was wrong and where (a byte offset and, where known,
the field path).  Callers map them to Kafka error codes: :class:`CorruptRecordError` to
CORRUPT_MESSAGE, the rest of the records family to INVALID_RECORD (mockbroker.batches), and any
error in a request frame to a closed connection (as Kafka does for unparseable requests).
"""

from __future__ import annotations


class CodecError(ValueError):
    """Bytes that cannot be decoded. ``where`` is a byte offset (or -1 when unknown)."""

    def __init__(self, what: str, where: int = -1, path: str = "") -> None:
        self.what = what
        self.where = where
        self.path = path
        super().__init__(self._text())

    def _text(self) -> str:
        parts = [self.what]
        if self.path:
            parts.append(f"in {self.path}")
        if self.where >= 0:
            parts.append(f"at byte {self.where}")
        return " ".join(parts)

    def add_context(self, outer: str) -> None:
        """Prefix the field path with an enclosing name (used while unwinding nested decoders)."""
        self.path = f"{outer}.{self.path}" if self.path else outer
        self.args = (self._text(),)


class TruncatedError(CodecError):
    """The data ended before a field it announces."""


class InvalidLengthError(CodecError):
    """A length or count is negative (where null is not allowed) or larger than the data."""


class InvalidVarintError(CodecError):
    """A varint is longer than its type allows."""


class InvalidValueError(CodecError):
    """A value is out of range for its field (bad UTF-8, unknown magic, bad attribute bits...)."""


class UnsupportedCompressionError(CodecError):
    """A compression codec id that Kafka does not define (or that the format cannot carry)."""


class DecompressionError(CodecError):
    """Compressed data that does not decompress, or decompresses past the size cap."""


class DecompressionCapError(DecompressionError):
    """Compressed data that decompresses past the size cap (a "decompression bomb")."""


class CorruptRecordError(CodecError):
    """A CRC mismatch or an inconsistent record batch: Kafka answers CORRUPT_MESSAGE."""


class RecordCountError(CorruptRecordError):
    """A batch whose record count does not match the records it holds."""
