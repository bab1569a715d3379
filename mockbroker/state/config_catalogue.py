"""Kafka's topic and broker config names, as DescribeConfigs reports them: type, default (as Kafka
prints it), one line of documentation, and for topic configs the broker config they default from;
for broker configs whether Kafka lets AlterConfigs change them (per broker and cluster-wide) and
whether they are sensitive (their values are never sent back).

Defaults are Kafka 4.x's; where the mock's own default differs (config.BROKER_DEFAULTS: shorter
``log.retention.check.interval.ms`` and ``log.cleaner.backoff.ms``, 1000 ms; ``log.retention.ms``
-1, so data is kept unless retention is configured; ``socket.listen.backlog.size`` 1024, Kafka 50;
``socket.send.buffer.bytes`` and ``socket.receive.buffer.bytes`` -1, the OS's buffers, Kafka 102400)
DescribeConfigs reports the mock's value.
"""

from __future__ import annotations

from dataclasses import dataclass

# DescribeConfigs ConfigType ids
UNKNOWN, BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = range(10)
# DescribeConfigs ConfigSource ids
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, DYNAMIC_BROKER_LOGGER_CONFIG = 4, 5, 6
LONG_MAX = str(2**63 - 1)


@dataclass(frozen=True, slots=True)
class TopicSpec:
    type: int
    default: str | None
    doc: str
    synonym: str | None = None  # the broker config a topic without an override takes its value from
    dropped_in_4: bool = False  # accepted (Kafka 3.x name) but not listed by DescribeConfigs


@dataclass(frozen=True, slots=True)
class BrokerSpec:
    type: int
    default: str | None
    doc: str
    dynamic: bool = False  # AlterConfigs may change it (per broker id, or cluster-wide with name "")
    sensitive: bool = False


