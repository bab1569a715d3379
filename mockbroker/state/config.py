"""Broker and topic configuration, with Kafka's names and defaults.

Broker settings use the broker names (``log.message.timestamp.type``); a topic may override them
with the topic names (``message.timestamp.type``), as in Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.nearest import did_you_mean
from mockbroker.state.memory_cap import TOTAL_CAP, default_total_cap

INT64_MAX = 2**63 - 1

# broker name -> (default, type)
BROKER_DEFAULTS: dict[str, tuple[Any, type]] = {
    "auto.create.topics.enable": (True, bool),
    "num.partitions": (1, int),
    "default.replication.factor": (1, int),
    "message.max.bytes": (1048588, int),
    "socket.request.max.bytes": (104857600, int),
    "connections.max.idle.ms": (600000, int),  # read at broker start; < 0 never closes idle connections
    # Kafka: 50; a burst of connections (1,000 clients starting at once) needs more (server/broker.py)
    "socket.listen.backlog.size": (1024, int),
    # SO_SNDBUF / SO_RCVBUF of client connections, read at broker start; -1 keeps the OS's autotuned
    # buffers. Kafka: 102400 each, which cut 1 MiB messages from ~860 to ~650 MB/s produced on loopback
    "socket.send.buffer.bytes": (-1, int),
    "socket.receive.buffer.bytes": (-1, int),
    "log.message.timestamp.type": ("CreateTime", str),
    "log.message.timestamp.before.max.ms": (INT64_MAX, int),
    "log.message.timestamp.after.max.ms": (3600000, int),
    "compression.type": ("producer", str),
    "cluster.id": ("mockbroker-cluster", str),
    "fetch.max.bytes": (57671680, int),
    "group.initial.rebalance.delay.ms": (0, int),
    # JoinGroup answers INVALID_SESSION_TIMEOUT for a session timeout outside these (Kafka's defaults)
    "group.min.session.timeout.ms": (6000, int),
    "group.max.session.timeout.ms": (1800000, int),
    "group.consumer.session.timeout.ms": (45000, int),
    # Kafka: 5000; shorter here so KIP-848 rebalances settle fast in tests
    "group.consumer.heartbeat.interval.ms": (500, int),
    # bounds of a group's consumer.session.timeout.ms / consumer.heartbeat.interval.ms (GROUP configs).
    # Kafka: min 45000 and 5000; lower here, consistent with the mock's shorter heartbeat interval, so
    # tests may set short group session timeouts (Kafka's maxima: 60000 and 15000)
    "group.consumer.min.session.timeout.ms": (1000, int),
    "group.consumer.max.session.timeout.ms": (60000, int),
    "group.consumer.min.heartbeat.interval.ms": (100, int),
    "group.consumer.max.heartbeat.interval.ms": (15000, int),
    # share groups (KIP-932). Kafka's defaults, but for the heartbeat interval (Kafka: 5000; shorter here so
    # a member joining or leaving reaches the others fast in tests) and the lower bounds that must admit it
    # (Kafka: min session timeout 45000, min heartbeat interval 5000)
    "group.share.session.timeout.ms": (45000, int),
    "group.share.heartbeat.interval.ms": (500, int),
    "group.share.min.session.timeout.ms": (1000, int),
    "group.share.max.session.timeout.ms": (60000, int),
    "group.share.min.heartbeat.interval.ms": (100, int),
    "group.share.max.heartbeat.interval.ms": (15000, int),
    "group.share.record.lock.duration.ms": (30000, int),
    "group.share.min.record.lock.duration.ms": (15000, int),
    "group.share.max.record.lock.duration.ms": (60000, int),
    "group.share.delivery.count.limit": (5, int),
    "group.share.partition.max.record.locks": (2000, int),
    "group.share.max.share.sessions": (2000, int),
    "group.share.max.size": (200, int),
    # KIP-714 client telemetry: the largest PushTelemetry metrics payload accepted (Kafka's default)
    "telemetry.max.bytes": (1048576, int),
    # mock only: a client telemetry receiver is configured (Kafka: a metric.reporters class implementing
    # ClientTelemetry). Without one, ApiVersions leaves out GetTelemetrySubscriptions and PushTelemetry
    # (Kafka's ApiVersionsResponse) and pushed metrics are not kept; with it, they are (MockCluster.telemetry())
    "mock.telemetry.receiver": (False, bool),
    # the internal topics (mockbroker.state.internal_topics); replication capped at the brokers there are
    "offsets.topic.num.partitions": (50, int),
    "offsets.topic.replication.factor": (3, int),
    "offsets.topic.segment.bytes": (104857600, int),
    # committed offsets' expiry (mockbroker.state.offsets_expiry), as Kafka's group coordinator
    "offsets.retention.minutes": (10080, int),
    "offsets.retention.check.interval.ms": (600000, int),
    "transaction.state.log.num.partitions": (50, int),
    "transaction.state.log.replication.factor": (3, int),
    "transaction.state.log.segment.bytes": (104857600, int),
    "share.coordinator.state.topic.num.partitions": (50, int),
    "share.coordinator.state.topic.replication.factor": (3, int),
    "share.coordinator.state.topic.segment.bytes": (104857600, int),
    # ShareUpdate records written per share-partition before the next ShareSnapshot (Kafka's default)
    "share.coordinator.snapshot.update.records.per.snapshot": (500, int),
    "transaction.max.timeout.ms": (900000, int),
    "transactional.id.expiration.ms": (604800000, int),
    "producer.id.expiration.ms": (86400000, int),
    # mock only: how long a transaction stays PrepareCommit/PrepareAbort before its markers are written
    "mock.transaction.marker.delay.ms": (0, int),
    # mock only: how many requests the journal keeps (0 turns it off)
    "mock.journal.max.entries": (10000, int),
    # mock only: "strict" checks produced batches as Kafka does; "envelope" skips the CRC, the
    # decompression and the per-record checks (mockbroker.batches), for speed over strictness
    "mock.produce.validation": ("strict", str),
    # mock only: a batch repeating a stored batch's producer, epoch and sequence numbers but not its
    # bytes: "duplicate" answers it as Kafka does (the stored batch's offset; its records are not
    # stored), "reject" answers OUT_OF_ORDER_SEQUENCE_NUMBER so the client fails instead of losing them
    "mock.produce.reused.sequences": ("duplicate", str),
    # mock only: a folder keeping every partition's log and the metadata (mockbroker.store; "": memory
    # only), and whether each append there is fsynced (off: written to the OS, as Kafka leaves flushing)
    "mock.data.dir": ("", str),
    "mock.data.fsync": (False, bool),
    "max.incremental.fetch.session.cache.slots": (1000, int),
    # Kafka: 604800000 (7 days). The mock keeps data unless retention is asked for, so records
    # produced with fixed old timestamps (test fixtures) do not vanish at the first retention check
    "log.retention.ms": (-1, int),
    "log.retention.bytes": (-1, int),
    # segments (mockbroker.state.segments): Kafka's defaults. Retention and compaction work on whole
    # segments and never clean the active one, which rolls at log.segment.bytes or log.roll.ms (unset:
    # log.roll.hours) after its first record, so a test of either sets small segment.bytes / segment.ms
    "log.segment.bytes": (1073741824, int),
    "log.roll.ms": (None, int),
    "log.roll.hours": (168, int),
    "log.cleanup.policy": ("delete", str),
    # -- log, replica and feature admin (DescribeLogDirs, AlterPartitionReassignments) ---------
    # each broker's log directories, a comma list; "{id}" becomes the broker's node id
    "log.dirs": ("/var/lib/mockbroker/broker-{id}", str),
    # mock only: the size DescribeLogDirs v4+ reports for every log directory (usable = this minus its logs)
    "mock.log.dir.total.bytes": (1099511627776, int),
    # mock only: the memory cap on all stored record batches (state/memory_cap.py); -1: none
    TOTAL_CAP: (default_total_cap(), int),
    # mock only: how long a reassignment adding replicas stays in progress (0 = done at once)
    "mock.reassignment.delay.ms": (0, int),
    # retention and compaction (mockbroker.state.retention / compaction); the two intervals are
    # Kafka's names with shorter mock defaults (Kafka: 300000 and 15000) so tests see effects fast
    "log.cleaner.delete.retention.ms": (86400000, int),
    "log.cleaner.min.compaction.lag.ms": (0, int),
    # the cleaner (each log.cleaner.backoff.ms) cleans a log only once its dirty share is above this, or a
    # dirty record waited past the lag below, or a tombstone expired: Kafka's rule and defaults
    # (mockbroker.state.compaction); MockCluster.run_log_cleaner() cleans whatever the ratio (never the
    # active segment)
    "log.cleaner.min.cleanable.ratio": (0.5, float),
    "log.cleaner.max.compaction.lag.ms": (INT64_MAX, int),
    # elections (mockbroker.state.elections): an out-of-sync replica may lead a leaderless partition
    "unclean.leader.election.enable": (False, bool),
    # mock only: a broker going down hands a partition with no other live replica to another live
    # broker (true), or leaves it leaderless as Kafka does (false)
    "mock.leader.failover.to.any.broker": (True, bool),
    "log.retention.check.interval.ms": (1000, int),
    "log.cleaner.backoff.ms": (1000, int),
    # ACLs (mockbroker.state.acls): authorization is on when authorizer.class.name is non-empty
    "authorizer.class.name": ("", str),
    "super.users": ("", str),
    "allow.everyone.if.no.acl.found": (False, bool),
    # client quotas (mockbroker.state.quotas): Kafka's sample count and sample length
    "quota.window.num": (11, int),
    "quota.window.size.seconds": (1, int),
    # SASL (mockbroker.server.sasl); Kafka's default is GSSAPI, which the mock does not speak
    "sasl.enabled.mechanisms": ("PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", str),
    "connections.max.reauth.ms": (0, int),
    "connection.failed.authentication.delay.ms": (100, int),
    # mock only: the options Kafka's unsecured OAUTHBEARER validator takes as JAAS options
    # (unsecuredValidator*; listener.name.<l>.oauthbearer.sasl.jaas.config wins): mockbroker.server.oauthbearer
    "mock.oauthbearer.principal.claim.name": ("sub", str),
    "mock.oauthbearer.scope.claim.name": ("scope", str),
    "mock.oauthbearer.required.scope": ("", str),
    "mock.oauthbearer.allowable.clock.skew.ms": (0, int),
}

# topic name -> broker name it defaults from
TOPIC_TO_BROKER = {
    "max.message.bytes": "message.max.bytes",
    "message.timestamp.type": "log.message.timestamp.type",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "compression.type": "compression.type",
    "retention.ms": "log.retention.ms",
    "retention.bytes": "log.retention.bytes",
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
    "cleanup.policy": "log.cleanup.policy",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
}

COMPRESSION_TYPES = ("producer", "uncompressed", "none", "gzip", "snappy", "lz4", "zstd")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
PRODUCE_VALIDATION = ("strict", "envelope")
REUSED_SEQUENCES = ("duplicate", "reject")
CLEANUP_POLICIES = ("delete", "compact")

# name -> the values it may take (Kafka's ValidString.in; the mock's keys likewise)
ENUMS: dict[str, tuple[str, ...]] = {
    "compression.type": COMPRESSION_TYPES,
    "log.message.timestamp.type": TIMESTAMP_TYPES,
    "message.timestamp.type": TIMESTAMP_TYPES,
    "mock.produce.validation": PRODUCE_VALIDATION,
    "mock.produce.reused.sequences": REUSED_SEQUENCES,
}
# name -> the values each item of its comma list may take (Kafka's ValidList.in)
LIST_ENUMS: dict[str, tuple[str, ...]] = {"log.cleanup.policy": CLEANUP_POLICIES, "cleanup.policy": CLEANUP_POLICIES}
LISTENER_PREFIX = "listener.name."


def _catalogue() -> Any:
    """mockbroker.state.config_catalogue, loaded on first use: a broker started without configs does
    not need it (nor its dataclasses) before it answers (tests/broker/test_start_imports.py)."""
    from mockbroker.state import config_catalogue

    return config_catalogue


def broker_names() -> set[str]:
    """Every broker config name MockCluster(config=...) accepts, but the ``listener.name.`` ones."""
    cat = _catalogue()
    names: set[str] = set(BROKER_DEFAULTS) | set(cat.BROKER_CONFIGS) | set(cat.ACCEPTED_BROKER_NAMES)
    names.update(cat.kafka_broker_names())
    return names


def topic_names() -> set[str]:
    """Every topic config name a topic accepts (Kafka's, whether the mock acts on it or stores it)."""
    return set(_catalogue().TOPIC_CONFIGS) | set(TOPIC_TO_BROKER)




def unknown_config_message(kind: str, name: str) -> str:
    """``unknown broker config 'x': did you mean 'y'?`` (``kind``: broker or topic)."""
    cat = _catalogue()
    known = broker_names() if kind == "broker" else topic_names()
    message = f"unknown {kind} config {name!r}"
    other = cat.TOPIC_CONFIGS.get(name) if kind == "broker" else None
    if other is not None and other.synonym in known:
        return f"{message}: it is a topic config; the broker's default for it is {other.synonym!r}"
    topic_of = {spec.synonym: topic for topic, spec in cat.TOPIC_CONFIGS.items() if spec.synonym != topic}
    if kind == "topic" and name in topic_of:
        return f"{message}: it is a broker config; the topic's is {topic_of[name]!r}"
    near = did_you_mean(name, known)
    return f"{message}: did you mean {near!r}?" if near else message


def check_broker_name(name: Any) -> None:
    """INVALID_CONFIG unless ``name`` is a broker config the mock knows (see :func:`broker_names`)."""
    if not isinstance(name, str):
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"a config name must be a string, not {name!r}")
    if name.startswith(LISTENER_PREFIX) and name.count(".") >= 3:  # checked against the listeners (server.security)
        return
    if name in BROKER_DEFAULTS:
        return
    cat = _catalogue()
    if name not in cat.ACCEPTED_BROKER_NAMES and cat.broker_spec(name) is None:
        raise KafkaError(ErrorCode.INVALID_CONFIG, unknown_config_message("broker", name))


