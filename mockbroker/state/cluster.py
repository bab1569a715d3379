"""The cluster's state: brokers, topics and their partition logs, and broker configuration.

Plain synchronous Python owned by one event loop, so nothing needs a lock.  Raises KafkaError with
Kafka's codes for requests that cannot be served.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode, KafkaError
from mockbroker.faults.fault_set import FaultSet
from mockbroker.faults.journal import Journal
from mockbroker.plain import Slotted
from mockbroker.state import answer_epoch
from mockbroker.state.acls import Authorizer
from mockbroker.state.clock import SystemClock
from mockbroker.state.config import BrokerConfig, TopicConfig
from mockbroker.state.features import FeatureLevels
from mockbroker.state.ids import uuid4_bytes
from mockbroker.state.internal_topics import ensure, is_internal
from mockbroker.state.log import PartitionLog
from mockbroker.state.memory_cap import MemoryCap
from mockbroker.state.producers import ProducerRegistry
from mockbroker.state.quotas import ClientQuotas
from mockbroker.state.retention import LogMaintenance
from mockbroker.state.topic_rules import KAFKA_TOPIC_CONFIGS, check_topic_config_value, validate_topic_name

if TYPE_CHECKING:
    from mockbroker.state.config_admin import ConfigAdmin
    from mockbroker.state.credentials import CredentialStore
    from mockbroker.state.groups import GroupCoordinator
    from mockbroker.state.log_admin import LogDirs
    from mockbroker.state.quorum import MetadataQuorum
    from mockbroker.state.reassignments import Reassignments
    from mockbroker.state.share_coordinator import ShareCoordinator
    from mockbroker.state.transactions import TransactionCoordinator


class BrokerInfo(Slotted):
    __slots__ = ("endpoints", "host", "node_id", "port", "rack")

    def __init__(self, node_id: int, host: str, port: int, rack: str | None = None,
                 endpoints: dict[str, tuple[str, int]] | None = None) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.rack = rack
        # listener name -> advertised (host, port); host/port above are the first listener's
        self.endpoints: dict[str, tuple[str, int]] = {} if endpoints is None else endpoints

    def endpoint(self, listener: str) -> tuple[str, int]:
        """(host, port) clients of ``listener`` are told to use (Kafka answers per listener)."""
        return self.endpoints.get(listener, (self.host, self.port))


class Topic(Slotted):
    __slots__ = ("answer_cache", "config", "is_internal", "name", "partitions", "replication_factor", "topic_id")

    def __init__(self, name: str, topic_id: bytes, partitions: list[PartitionLog], config: TopicConfig,
                 is_internal: bool = False, replication_factor: int = 1) -> None:
        self.name = name
        self.topic_id = topic_id
        self.partitions = partitions
        self.config = config
        self.is_internal = is_internal
        self.replication_factor = replication_factor
        # what handlers keep between requests about this topic: encoded answers, settings read from its
        # configs (opaque here; gone with the topic)
        self.answer_cache: dict[str, Any] = {}


def no_ticker() -> None:
    """ClusterState.wake_ticker while no MockCluster ticks this state."""


def plain_log(topic: Topic, index: int, replicas: list[int]) -> PartitionLog:
    """ClusterState.new_log's default: a partition log in memory only."""
    return PartitionLog(topic.name, index, replicas[0], replicas)


