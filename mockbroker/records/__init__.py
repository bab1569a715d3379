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
"""

from mockbroker.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    BatchHeader,
    RecordInput,
    batch_from_body,
    build_batch,
    build_control_batch,
    decode_batch,
    iter_batches,
    parse_batch_header,
    parse_control_record,
    parse_control_value,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    verify_batch,
)
from mockbroker.records.check import check_records
from mockbroker.records.compression import (
    DEFAULT_MAX_SIZE,
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    codec_name,
    compress,
    decompress,
)
from mockbroker.records.convert import legacy_to_v2, records_summary, v2_to_legacy
from mockbroker.records.legacy import (
    LegacyMessage,
    LegacyMessageInput,
    build_message_set,
    decode_message_set,
    legacy_codec_allowed,
)
from mockbroker.records.record import Record
from mockbroker.records.varint import read_varint, read_varlong, varint_bytes

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
