"""Checks of MockCluster's arguments, made before anything listens: each problem is one ValueError
whose message starts with the argument's name (``port: ...``), so the command line can name its flag."""

from __future__ import annotations

from collections.abc import Mapping

from mockbroker.errors import KafkaError
from mockbroker.state.topic_rules import validate_topic_name


def parse_topic_spec(spec: str) -> tuple[str, int | None]:
    """``orders:6`` -> ("orders", 6); ``orders`` -> ("orders", None); ValueError naming what is wrong."""
    name, sep, count = spec.partition(":")
    if not name:
        raise ValueError(f"{spec!r} names no topic (NAME[:PARTITIONS])")
    if not sep:
        return name, None
    try:
        partitions = int(count)
    except ValueError:
        raise ValueError(f"{spec!r}: the partition count must be a whole number, not {count!r}") from None
    if partitions < 1:
        raise ValueError(f"{spec!r}: a topic needs at least 1 partition, got {partitions}")
    return name, partitions


def _check_topics(topics: Mapping[str, int | None] | None) -> None:
    """ValueError naming the first initial topic with an illegal name or partition count."""
    for name, partitions in (topics or {}).items():
        if not isinstance(name, str):
            raise ValueError(f"topics: a topic name is a string, got {name!r}")
        try:
            validate_topic_name(name)
        except KafkaError as exc:
            raise ValueError(f"topics: {exc.message}") from None
        if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int)
                                       or partitions < 1):
            raise ValueError(f"topics: topic {name!r} needs at least 1 partition, got {partitions!r}")


def check_arguments(brokers: int, port: int, control_port: int | None,
                    topics: Mapping[str, int | None] | None) -> None:
    """ValueError unless the broker count, the ports and the initial topics are usable."""
    if isinstance(brokers, bool) or not isinstance(brokers, int) or brokers < 1:
        raise ValueError(f"brokers: a cluster needs at least one broker, got {brokers!r}")
    for what, value in (("port", port), ("control_port", control_port)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535):
            raise ValueError(f"{what}: a port is a number from 0 to 65535, got {value!r}")
    if port and port + brokers - 1 > 65535:
        raise ValueError(f"port: {brokers} brokers from port {port} go past port 65535")
    _check_topics(topics)