class ClusterState:
    """Everything the mock brokers share."""

    # what the C produce lane reads on every request are slots (native/lanes/member_sites.h); the rest stays in __dict__
    __slots__ = ("__dict__", "__weakref__", "acls", "clock", "config", "drop_produce_responses", "faults", "journal",
                 "kept_answers", "memory_cap", "quotas", "topics")

    def __init__(self, config: Mapping[str, Any] | None = None, clock: Any = None) -> None:
        self.config = BrokerConfig(config)
        self.clock = clock or SystemClock()
        self._producers_checked_ms = -(2**62)  # when tick last looked for expired producers (clock ms)
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, Topic] = {}
        self.down_brokers: dict[int, BrokerInfo] = {}
        self.coordinator_overrides: dict[str, int] = {}
        self.topics_by_id: dict[bytes, Topic] = {}
        # answers kept for requests that repeat byte for byte (mockbroker/handlers/kept_answers.py)
        self.kept_answers: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self.controller_id = 0
        self.started_ms = self.clock.now_ms()  # where the KRaft metadata log starts (mockbroker.state.quorum)
        self.producers = ProducerRegistry()
        self.drop_produce_responses = 0  # test hook: close the connection after this many appends
        # MockCluster's ticker, when it is waiting a whole second: dispatch calls wake_ticker() on each
        # request it answers, so what the request set going gets its tick within 100 ms as before
        self.ticker_idle = False
        self.wake_ticker: Callable[[], None] = no_ticker
        self.faults = FaultSet(self.clock)
        self.journal = Journal(self.config["mock.journal.max.entries"])
        self.acls = Authorizer(self.config)  # ACLs; checks only while `authorizer.class.name` is set
        self.quotas = ClientQuotas(self.config, self.clock)  # client quotas and their throttling
        self._placement = 0
        self.features = FeatureLevels()  # feature levels (issue 9)
        self.log_maintenance = LogMaintenance(self)  # retention and compaction (issue 9 configs)
        self.memory_cap = MemoryCap(self)  # issue 10: mock.log.max.total.bytes, retention.bytes at append
        # how a partition's log is made (mockbroker.store's data directory makes DurableLogs), and what
        # dispatch calls after each request it answers from Python (the data directory saves the
        # metadata there when it changed; None: nothing)
        self.new_log: Callable[[Topic, int, list[int]], PartitionLog] = plain_log
        self.after_request: Callable[[int, Any], Any] | None = None
        # The group and transaction coordinators, SASL users, log directories, reassignments and the
        # dynamic config layers are made (and their modules imported) on first use: a broker that only
        # produces and fetches never pays for them, and start-up stays short.

    @cached_property
    def groups(self) -> GroupCoordinator:
        """Classic and KIP-848 consumer groups."""
        from mockbroker.state.consumer_groups import ConsumerGroupLogic
        from mockbroker.state.groups import GroupCoordinator

        groups = GroupCoordinator(self.clock, self.config["group.initial.rebalance.delay.ms"])
        groups.consumer_logic = ConsumerGroupLogic(self.clock, self.partition_counts, self.config)
        groups.consumer_logic.group_config = self.group_config_value
        from mockbroker.state.offsets_topic import OffsetsTopicWriter

        groups.records = OffsetsTopicWriter(self)  # every change also written to __consumer_offsets
        groups.retention = (self.config["offsets.retention.minutes"] * 60_000,
                            self.config["offsets.retention.check.interval.ms"])
        return groups

    @cached_property
    def quorum(self) -> MetadataQuorum:
        """The KRaft metadata quorum DescribeQuorum reports: the controller its single voter."""
        from mockbroker.state.quorum import MetadataQuorum

        return MetadataQuorum(self.started_ms)

    @cached_property
    def share(self) -> ShareCoordinator:
        """Share groups (KIP-932): members, share sessions, share-partitions."""
        from mockbroker.state.share_coordinator import ShareCoordinator

        return ShareCoordinator(self)

    @cached_property
    def transactions(self) -> TransactionCoordinator:
        from mockbroker.state.transactions import TransactionCoordinator
        from mockbroker.state.txn_log import TransactionLog

        coordinator = TransactionCoordinator(self.clock, self.producers.new_id, self.config, self.write_txn_markers)
        coordinator.log = TransactionLog(self)  # its state changes as records in __transaction_state
        return coordinator

    @cached_property
    def credentials(self) -> CredentialStore:
        """SASL users (PLAIN passwords, SCRAM credentials)."""
        from mockbroker.state.credentials import CredentialStore

        return CredentialStore()

    @cached_property
    def log_dirs(self) -> LogDirs:
        """Log directories (issue 9)."""
        from mockbroker.state.log_admin import LogDirs

        return LogDirs(self)

    @cached_property
    def reassignments(self) -> Reassignments:
        from mockbroker.state.reassignments import Reassignments

        return Reassignments(self)

    def group_config_value(self, group_id: str, name: str) -> int:
        """A group's integer GROUP config ``name`` (consumer.session.timeout.ms, ...), else its broker synonym's."""
        return int(self.group_config_text(group_id, name))

    def group_config_text(self, group_id: str, name: str) -> str:
        """A group's GROUP config ``name`` as text (share.auto.offset.reset, ...), else its broker synonym's."""
        if "config_admin" not in self.__dict__:  # no config set on any group yet
            from mockbroker.state.group_configs import GROUP_CONFIGS

            synonym = GROUP_CONFIGS[name].synonym
            value = self.config.get(synonym) if synonym else None
            return str(value) if value is not None else GROUP_CONFIGS[name].default
        return self.config_admin.group_configs.value(group_id, name)

    @cached_property
    def config_admin(self) -> ConfigAdmin:
        """Dynamic config layers (Describe/Alter/IncrementalAlterConfigs)."""
        from mockbroker.state.config_admin import ConfigAdmin

        return ConfigAdmin(self)

    @property
    def cluster_id(self) -> str:
        return self.config["cluster.id"]  # type: ignore[no-any-return]  # config values are typed by their key

    def add_broker(self, node_id: int, host: str, port: int, rack: str | None = None,
                   endpoints: dict[str, tuple[str, int]] | None = None) -> BrokerInfo:
        info = BrokerInfo(node_id, host, port, rack, dict(endpoints or {}))
        self.brokers[node_id] = info
        answer_epoch.bump_brokers()
        return info

    def live_broker_ids(self) -> list[int]:
        return sorted(self.brokers)

    @property
    def topic_deletion_enabled(self) -> bool:
        """Kafka's ``delete.topic.enable`` (on unless the cluster config turns it off)."""
        return str(self.config.get("delete.topic.enable", True)).strip().lower() != "false"

    def coordinator_for(self, key: str) -> BrokerInfo:
        """The broker that coordinates a group or transactional id (a stable hash over live brokers,
        unless a cluster action pinned it)."""
        pinned = self.coordinator_overrides.get(key)
        if pinned is not None and pinned in self.brokers:
            return self.brokers[pinned]
        ids = self.live_broker_ids()
        h = 0
        for ch in key.encode():
            h = (h * 31 + ch) & 0x7FFFFFFF
        return self.brokers[ids[h % len(ids)]]

    def partition_counts(self) -> dict[str, int]:
        """Topic name -> partition count, for the KIP-848 assignors."""
        return {name: len(t.partitions) for name, t in self.topics.items()}

    # -- transactions ------------------------------------------------------------------------
    def write_txn_markers(self, producer_id: int, epoch: int, commit: bool,
                          partitions: Any, groups: Any) -> None:
        """End a transaction: a marker in each of its partitions (those still there), then its
        group offsets committed or dropped."""
        from mockbroker.state.transactions import COORDINATOR_EPOCH

        now = self.clock.now_ms()
        for topic_name, index in partitions:
            topic = self.topics.get(topic_name)
            if topic is not None and index < len(topic.partitions):
                log = topic.partitions[index]
                size_before = log.size_bytes
                log.append_marker(producer_id, epoch, commit, COORDINATOR_EPOCH, now)
                self.memory_cap.added(log, size_before)
        for group_id in groups:
            self.groups.complete_txn(group_id, producer_id, commit)

    def timers_live(self) -> bool:
        """Whether tick() may have work within the next second: groups with members or rebalancing,
        transactions under way, reassignments, or producer expiry, retention checks or cleaning set
        to run more often than once a second.  MockCluster ticks every 100 ms while so, else once a
        second (each wake-up of an idle broker costs ~0.3 ms of CPU on a small VM)."""
        made = self.__dict__
        for name in ("groups", "transactions", "share"):
            if name in made and made[name].timers_live():
                return True
        if "reassignments" in made and made["reassignments"].ongoing:
            return True
        config = self.config
        short = min(config["producer.id.expiration.ms"], config["log.retention.check.interval.ms"],
                    config["log.cleaner.backoff.ms"]) < 1000
        return short  # type: ignore[no-any-return]  # config values are typed by their key

    def tick(self) -> None:
        """Let time act: group sessions and rebalances, transaction timeouts, reassignments, producer
        expiry, retention and compaction."""
        made = self.__dict__  # coordinators not made yet have nothing to do
        for name in ("groups", "transactions", "reassignments", "share"):
            if name in made:
                made[name].tick()
        now = self.clock.now_ms()
        expiration = self.config["producer.id.expiration.ms"]
        # Kafka checks every producer.id.expiration.check.interval.ms (10 min); the mock walks every
        # partition at most once a second, or as often as the expiration itself when that is shorter, and
        # for expirations over 100 s every 1 % of it (the default day: every 14.4 min; a walk over 10k
        # partitions each second was most of an idle broker's CPU)
        if now - self._producers_checked_ms >= max(min(1000, expiration), expiration // 100):
            self._producers_checked_ms = now
            for topic in self.topics.values():
                for log in topic.partitions:
                    if log.producers.entries:
                        log.producers.expire(now, expiration)
        self.log_maintenance.tick()
        self.memory_cap.tick()

    # -- topics -----------------------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        partitions: int | None = None,
        replication_factor: int | None = None,
        configs: Mapping[str, Any] | None = None,
        validate_only: bool = False,
        assignment: list[list[int]] | None = None,
    ) -> Topic:
        """Create (or with ``validate_only`` just check) a topic; ``assignment`` gives each partition's
        replicas explicitly (the first is the leader)."""
        validate_topic_name(name)
        if name in self.topics:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        count = self.config["num.partitions"] if partitions in (None, -1) else partitions
        if count <= 0:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"number of partitions must be > 0, got {count}")
        default_rf = self.config["default.replication.factor"]
        rf = default_rf if replication_factor in (None, -1) else replication_factor
        brokers = self.live_broker_ids() or [0]
        if rf <= 0 or rf > len(brokers):
            raise KafkaError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"replication factor {rf} is not between 1 and the {len(brokers)} available brokers",
            )
        topic_config = TopicConfig(self.config, configs)
        topic = Topic(name, uuid4_bytes(), [], topic_config, is_internal(name), rf)
        self._add_partitions(topic, count, assignment)
        if not validate_only:
            self.topics[name] = topic
            self.topics_by_id[topic.topic_id] = topic
            answer_epoch.bump()
        return topic

    def check_new_topic(self, name: str) -> None:
        """Kafka's checks on a name about to be created, in its order: a legal name, not taken
        (TOPIC_ALREADY_EXISTS), and not equal to an existing name once '.' and '_' are unified."""
        validate_topic_name(name)
        if name in self.topics:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if "." in name or "_" in name:
            unified = name.replace(".", "_")
            for other in self.topics:
                if other.replace(".", "_") == unified:
                    raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                     f"Topic '{name}' collides with existing topic: {other}")

    def check_topic_configs(self, configs: Mapping[str, str | None]) -> None:
        """INVALID_CONFIG for null values, names Kafka does not know, and values Kafka would refuse."""
        nulls = [k for k, v in configs.items() if v is None]
        if nulls:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {','.join(nulls)}")
        for key, value in configs.items():
            kind = KAFKA_TOPIC_CONFIGS.get(key)
            if kind is None:
                from mockbroker.nearest import did_you_mean
                from mockbroker.state.config import topic_names

                near = did_you_mean(key, topic_names())  # Kafka's message, and the name meant
                raise KafkaError(ErrorCode.INVALID_CONFIG,
                                 f"Unknown topic config name: {key}" + (f" (did you mean {near}?)" if near else ""))
            check_topic_config_value(key, str(value), kind)
        TopicConfig(self.config, configs)  # the values the mock acts on get its own checks too

    def check_assignment(self, assignment: list[list[int]], replication_factor: int | None = None) -> None:
        """INVALID_REPLICA_ASSIGNMENT unless every partition lists distinct, registered brokers and all
        partitions have the same number of replicas (``replication_factor`` when given)."""
        for replicas in assignment:
            if not replicas:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 "The manual partition assignment includes an empty replica list.")
            if len(set(replicas)) != len(replicas):
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"The manual partition assignment {replicas} names a broker more than once.")
            for broker in replicas:
                if broker not in self.brokers:
                    raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                     f"The manual partition assignment includes broker {broker}, "
                                     "but no such broker is registered.")
            if replication_factor is None:
                replication_factor = len(replicas)
            elif len(replicas) != replication_factor:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"The manual partition assignment includes a partition with {len(replicas)} "
                                 f"replica(s), but other partitions have {replication_factor}.")

    def _add_partitions(self, topic: Topic, count: int, assignment: list[list[int]] | None = None) -> None:
        brokers = self.live_broker_ids() or [0]
        for i in range(count):
            index = len(topic.partitions)
            if assignment is not None:
                replicas = list(assignment[i])
            else:
                first = (self._placement + index) % len(brokers)
                replicas = [brokers[(first + r) % len(brokers)] for r in range(topic.replication_factor)]
            topic.partitions.append(self.new_log(topic, index, replicas))
        self._placement += 1
        answer_epoch.bump()

    def create_partitions(self, name: str, total: int, validate_only: bool = False,
                          assignment: list[list[int]] | None = None) -> Topic:
        topic = self.topic(name)
        if total <= len(topic.partitions):
            raise KafkaError(
                ErrorCode.INVALID_PARTITIONS,
                f"topic {name!r} has {len(topic.partitions)} partitions; {total} would not add any",
            )
        new = total - len(topic.partitions)
        if assignment is not None:
            if len(assignment) != new:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"{len(assignment)} assignments given for {new} new partitions")
            for replicas in assignment:
                if not replicas or len(set(replicas)) != len(replicas) or any(b not in self.brokers for b in replicas):
                    raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"invalid replica assignment {replicas}")
        if not validate_only:
            self._add_partitions(topic, new, assignment)
        return topic

    def delete_topic(self, name: str) -> Topic:
        topic = self.topic(name)
        del self.topics[name]
        del self.topics_by_id[topic.topic_id]
        if "groups" in self.__dict__:  # the group coordinator exists (made on first use)
            self.groups.forget_topic(name)
        if "share" in self.__dict__:
            self.share.forget_topic(name)
        answer_epoch.bump()
        return topic

    def topic(self, name: str) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {name!r}")
        return topic

    def topic_by_id(self, topic_id: bytes) -> Topic:
        topic = self.topics_by_id.get(topic_id)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, "unknown topic id")
        return topic

    def topic_or_autocreate(self, name: str, allow: bool = True) -> Topic:
        topic = self.topics.get(name)
        if topic is not None:
            return topic
        if not (allow and self.config["auto.create.topics.enable"]):
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {name!r}")
        if is_internal(name):  # made with its own settings, as Kafka does
            return ensure(self, name)  # type: ignore[no-any-return]  # the internal topics' maker takes Any
        return self.create_topic(name, replication_factor=min(
            self.config["default.replication.factor"], max(1, len(self.brokers))))

    def partition(self, name: str, index: int, topic: Topic | None = None) -> PartitionLog:
        """Partition ``index`` of topic ``name`` (``topic``: that topic, already looked up)."""
        if topic is None:
            topic = self.topic(name)
        if not 0 <= index < len(topic.partitions):
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{name!r} has no partition {index}")
        return topic.partitions[index]

    def leader_partition(self, name: str, index: int, broker_id: int, topic: Topic | None = None) -> PartitionLog:
        """The partition, checked to be led by ``broker_id`` (NOT_LEADER_OR_FOLLOWER otherwise)."""
        log = self.partition(name, index, topic)
        if log.leader != broker_id:
            raise KafkaError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"broker {broker_id} is not the leader of {name}-{index} (broker {log.leader} is)",
            )
        return log