def check_topic_name(name: Any) -> None:
    """INVALID_CONFIG unless ``name`` is a topic config Kafka defines."""
    if not isinstance(name, str) or (name not in TOPIC_TO_BROKER and name not in _catalogue().TOPIC_CONFIGS):
        raise KafkaError(ErrorCode.INVALID_CONFIG, unknown_config_message("topic", str(name)))


def _convert(name: str, value: Any, kind: type) -> Any:
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    if value is None and name in BROKER_DEFAULTS and BROKER_DEFAULTS[name][0] is None:  # unset (log.roll.ms)
        return None
    text = str(value).strip()
    try:
        if kind is bool:
            if text.lower() not in ("true", "false"):
                raise ValueError(text)
            return text.lower() == "true"
        if kind is int:
            return int(text)
        if kind is float:
            return float(text)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"invalid value {value!r} for {name}: "
                         f"{'true or false' if kind is bool else 'a number'} expected") from None
    return text


def _kind_of(name: str) -> type:
    """The Python type a config's value converts to: the mock's for what it acts on, else str."""
    broker_name = TOPIC_TO_BROKER.get(name, name)
    return BROKER_DEFAULTS[broker_name][1] if broker_name in BROKER_DEFAULTS else str


def _check(name: str, value: Any) -> None:
    """Kafka's value checks (ConfigDef validators) on ``value``, already converted: one table each."""
    allowed = ENUMS.get(name)
    if allowed is not None and value not in allowed:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"invalid value {value!r} for {name}: one of {', '.join(allowed)}")
    items = LIST_ENUMS.get(name)
    if items is not None and not all(part.strip() in items for part in str(value).split(",")):
        raise KafkaError(ErrorCode.INVALID_CONFIG,
                         f"invalid value {value!r} for {name}: a comma list of {', '.join(items)}")
    cat = _catalogue()
    spec = cat.broker_spec(name) or cat.TOPIC_CONFIGS.get(name)
    number = value
    numeric = {cat.INT: int, cat.LONG: int, cat.SHORT: int, cat.DOUBLE: float}
    if isinstance(value, str) and spec is not None and spec.type in numeric:  # a Kafka name the mock stores
        try:
            number = numeric[spec.type](value.strip())
        except ValueError:
            raise KafkaError(ErrorCode.INVALID_CONFIG,
                             f"invalid value {value!r} for {name}: a number expected") from None
    elif isinstance(value, str) and spec is not None and spec.type == cat.BOOLEAN:
        if value.strip().lower() not in ("true", "false"):
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"invalid value {value!r} for {name}: true or false expected")
    if isinstance(number, (int, float)) and not isinstance(number, bool):
        problem = cat.range_error(name, number)
        if problem is not None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"invalid value {value!r} for {name}: {problem.lower()}")
    if name == "replica.selector.class":  # (fetch from followers, KIP-392: mockbroker.state.replica_selector)
        from mockbroker.state.replica_selector import check_selector

        check_selector(value)


