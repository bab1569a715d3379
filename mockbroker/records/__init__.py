"""Kafka record formats: v2 record batches, legacy v0/v1 message sets, and their codecs.

Everything here is pure (no I/O, no state).  Decoders raise only
:class:`~mockbroker.codec_errors.CodecError` subclasses on bad input, name the byte offset,
and cap decompressed sizes (:data:`DEFAULT_MAX_SIZE`, 64 MiB, unless told otherwise).

* :mod:`.compression` - ``compress`` / ``decompress`` for none, gzip, snappy, lz4, zstd
* :mod:`.batch` - v2 batch header, decode / verify / build, control batches, in-place
  rewrites of the fields a broker assigns, and ``iter_batches`` over a records blob
* :mod:`.record` - the :class:`Record` type and the record codec inside a batch
* :mod:`.legacy` - magic 0/1 message sets, including compressed wrappers
* :mod:`.convert` - up- and down-conversion between the two, and ``records_summary``
* :mod:`.varint` - zigzag varints

Names are imported from their submodule on first use (PEP 562), so importing one submodule (as the
broker's hot path does) does not load the others (legacy formats, conversion) at start-up.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {  # public name -> the submodule it lives in (imported on first use: start-up stays short)
    "BatchHeader": "batch",
    "HEADER_SIZE": "batch",
    "LOG_OVERHEAD": "batch",
    "NO_TIMESTAMP": "batch",
    "RecordInput": "batch",
    "batch_from_body": "batch",
    "build_batch": "batch",
    "build_control_batch": "batch",
    "decode_batch": "batch",
    "iter_batches": "batch",
    "parse_batch_header": "batch",
    "parse_control_record": "batch",
    "parse_control_value": "batch",
    "set_base_offset": "batch",
    "set_log_append_time": "batch",
    "set_partition_leader_epoch": "batch",
    "verify_batch": "batch",
    "check_records": "check",
    "DEFAULT_MAX_SIZE": "compression",
    "GZIP": "compression",
    "LZ4": "compression",
    "NONE": "compression",
    "SNAPPY": "compression",
    "ZSTD": "compression",
    "codec_name": "compression",
    "compress": "compression",
    "decompress": "compression",
    "legacy_to_v2": "convert",
    "records_summary": "convert",
    "v2_to_legacy": "convert",
    "LegacyMessage": "legacy",
    "LegacyMessageInput": "legacy",
    "build_message_set": "legacy",
    "decode_message_set": "legacy",
    "legacy_codec_allowed": "legacy",
    "Record": "record",
    "read_varint": "varint",
    "read_varlong": "varint",
    "varint_bytes": "varint",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'mockbroker.records' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"mockbroker.records.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "DEFAULT_MAX_SIZE",
    "GZIP",
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "LZ4",
    "NONE",
    "NO_TIMESTAMP",
    "SNAPPY",
    "ZSTD",
    "BatchHeader",
    "LegacyMessage",
    "LegacyMessageInput",
    "Record",
    "RecordInput",
    "batch_from_body",
    "build_batch",
    "build_control_batch",
    "build_message_set",
    "check_records",
    "codec_name",
    "compress",
    "decode_batch",
    "decode_message_set",
    "decompress",
    "iter_batches",
    "legacy_codec_allowed",
    "legacy_to_v2",
    "parse_batch_header",
    "parse_control_record",
    "parse_control_value",
    "read_varint",
    "read_varlong",
    "records_summary",
    "set_base_offset",
    "set_log_append_time",
    "set_partition_leader_epoch",
    "v2_to_legacy",
    "varint_bytes",
    "verify_batch",
]