TOPIC_CONFIGS: dict[str, TopicSpec] = {
    "cleanup.policy": TopicSpec(LIST, "delete", "delete and/or compact: what happens to old log data.",
                                "log.cleanup.policy"),
    "compression.gzip.level": TopicSpec(INT, "-1", "Compression level for gzip.", "compression.gzip.level"),
    "compression.lz4.level": TopicSpec(INT, "9", "Compression level for lz4.", "compression.lz4.level"),
    "compression.type": TopicSpec(STRING, "producer", "Final compression of the topic's data (producer keeps the "
                                  "producer's codec).", "compression.type"),
    "compression.zstd.level": TopicSpec(INT, "3", "Compression level for zstd.", "compression.zstd.level"),
    "delete.retention.ms": TopicSpec(LONG, "86400000", "How long tombstones are kept in compacted topics.",
                                     "log.cleaner.delete.retention.ms"),
    "file.delete.delay.ms": TopicSpec(LONG, "60000", "Time to wait before deleting a file from the filesystem.",
                                      "log.segment.delete.delay.ms"),
    "flush.messages": TopicSpec(LONG, LONG_MAX, "Messages between forced fsyncs.", "log.flush.interval.messages"),
    "flush.ms": TopicSpec(LONG, LONG_MAX, "Time between forced fsyncs.", "log.flush.interval.ms"),
    "follower.replication.throttled.replicas": TopicSpec(LIST, "", "Replicas whose follower replication is "
                                                         "throttled."),
    "index.interval.bytes": TopicSpec(INT, "4096", "How often an offset index entry is added.",
                                      "log.index.interval.bytes"),
    "leader.replication.throttled.replicas": TopicSpec(LIST, "", "Replicas whose leader replication is "
                                                       "throttled."),
    "local.retention.bytes": TopicSpec(LONG, "-2", "Local bytes kept before deletion with tiered storage "
                                       "(-2: retention.bytes).", "log.local.retention.bytes"),
    "local.retention.ms": TopicSpec(LONG, "-2", "Local time kept before deletion with tiered storage "
                                    "(-2: retention.ms).", "log.local.retention.ms"),
    "max.compaction.lag.ms": TopicSpec(LONG, LONG_MAX, "Longest a message stays ineligible for compaction.",
                                       "log.cleaner.max.compaction.lag.ms"),
    "max.message.bytes": TopicSpec(INT, "1048588", "Largest record batch size allowed.", "message.max.bytes"),
    "message.downconversion.enable": TopicSpec(BOOLEAN, "true", "Down-conversion for old consumers.",
                                               "log.message.downconversion.enable", True),
    "message.format.version": TopicSpec(STRING, "3.0-IV1", "Message format version (Kafka 3.x).",
                                        "log.message.format.version", True),
    "message.timestamp.after.max.ms": TopicSpec(LONG, "3600000", "How far a record timestamp may be ahead of the "
                                                "broker's time.", "log.message.timestamp.after.max.ms"),
    "message.timestamp.before.max.ms": TopicSpec(LONG, LONG_MAX, "How far a record timestamp may be behind the "
                                                 "broker's time.", "log.message.timestamp.before.max.ms"),
    "message.timestamp.difference.max.ms": TopicSpec(LONG, LONG_MAX, "Kafka 3.x timestamp check.",
                                                     "log.message.timestamp.difference.max.ms", True),
    "message.timestamp.type": TopicSpec(STRING, "CreateTime", "CreateTime or LogAppendTime.",
                                        "log.message.timestamp.type"),
    "min.cleanable.dirty.ratio": TopicSpec(DOUBLE, "0.5", "Dirty share of the log that triggers cleaning.",
                                           "log.cleaner.min.cleanable.ratio"),
    "min.compaction.lag.ms": TopicSpec(LONG, "0", "Shortest time a message stays uncompacted.",
                                       "log.cleaner.min.compaction.lag.ms"),
    "min.insync.replicas": TopicSpec(INT, "1", "Replicas that must acknowledge an acks=all write.",
                                     "min.insync.replicas"),
    "preallocate": TopicSpec(BOOLEAN, "false", "Preallocate segment files.", "log.preallocate"),
    "remote.log.copy.disable": TopicSpec(BOOLEAN, "false", "Stop copying to tiered storage."),
    "remote.log.delete.on.disable": TopicSpec(BOOLEAN, "false", "Delete tiered data when tiering is disabled."),
    "remote.storage.enable": TopicSpec(BOOLEAN, "false", "Tiered storage for this topic."),
    "retention.bytes": TopicSpec(LONG, "-1", "Largest size a partition grows to before old data goes "
                                 "(-1: no limit).", "log.retention.bytes"),
    "retention.ms": TopicSpec(LONG, "604800000", "Longest time data is kept before it goes (-1: no limit).",
                              "log.retention.ms"),
    "segment.bytes": TopicSpec(INT, "1073741824", "Segment file size.", "log.segment.bytes"),
    "segment.index.bytes": TopicSpec(INT, "10485760", "Offset index size.", "log.index.size.max.bytes"),
    "segment.jitter.ms": TopicSpec(LONG, "0", "Jitter subtracted from segment.ms.", "log.roll.jitter.ms"),
    "segment.ms": TopicSpec(LONG, "604800000", "Time after which a segment is rolled.", "log.roll.ms"),
    "unclean.leader.election.enable": TopicSpec(BOOLEAN, "false", "Let out-of-sync replicas become leader.",
                                                "unclean.leader.election.enable"),
}


# Kafka's range validators on numeric topic configs (LogConfig): name -> (lowest, highest), None = open
TOPIC_RANGES: dict[str, tuple[float | None, float | None]] = {
    "compression.gzip.level": (-1, 9), "compression.lz4.level": (1, 17), "compression.zstd.level": (-131072, 22),
    "delete.retention.ms": (0, None), "file.delete.delay.ms": (0, None), "flush.messages": (1, None),
    "flush.ms": (0, None), "index.interval.bytes": (0, None), "local.retention.bytes": (-2, None),
    "local.retention.ms": (-2, None), "max.compaction.lag.ms": (1, None), "max.message.bytes": (0, None),
    "message.timestamp.after.max.ms": (0, None), "message.timestamp.before.max.ms": (0, None),
    "min.cleanable.dirty.ratio": (0, 1), "min.compaction.lag.ms": (0, None), "min.insync.replicas": (1, None),
    "retention.ms": (-1, None), "segment.bytes": (14, None), "segment.index.bytes": (4, None),
    "segment.jitter.ms": (0, None), "segment.ms": (1, None),
}