class BrokerConfig:
    """Broker-wide settings: Kafka's defaults overridden by what the user passed."""

    # what the C produce lane reads on every request are slots (native/lanes/member_sites.h); the rest stays in __dict__
    __slots__ = ("__dict__", "__weakref__", "generation", "values")

    def __init__(self, overrides: Mapping[str, Any] | None = None, strict: bool = True) -> None:
        """``strict``: a name the mock does not know is refused, naming the nearest known one (names
        set later through AlterConfigs are not checked: Kafka stores custom broker configs)."""
        self.values: dict[str, Any] = {k: d for k, (d, _t) in BROKER_DEFAULTS.items()}
        self.generation = 0  # counts changes, so derived settings can be cached (change values through set)
        for key, value in (overrides or {}).items():
            if strict:
                check_broker_name(key)
            self.set(key, value)
        # what the cluster was started with (DescribeConfigs' STATIC_BROKER_CONFIG; reset returns to it)
        self.static: dict[str, Any] = {key: self.values[key] for key in (overrides or {})}

    def reset(self, key: str) -> None:
        """Back to the value the cluster was started with, else Kafka's (or the mock's) default."""
        if key in self.static:
            self.values[key] = self.static[key]
        elif key in BROKER_DEFAULTS:
            self.values[key] = BROKER_DEFAULTS[key][0]
        else:
            self.values.pop(key, None)
        self.generation += 1

    def set(self, key: str, value: Any) -> None:
        converted = _convert(key, value, _kind_of(key))
        _check(key, converted)
        self.values[key] = converted
        self.generation += 1

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


