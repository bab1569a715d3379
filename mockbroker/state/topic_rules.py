"""Kafka's rules for topics: which names are legal, which topic configs exist and the type (and range)
of each value.  Broken rules raise KafkaError with Kafka's codes (INVALID_TOPIC_EXCEPTION, INVALID_CONFIG)."""

from __future__ import annotations

import re

from mockbroker.errors import ErrorCode, KafkaError

_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_LENGTH = 249
# Kafka's controller refuses a CreateTopics/CreatePartitions request adding more partitions than this.
MAX_PARTITIONS_PER_REQUEST = 10_000

# The topic-level configs Kafka accepts and the kind of value each takes (``list`` = comma list of
# cleanup policies).  Only those in config.TOPIC_TO_BROKER change what the mock does; the others are
# stored and reported back.  Kafka 3.x names that 4.0 dropped are still accepted.
KAFKA_TOPIC_CONFIGS: dict[str, type] = {
    "cleanup.policy": list, "compression.type": str, "compression.gzip.level": int,
    "compression.lz4.level": int, "compression.zstd.level": int, "delete.retention.ms": int,
    "file.delete.delay.ms": int, "flush.messages": int, "flush.ms": int,
    "follower.replication.throttled.replicas": str, "index.interval.bytes": int,
    "leader.replication.throttled.replicas": str, "local.retention.bytes": int, "local.retention.ms": int,
    "max.compaction.lag.ms": int, "max.message.bytes": int, "message.downconversion.enable": bool,
    "message.format.version": str, "message.timestamp.after.max.ms": int,
    "message.timestamp.before.max.ms": int, "message.timestamp.difference.max.ms": int,
    "message.timestamp.type": str, "min.cleanable.dirty.ratio": float, "min.compaction.lag.ms": int,
    "min.insync.replicas": int, "preallocate": bool, "remote.log.copy.disable": bool,
    "remote.log.delete.on.disable": bool, "remote.storage.enable": bool, "retention.bytes": int,
    "retention.ms": int, "segment.bytes": int, "segment.index.bytes": int, "segment.jitter.ms": int,
    "segment.ms": int, "unclean.leader.election.enable": bool,
}
_CLEANUP_POLICIES = ("delete", "compact")


def validate_topic_name(name: str) -> None:
    if not name or name in (".", ".."):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic name {name!r} is illegal")
    if len(name) > MAX_TOPIC_LENGTH:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic name is longer than {MAX_TOPIC_LENGTH}")
    if not _LEGAL_TOPIC.match(name):
        raise KafkaError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"topic name {name!r} has characters other than ASCII alphanumerics, '.', '_' and '-'",
        )


def _range_error(name: str, number: float) -> str | None:
    # imported when a value is checked: the catalogue (and dataclasses) stay out of the broker's start
    from mockbroker.state.config_catalogue import range_error

    return range_error(name, number)


def check_topic_config_value(name: str, value: str, kind: type) -> None:
    """Kafka's type and range check of a topic config value: INVALID_CONFIG."""
    text = value.strip()
    problem = None
    if kind is bool:
        ok = text.lower() in ("true", "false")
    elif kind is list:
        ok = all(p.strip() in _CLEANUP_POLICIES for p in text.split(","))
    elif kind in (int, float):
        try:
            number = kind(text)
        except ValueError:
            number = None
        problem = _range_error(name, number) if number is not None else None  # Kafka's range validators
        ok = number is not None and problem is None
    else:
        ok = True
    if not ok:
        raise KafkaError(ErrorCode.INVALID_CONFIG,
                         f"Invalid value {value} for configuration {name}" + (f": {problem}" if problem else ""))