# Kafka's range validators (ConfigDef atLeast / between) on the broker configs the mock acts on, and
# the ranges the mock's own keys need.  Where Kafka has no validator but a negative value means nothing
# to the mock (default.replication.factor, group.initial.rebalance.delay.ms) the bound is the mock's.
BROKER_RANGES: dict[str, tuple[float | None, float | None]] = {
    "num.partitions": (1, None), "default.replication.factor": (1, None), "message.max.bytes": (0, None),
    "socket.request.max.bytes": (1, None), "socket.listen.backlog.size": (1, None), "fetch.max.bytes": (1024, None),
    "log.message.timestamp.before.max.ms": (0, None), "log.message.timestamp.after.max.ms": (0, None),
    "group.initial.rebalance.delay.ms": (0, None), "group.consumer.session.timeout.ms": (1, None),
    "group.consumer.heartbeat.interval.ms": (1, None), "group.consumer.min.session.timeout.ms": (1, None),
    "group.consumer.max.session.timeout.ms": (1, None), "group.consumer.min.heartbeat.interval.ms": (1, None),
    "group.consumer.max.heartbeat.interval.ms": (1, None), "telemetry.max.bytes": (1, None),
    "offsets.topic.num.partitions": (1, None), "offsets.topic.replication.factor": (1, None),
    "offsets.topic.segment.bytes": (1, None), "transaction.state.log.num.partitions": (1, None),
    "offsets.retention.minutes": (1, None), "offsets.retention.check.interval.ms": (1, None),
    "transaction.state.log.replication.factor": (1, None), "transaction.state.log.segment.bytes": (1, None),
    "share.coordinator.state.topic.num.partitions": (1, None),
    "share.coordinator.state.topic.replication.factor": (1, None),
    "share.coordinator.state.topic.segment.bytes": (1, None),
    "share.coordinator.snapshot.update.records.per.snapshot": (0, None),
    "transaction.max.timeout.ms": (1, None), "transactional.id.expiration.ms": (1, None),
    "producer.id.expiration.ms": (1, None), "max.incremental.fetch.session.cache.slots": (0, None),
    "log.cleaner.delete.retention.ms": (0, None), "log.cleaner.min.compaction.lag.ms": (0, None),
    "log.cleaner.min.cleanable.ratio": (0, 1), "log.cleaner.max.compaction.lag.ms": (1, None),
    "log.retention.check.interval.ms": (1, None), "log.cleaner.backoff.ms": (0, None),
    "quota.window.num": (1, None), "quota.window.size.seconds": (1, None),
    "connection.failed.authentication.delay.ms": (0, None), "min.insync.replicas": (1, None),
    "group.share.session.timeout.ms": (1, None), "group.share.min.session.timeout.ms": (1, None),
    "group.share.max.session.timeout.ms": (1, None), "group.share.heartbeat.interval.ms": (1, None),
    "group.share.min.heartbeat.interval.ms": (1, None), "group.share.max.heartbeat.interval.ms": (1, None),
    "group.share.record.lock.duration.ms": (1000, 3600000), "group.share.min.record.lock.duration.ms": (1000, 30000),
    "group.share.max.record.lock.duration.ms": (30000, 3600000), "group.share.max.size": (1, 1000),
    "group.share.delivery.count.limit": (2, 10), "group.share.partition.max.record.locks": (100, 10000),
    "group.share.max.share.sessions": (1, None),
    "log.segment.bytes": (14, None), "log.cleaner.threads": (0, None),
    # the mock's own keys
    "mock.transaction.marker.delay.ms": (0, None), "mock.journal.max.entries": (0, None),
    "mock.log.dir.total.bytes": (0, None), "mock.log.max.total.bytes": (-1, None),
    "mock.reassignment.delay.ms": (0, None), "mock.oauthbearer.allowable.clock.skew.ms": (0, None),
}

