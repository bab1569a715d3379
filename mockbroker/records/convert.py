"""Conversion between legacy message sets (magic 0/1) and v2 record batches.

* :func:`legacy_to_v2` up-converts a produce request's message set for storage.  Magic 0 has
  no timestamps, so its records get -1 (NO_TIMESTAMP) as Kafka does.
* :func:`v2_to_legacy` down-converts stored batches for an old fetcher, keeping absolute
  offsets.  Headers are dropped; magic 1 keeps timestamps (and LogAppendTime), magic 0 drops
  them.  Control batches are skipped, as Kafka skips them.  Each compressed batch becomes one
  compressed wrapper with the same codec, except codecs the target magic cannot carry (zstd
  at magic 0/1, lz4 at magic 0), which are written uncompressed.
* :func:`records_summary` gives (magic, count, first offset, last offset) for logging.

All decoding errors are :class:`~mockbroker.codec_errors.CodecError` subclasses.
"""

from __future__ import annotations

from mockbroker.codec_errors import InvalidValueError
from mockbroker.records.batch import Record, build_batch, decode_batch, iter_batches, parse_batch_header
from mockbroker.records.compression import DEFAULT_MAX_SIZE, NONE
from mockbroker.records.legacy import (
    ATTR_CODEC_MASK,
    LegacyMessage,
    build_message_set,
    decode_message_set,
    legacy_codec_allowed,
)

__all__ = ["legacy_to_v2", "records_summary", "v2_to_legacy"]

Buffer = bytes | bytearray | memoryview

_MAX_OFFSET_DELTA = 0x7FFFFFFF


def legacy_to_v2(
    buf: Buffer,
    *,
    compression: int | None = None,
    base_offset: int | None = None,
    max_size: int = DEFAULT_MAX_SIZE,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Convert a v0/v1 message set into v2 batches (concatenated); empty input gives b"".

    ``compression`` is the codec of the new batches; None keeps the first entry's codec.
    With ``base_offset`` the records get consecutive offsets from it in one batch (what a broker
    does on produce); without it their offsets are kept, and a new batch starts wherever
    offsets do not increase, a delta would overflow int32, or the timestamp type changes.
    """
    view = memoryview(buf)
    messages = decode_message_set(view, max_size)
    if not messages:
        return b""
    if compression is None:
        compression = view[17] & ATTR_CODEC_MASK
    if base_offset is not None:
        for index, message in enumerate(messages):
            message.offset = base_offset + index
    out = bytearray()
    run: list[LegacyMessage] = []
    for message in messages:
        if run and (
            message.offset <= run[-1].offset
            or message.offset - run[0].offset > _MAX_OFFSET_DELTA
            or max(message.timestamp_type, 0) != max(run[0].timestamp_type, 0)
        ):
            out += _batch_from(run, compression, partition_leader_epoch)
            run = []
        run.append(message)
    out += _batch_from(run, compression, partition_leader_epoch)
    return bytes(out)


def _batch_from(run: list[LegacyMessage], compression: int, partition_leader_epoch: int) -> bytes:
    base = run[0].offset
    base_timestamp = run[0].timestamp
    records = [
        Record(message.offset - base, message.timestamp - base_timestamp, message.key, message.value)
        for message in run
    ]
    return build_batch(
        records,
        base_offset=base,
        compression=compression,
        base_timestamp=base_timestamp,
        timestamp_type=max(run[0].timestamp_type, 0),
        partition_leader_epoch=partition_leader_epoch,
    )


def v2_to_legacy(buf: Buffer, magic: int, *, max_size: int = DEFAULT_MAX_SIZE) -> bytes:
    """Down-convert a records blob (v2 batches, possibly mixed with legacy entries) to ``magic``.

    Legacy entries already at ``magic`` are copied as they are; others are re-encoded.
    """
    if magic not in (0, 1):
        raise InvalidValueError(f"down-conversion target magic must be 0 or 1, not {magic}")
    out = bytearray()
    for _, entry_magic, entry in iter_batches(buf):
        if entry_magic == 2:
            header, records = decode_batch(entry, max_size=max_size)
            if header.is_control or not records:
                continue
            log_append = header.timestamp_type == 1
            base, base_ts, max_ts = header.base_offset, header.base_timestamp, header.max_timestamp
            messages = [
                (r.key, r.value, max_ts if log_append else base_ts + r.timestamp_delta, base + r.offset_delta)
                for r in records
            ]
            codec = header.compression
            log_append_time = max_ts if log_append else None
        elif entry_magic == magic:
            out += entry
            continue
        else:
            decoded = decode_message_set(entry, max_size)
            messages = [(m.key, m.value, m.timestamp, m.offset) for m in decoded]
            codec = entry[17] & ATTR_CODEC_MASK
            log_append_time = decoded[0].timestamp if decoded[0].timestamp_type == 1 else None
        if not legacy_codec_allowed(codec, magic):
            codec = NONE
        out += build_message_set(messages, magic, codec, log_append_time=log_append_time)
    return bytes(out)


def records_summary(buf: Buffer, *, allow_partial_tail: bool = False) -> tuple[int, int, int, int]:
    """(magic of the first entry, record count, first offset, last offset) of a records blob.

    An empty blob gives (-1, 0, -1, -1).  v2 batches are summarised from their headers only;
    legacy entries are decoded (compressed wrappers must be, to count their messages).
    """
    magic = -1
    count = 0
    first = last = -1
    for _, entry_magic, entry in iter_batches(buf, allow_partial_tail=allow_partial_tail):
        if entry_magic == 2:
            header = parse_batch_header(entry)
            entry_count, entry_first, entry_last = header.record_count, header.base_offset, header.last_offset
        else:
            messages = decode_message_set(entry)
            entry_count, entry_first, entry_last = len(messages), messages[0].offset, messages[-1].offset
        if magic == -1:
            magic, first = entry_magic, entry_first
        count += entry_count
        last = entry_last
    return magic, count, first, last