class TopicConfig:
    """A topic's overrides, falling back to the broker's settings."""

    def __init__(self, broker: BrokerConfig, overrides: Mapping[str, Any] | None = None) -> None:
        self.broker = broker
        self.overrides: dict[str, Any] = {}
        self._generation = 0
        for key, value in (overrides or {}).items():
            self.set(key, value)

    @property
    def generation(self) -> tuple[int, int]:
        """Changes so far to this topic's overrides and to the broker's settings (through set)."""
        return self._generation, self.broker.generation

    def set(self, key: str, value: Any) -> None:
        check_topic_name(key)
        converted = _convert(key, value, _kind_of(key))
        _check(key, converted)
        self.overrides[key] = converted
        self._generation += 1

    def reset(self, key: str) -> None:
        """Drop the topic's override of ``key`` (it follows the broker's setting again)."""
        if self.overrides.pop(key, None) is not None:
            self._generation += 1

    def replace(self, overrides: Mapping[str, Any]) -> None:
        """Make ``overrides`` the topic's whole set of overrides (AlterConfigs): others are reset."""
        fresh = TopicConfig(self.broker, overrides)  # checks every value before anything changes
        self.overrides = fresh.overrides
        self._generation += 1

    def __getitem__(self, key: str) -> Any:
        if key in self.overrides:
            return self.overrides[key]
        broker_key = TOPIC_TO_BROKER.get(key)
        if broker_key is None:
            raise KeyError(key)
        return self.broker[broker_key]

    def is_default(self, key: str) -> bool:
        return key not in self.overrides