# Kafka broker names the mock reads or accepts (listeners and TLS: mockbroker.server.security) that
# DescribeConfigs does not list; with BROKER_CONFIGS and config.BROKER_DEFAULTS, the names
# MockCluster(config=...) and ``--config`` accept (``listener.name.<listener>.<setting>`` too)
ACCEPTED_BROKER_NAMES: frozenset[str] = frozenset({
    "listener.security.protocol.map", "inter.broker.listener.name", "controller.listener.names",
    "ssl.client.auth", "ssl.keystore.location", "ssl.keystore.type", "ssl.truststore.location",
    "ssl.truststore.type", "ssl.enabled.protocols", "ssl.protocol", "ssl.cipher.suites",
    "ssl.endpoint.identification.algorithm", "security.inter.broker.protocol",
    "sasl.mechanism.inter.broker.protocol", "sasl.mechanism.controller.protocol", "process.roles",
    "controller.quorum.voters", "controller.quorum.bootstrap.servers", "auto.leader.rebalance.enable",
    "transaction.state.log.min.isr", "group.coordinator.rebalance.protocols",
})


def range_error(name: str, number: float) -> str | None:
    """Kafka's message when ``number`` is outside the config's range, else None."""
    lo, hi = TOPIC_RANGES.get(name) or BROKER_RANGES.get(name, (None, None))
    if lo is not None and number < lo:
        return f"Value must be at least {lo}" if hi is None else f"Value must be in [{lo}, {hi}]"
    if hi is not None and number > hi:
        return f"Value must be no more than {hi}" if lo is None else f"Value must be in [{lo}, {hi}]"
    return None


def _b(type_: int, default: str | None, doc: str, dynamic: bool = False, sensitive: bool = False) -> BrokerSpec:
    return BrokerSpec(type_, default, doc, dynamic, sensitive)


