"""Random identifiers (topic ids and group member ids), and Kafka's text form of a Uuid.

Version-4 UUIDs made from ``os.urandom`` here, as :func:`uuid.uuid4` makes them: the uuid module
imports platform and costs a few milliseconds of broker start for three one-line uses.
"""

from __future__ import annotations

import base64
import os


def uuid4_bytes() -> bytes:
    """16 random bytes with the version (4) and variant (RFC 4122) bits of a uuid4."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return bytes(raw)


def uuid4_text() -> str:
    """A uuid4 in its usual 8-4-4-4-12 hex form."""
    h = uuid4_bytes().hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def uuid_text(raw: bytes | bytearray | memoryview) -> str:
    """A Uuid (a topic id, a client instance id) as Kafka prints it (Uuid.toString: URL-safe base64 of the
    16 bytes, no padding)."""
    return base64.urlsafe_b64encode(bytes(raw)).decode("ascii").rstrip("=")