BROKER_CONFIGS: dict[str, BrokerSpec] = {
    # read-only (static) in Kafka
    "auto.create.topics.enable": _b(BOOLEAN, "true", "Create topics on first use."),
    "broker.id": _b(INT, "-1", "The broker's id."),
    "node.id": _b(INT, "-1", "The node's id."),
    "cluster.id": _b(STRING, None, "The cluster's id (mock: set at start)."),
    "num.partitions": _b(INT, "1", "Default partition count of new topics."),
    "default.replication.factor": _b(INT, "1", "Default replication factor of new topics."),
    "delete.topic.enable": _b(BOOLEAN, "true", "Whether topics may be deleted."),
    "socket.request.max.bytes": _b(INT, "104857600", "Largest request the broker reads."),
    "connections.max.idle.ms": _b(LONG, "600000", "Close connections idle (no bytes in or out) this long."),
    "socket.listen.backlog.size": _b(INT, "50", "Pending connections the listen socket queues (mock default: 1024)."),
    "socket.send.buffer.bytes": _b(INT, "102400", "Sockets' SO_SNDBUF; -1: the OS's (mock default: -1)."),
    "socket.receive.buffer.bytes": _b(INT, "102400", "Sockets' SO_RCVBUF; -1: the OS's (mock default: -1)."),
    "fetch.max.bytes": _b(INT, "57671680", "Largest fetch response."),
    "group.initial.rebalance.delay.ms": _b(INT, "3000", "Delay before the first rebalance of a new group."),
    "group.min.session.timeout.ms": _b(INT, "6000", "Shortest session timeout a classic group member may ask for."),
    "group.max.session.timeout.ms": _b(INT, "1800000", "Longest session timeout a classic group member may ask for."),
    "group.consumer.session.timeout.ms": _b(INT, "45000", "KIP-848 consumer session timeout."),
    "group.consumer.heartbeat.interval.ms": _b(INT, "5000", "KIP-848 consumer heartbeat interval."),
    # bounds of the group configs (GROUP resources, mockbroker.state.group_configs)
    "group.consumer.min.session.timeout.ms": _b(INT, "45000", "Shortest consumer.session.timeout.ms of a group "
                                                "(mock default: 1000)."),
    "group.consumer.max.session.timeout.ms": _b(INT, "60000", "Longest consumer.session.timeout.ms of a group."),
    "group.consumer.min.heartbeat.interval.ms": _b(INT, "5000", "Shortest consumer.heartbeat.interval.ms of a group "
                                                   "(mock default: 100)."),
    "group.consumer.max.heartbeat.interval.ms": _b(INT, "15000", "Longest consumer.heartbeat.interval.ms of a group."),
    "group.share.session.timeout.ms": _b(INT, "45000", "Share group session timeout."),
    "group.share.min.session.timeout.ms": _b(INT, "45000", "Shortest share.session.timeout.ms of a group."),
    "group.share.max.session.timeout.ms": _b(INT, "60000", "Longest share.session.timeout.ms of a group."),
    "group.share.heartbeat.interval.ms": _b(INT, "5000", "Share group heartbeat interval."),
    "group.share.min.heartbeat.interval.ms": _b(INT, "5000", "Shortest share.heartbeat.interval.ms of a group."),
    "group.share.max.heartbeat.interval.ms": _b(INT, "15000", "Longest share.heartbeat.interval.ms of a group."),
    "group.share.record.lock.duration.ms": _b(INT, "30000", "Share group record lock duration."),
    "group.share.min.record.lock.duration.ms": _b(INT, "15000", "Shortest share.record.lock.duration.ms."),
    "group.share.max.record.lock.duration.ms": _b(INT, "60000", "Longest share.record.lock.duration.ms."),
    "group.share.max.size": _b(INT, "200", "Most members of a share group."),
    "group.share.delivery.count.limit": _b(INT, "5", "Deliveries of a record to a share group before it is "
                                           "archived."),
    "group.share.partition.max.record.locks": _b(INT, "2000", "In-flight records (acquisition locks) per "
                                                 "share-partition."),
    "group.share.max.share.sessions": _b(INT, "2000", "Share sessions (ShareFetch) a broker holds."),
    "group.share.assignors": _b(LIST, "simple", "The share groups' server-side assignor."),
    "group.streams.session.timeout.ms": _b(INT, "45000", "Streams group session timeout."),
    "group.streams.min.session.timeout.ms": _b(INT, "45000", "Shortest streams.session.timeout.ms of a group."),
    "group.streams.max.session.timeout.ms": _b(INT, "60000", "Longest streams.session.timeout.ms of a group."),
    "group.streams.heartbeat.interval.ms": _b(INT, "5000", "Streams group heartbeat interval."),
    "group.streams.min.heartbeat.interval.ms": _b(INT, "5000", "Shortest streams.heartbeat.interval.ms of a group."),
    "group.streams.max.heartbeat.interval.ms": _b(INT, "15000", "Longest streams.heartbeat.interval.ms of a group."),
    "group.streams.num.standby.replicas": _b(INT, "0", "Standby replicas per task of streams groups."),
    "group.streams.max.standby.replicas": _b(INT, "2", "Most streams.num.standby.replicas of a group."),
    "telemetry.max.bytes": _b(INT, "1048576", "Largest client telemetry push (KIP-714) accepted."),
    "offsets.topic.num.partitions": _b(INT, "50", "Partitions of __consumer_offsets."),
    "offsets.topic.replication.factor": _b(SHORT, "3", "Replication factor of __consumer_offsets (mock: capped at "
                                           "the brokers there are)."),
    "offsets.topic.segment.bytes": _b(INT, "104857600", "Segment size of __consumer_offsets."),
    "offsets.retention.minutes": _b(INT, "10080", "How long an empty group's committed offsets are kept."),
    "offsets.retention.check.interval.ms": _b(LONG, "600000", "How often expired committed offsets are looked for."),
    "transaction.state.log.num.partitions": _b(INT, "50", "Partitions of __transaction_state."),
    "transaction.state.log.replication.factor": _b(SHORT, "3", "Replication factor of __transaction_state (mock: "
                                                   "capped at the brokers there are)."),
    "transaction.state.log.segment.bytes": _b(INT, "104857600", "Segment size of __transaction_state."),
    "share.coordinator.state.topic.num.partitions": _b(INT, "50", "Partitions of __share_group_state."),
    "share.coordinator.state.topic.replication.factor": _b(SHORT, "3", "Replication factor of __share_group_state "
                                                           "(mock: capped at the brokers there are)."),
    "share.coordinator.state.topic.segment.bytes": _b(INT, "104857600", "Segment size of __share_group_state."),
    "share.coordinator.snapshot.update.records.per.snapshot": _b(INT, "500", "ShareUpdate records per "
                                                                 "share-partition before the next ShareSnapshot."),
    "transaction.max.timeout.ms": _b(INT, "900000", "Largest transaction timeout a producer may ask for."),
    "transactional.id.expiration.ms": _b(INT, "604800000", "Idle time after which a transactional id expires."),
    "max.incremental.fetch.session.cache.slots": _b(INT, "1000", "Incremental fetch sessions kept."),
    "log.retention.check.interval.ms": _b(LONG, "300000", "How often retention runs (mock default: 1000)."),
    "log.retention.minutes": _b(INT, None, "Retention in minutes (log.retention.ms wins)."),
    "log.retention.hours": _b(INT, "168", "Retention in hours (log.retention.ms wins)."),
    "log.roll.hours": _b(INT, "168", "Time after which a segment is rolled, in hours."),
    "log.dirs": _b(LIST, None, "Log directories."),
    # Kafka lets AlterConfigs change listeners per broker; the mock binds its listeners at start only
    "listeners": _b(LIST, "PLAINTEXT://:9092", "Listeners (per broker; mock: read-only)."),
    "advertised.listeners": _b(LIST, None, "Listeners published to clients in Metadata (null: listeners)."),
    "broker.rack": _b(STRING, None, "The broker's rack (per broker: MockCluster(racks=...), --racks)."),
    "replica.selector.class": _b(STRING, None, "Chooses the replica a consumer reads from (null: the leader; "
                                 "org.apache.kafka.common.replica.RackAwareReplicaSelector: its rack's)."),
    # dynamic: per broker and cluster-wide
    "log.cleanup.policy": _b(LIST, "delete", "Default cleanup policy of topics.", True),
    "compression.type": _b(STRING, "producer", "Default compression.type of topics.", True),
    "compression.gzip.level": _b(INT, "-1", "Default gzip level.", True),
    "compression.lz4.level": _b(INT, "9", "Default lz4 level.", True),
    "compression.zstd.level": _b(INT, "3", "Default zstd level.", True),
    "log.cleaner.delete.retention.ms": _b(LONG, "86400000", "Default delete.retention.ms.", True),
    "log.segment.delete.delay.ms": _b(LONG, "60000", "Default file.delete.delay.ms.", True),
    "log.flush.interval.messages": _b(LONG, LONG_MAX, "Default flush.messages.", True),
    "log.flush.interval.ms": _b(LONG, None, "Default flush.ms.", True),
    "log.index.interval.bytes": _b(INT, "4096", "Default index.interval.bytes.", True),
    "log.local.retention.bytes": _b(LONG, "-2", "Default local.retention.bytes.", True),
    "log.local.retention.ms": _b(LONG, "-2", "Default local.retention.ms.", True),
    "log.cleaner.max.compaction.lag.ms": _b(LONG, LONG_MAX, "Default max.compaction.lag.ms.", True),
    "message.max.bytes": _b(INT, "1048588", "Default max.message.bytes.", True),
    "log.message.timestamp.after.max.ms": _b(LONG, "3600000", "Default message.timestamp.after.max.ms.", True),
    "log.message.timestamp.before.max.ms": _b(LONG, LONG_MAX, "Default message.timestamp.before.max.ms.", True),
    "log.message.timestamp.type": _b(STRING, "CreateTime", "Default message.timestamp.type.", True),
    "log.cleaner.min.cleanable.ratio": _b(DOUBLE, "0.5", "Default min.cleanable.dirty.ratio (the mock's "
                                          "run_log_cleaner() ignores it).", True),
    "log.cleaner.min.compaction.lag.ms": _b(LONG, "0", "Default min.compaction.lag.ms.", True),
    "min.insync.replicas": _b(INT, "1", "Default min.insync.replicas.", True),
    "log.preallocate": _b(BOOLEAN, "false", "Default preallocate.", True),
    "log.retention.bytes": _b(LONG, "-1", "Default retention.bytes.", True),
    "log.retention.ms": _b(LONG, None, "Default retention.ms (Kafka: null, log.retention.hours; mock: -1).", True),
    "log.segment.bytes": _b(INT, "1073741824", "Default segment.bytes.", True),
    "log.index.size.max.bytes": _b(INT, "10485760", "Default segment.index.bytes.", True),
    "log.roll.jitter.ms": _b(LONG, None, "Default segment.jitter.ms.", True),
    "log.roll.ms": _b(LONG, None, "Default segment.ms.", True),
    "unclean.leader.election.enable": _b(BOOLEAN, "false", "Default unclean.leader.election.enable.", True),
    "log.cleaner.backoff.ms": _b(LONG, "15000", "Sleep between cleaner passes (mock default: 1000).", True),
    "log.cleaner.threads": _b(INT, "1", "Log cleaner threads.", True),
    "producer.id.expiration.ms": _b(INT, "86400000", "Idle time after which a producer id expires.", True),
    "max.connections": _b(INT, "2147483647", "Connections a broker accepts.", True),
    "num.io.threads": _b(INT, "8", "Request handler threads.", True),
    "num.network.threads": _b(INT, "3", "Network threads.", True),
    "ssl.keystore.password": _b(PASSWORD, None, "Key store password.", True, True),
    "ssl.key.password": _b(PASSWORD, None, "Private key password.", True, True),
    "ssl.truststore.password": _b(PASSWORD, None, "Trust store password.", True, True),
    "sasl.jaas.config": _b(PASSWORD, None, "JAAS login context.", True, True),
    # SASL/OAUTHBEARER with signed tokens (mockbroker.server.oauthbearer_jwks); each also per listener as
    # listener.name.<listener>.oauthbearer.<name>
    "sasl.server.callback.handler.class": _b(CLASS, None, "SASL server callback handler (the mock: Kafka's "
                                             "OAuthBearerValidatorCallbackHandler or the unsecured one)."),
    "sasl.oauthbearer.jwks.endpoint.url": _b(STRING, None, "URL (http, https or file) of the JWKS signed "
                                             "OAUTHBEARER tokens are verified with."),
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": _b(LONG, "3600000", "Time between JWKS refreshes."),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": _b(LONG, "100", "Initial wait between JWKS fetch attempts."),
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": _b(LONG, "10000", "Longest wait between JWKS fetch "
                                                              "attempts."),
    "sasl.oauthbearer.expected.audience": _b(LIST, None, "Audiences (aud) a token must name one of."),
    "sasl.oauthbearer.expected.issuer": _b(STRING, None, "Issuer (iss) a token must name."),
    "sasl.oauthbearer.clock.skew.seconds": _b(INT, "30", "Clock skew allowed when checking a token's exp and nbf."),
    "sasl.oauthbearer.scope.claim.name": _b(STRING, "scope", "Token claim holding the scope."),
    "sasl.oauthbearer.sub.claim.name": _b(STRING, "sub", "Token claim naming the principal."),
    # mock-only
    "mock.transaction.marker.delay.ms": _b(INT, "0", "Mock: how long a transaction stays Prepare* before its "
                                           "markers are written.", True),
    "mock.journal.max.entries": _b(INT, "10000", "Mock: requests the journal keeps (0: off)."),
    "mock.telemetry.receiver": _b(BOOLEAN, "false", "Mock: a client telemetry receiver is configured (KIP-714): "
                                  "ApiVersions advertises GetTelemetrySubscriptions and PushTelemetry and pushed "
                                  "metrics are kept (false: neither, as Kafka without a ClientTelemetry "
                                  "metrics reporter)."),
    "mock.leader.failover.to.any.broker": _b(BOOLEAN, "true", "Mock: a broker going down hands a partition with "
                                             "no other live replica to another live broker (false: it stays "
                                             "leaderless, as Kafka).", True),
    "mock.oauthbearer.principal.claim.name": _b(STRING, "sub", "Mock: OAUTHBEARER token claim naming the principal "
                                                "(Kafka's unsecuredValidatorPrincipalClaimName)."),
    "mock.oauthbearer.scope.claim.name": _b(STRING, "scope", "Mock: OAUTHBEARER token claim holding the scope "
                                            "(Kafka's unsecuredValidatorScopeClaimName)."),
    "mock.oauthbearer.required.scope": _b(STRING, "", "Mock: space-separated scopes an OAUTHBEARER token must have "
                                          "(Kafka's unsecuredValidatorRequiredScope)."),
    "mock.oauthbearer.allowable.clock.skew.ms": _b(LONG, "0", "Mock: clock skew allowed when checking an OAUTHBEARER "
                                                   "token's exp and iat (unsecuredValidatorAllowableClockSkewMs)."),
    "mock.produce.validation": _b(STRING, "strict", "Mock: strict (Kafka's checks of produced batches) or envelope "
                                  "(no CRC, decompression or per-record checks).", True),
    "mock.produce.reused.sequences": _b(STRING, "duplicate", "Mock: a batch repeating a stored batch's sequence "
                                        "numbers but not its bytes is answered as a duplicate (Kafka; its records "
                                        "are not stored) or rejected with OUT_OF_ORDER_SEQUENCE_NUMBER (reject).",
                                        True),
    "mock.log.max.total.bytes": _b(LONG, None, "Mock: memory cap on all stored record batches; produce beyond "
                                   "it gets KAFKA_STORAGE_ERROR (-1: none; default: half the memory).", True),
    "mock.data.dir": _b(STRING, "", "Mock: the data directory: every partition's log (Kafka's segment files) and "
                        "the cluster's metadata written there before the answer leaves, read back at start "
                        "(docs/data-dir-and-snapshots.md; empty: memory only)."),
    "mock.data.fsync": _b(BOOLEAN, "false", "Mock: fsync each append to the data directory (survives power "
                          "loss; off: written to the OS before the answer, which survives the process killed)."),
    "mock.log.dir.total.bytes": _b(LONG, "1099511627776", "Mock: the size DescribeLogDirs v4+ reports for every "
                                   "log directory (usable: this minus its logs)."),
    "mock.reassignment.delay.ms": _b(LONG, "0", "Mock: how long a reassignment adding replicas stays in progress "
                                     "(0: done at once)."),
}


def config_text(value: object) -> str | None:
    """A value as Kafka prints it (booleans in lower case)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_KAFKA_SPECS: dict[str, BrokerSpec] = {}


def broker_spec(name: str) -> BrokerSpec | None:
    """The broker config ``name``: the mock's own entry (BROKER_CONFIGS), else Kafka's
    (kafka_broker_configs: every broker config Kafka 4.x documents), else None."""
    spec = BROKER_CONFIGS.get(name)
    if spec is not None:
        return spec
    if not _KAFKA_SPECS:
        from mockbroker.state.kafka_broker_configs import KAFKA_BROKER_CONFIGS

        for key, (type_, default, mode) in KAFKA_BROKER_CONFIGS.items():
            _KAFKA_SPECS[key] = BrokerSpec(type_, default, "", mode != "r", type_ == PASSWORD)
    return _KAFKA_SPECS.get(name)


# SslConfigs.RECONFIGURABLE_CONFIGS: AlterConfigs changes these only per listener (listener.name.<l>.<name>)
SSL_PER_LISTENER = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keystore.certificate.chain", "ssl.keystore.key",
    "ssl.truststore.certificates"})
# DynamicBrokerConfig's cluster-level listener configs: a listener.name.<l>. form of these is not per broker
_CLUSTER_LEVEL_LISTENER = frozenset({"max.connections", "max.connection.creation.rate", "num.network.threads"})


def per_broker(name: str) -> bool:
    """Whether Kafka lets AlterConfigs change ``name`` only per broker id, not as the cluster-wide default
    (DynamicBrokerConfig's per-broker configs, and every listener.name.<l>. form but three)."""
    if name.startswith("listener.name.") and name.count(".") >= 3:
        return name.split(".", 3)[3] not in _CLUSTER_LEVEL_LISTENER
    from mockbroker.state.kafka_broker_configs import KAFKA_BROKER_CONFIGS

    entry = KAFKA_BROKER_CONFIGS.get(name)
    return entry is not None and entry[2] == "b"


def kafka_broker_names() -> frozenset[str]:
    """Every broker config name Kafka 4.x documents (kafka_broker_configs)."""
    from mockbroker.state.kafka_broker_configs import KAFKA_BROKER_CONFIGS

    return frozenset(KAFKA_BROKER_CONFIGS)


def is_list(name: str) -> bool:
    spec = TOPIC_CONFIGS.get(name) or broker_spec(name)
    return spec is not None and spec.type == LIST
