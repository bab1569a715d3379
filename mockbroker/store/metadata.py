"""The cluster's metadata as one JSON-able document: what a restarted Kafka cluster finds again in its
KRaft metadata log, taken from a ``ClusterState`` (:func:`capture`) and put back into a fresh one
(:func:`restore`, before its brokers start).  No file I/O here: the data directory and snapshots
(``mockbroker.store``'s other modules) write and read the document.

Kept: the cluster id; every topic (name, topic id, internal flag, replication factor, the configs set on
it, each partition's replicas, leader, leader epoch, epoch starts and, for a leaderless partition, the
replica last in sync); dynamic broker configs (cluster-wide default and per broker); ACLs; SCRAM
credentials (salt, stored key, server key, iterations: what Kafka keeps, never a password); client
quotas; client-metrics subscriptions; group configs; finalized features and their epoch; reassignments in
progress (with the time they still take); the next producer id (Kafka's ProducerIdsRecord).

Left out, because a restarted Kafka cluster does not take them from its metadata log either: the static
broker config (server.properties: ``MockCluster(config=...)``), PLAIN users (JAAS configs:
``sasl_users``; their SCRAM credentials are kept), broker registrations, racks and listeners (each broker
registers again as it starts), broker logger levels (not persisted by Kafka), client telemetry instances,
coordinator placement pinned by cluster actions, fault rules and the journal (the mock's own).  Partition
logs, committed offsets, transactions and share-group state are records of their own topics, kept by the
data directory, not here.

Restore checks the whole document before it changes anything but the dynamic configs: a damaged, unknown
format or inconsistent document is a ValueError naming the JSON path (``topics[2].partitions[0].leader:
...``).  Restore fills a fresh state; after a ValueError discard that state.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from mockbroker.errors import KafkaError
from mockbroker.state import answer_epoch
from mockbroker.state import config_catalogue as cat
from mockbroker.state.acls import AclBinding
from mockbroker.state.config import TopicConfig
from mockbroker.state.config_admin import BROKER
from mockbroker.state.features import SUPPORTED
from mockbroker.state.ids import uuid_text
from mockbroker.state.log import PartitionLog
from mockbroker.state.topic_rules import validate_topic_name

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState, Topic

FORMAT = 1
_ACL_FIELDS = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")
_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
_MECHANISM_CODES = {name: code for code, name in _MECHANISMS.items()}
T = TypeVar("T")


# -- capture ------------------------------------------------------------------------------------------
def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _texts(values: dict[str, Any]) -> dict[str, str | None]:
    return {k: cat.config_text(v) for k, v in sorted(values.items())}


def _capture_topic(state: ClusterState, topic: Topic) -> dict[str, Any]:
    from mockbroker.state.elections import leaderless

    last_in_sync = leaderless(state)
    partitions = []
    for log in topic.partitions:
        entry: dict[str, Any] = {"replicas": list(log.replicas), "leader": log.leader,
                                 "leader_epoch": log.leader_epoch,
                                 "epoch_starts": [[e, start] for e, start in log.epoch_starts]}
        if log.leader < 0 and log in last_in_sync:
            entry["last_in_sync"] = last_in_sync[log]
        partitions.append(entry)
    return {"name": topic.name, "topic_id": uuid_text(topic.topic_id), "internal": topic.is_internal,
            "replication_factor": topic.replication_factor, "configs": _texts(topic.config.overrides),
            "partitions": partitions}


def capture(state: ClusterState) -> dict[str, Any]:
    """The cluster's metadata (see the module docstring) as JSON-able data: ``json.dumps`` takes it as is.
    Run it where the state is owned: on a running cluster's loop (``cluster.call(capture, cluster.state)``)."""
    made = state.__dict__  # parts never made (coordinators, config layers) hold nothing to keep
    doc: dict[str, Any] = {"format": FORMAT, "cluster_id": state.cluster_id,
                           "topics": [_capture_topic(state, t) for t in state.topics.values()],
                           "producer_ids": {"next": state.producers.next_id},
                           "features": {"finalized": dict(sorted(state.features.finalized.items())),
                                        "epoch": state.features.epoch},
                           "acls": [{f: getattr(acl, f) for f in _ACL_FIELDS} for acl in state.acls.all()],
                           "quotas": [{"entity": [[t, n] for t, n in entity], "values": dict(sorted(values.items()))}
                                      for entity, values in state.quotas.entities.items()]}
    admin = made.get("config_admin")
    doc["broker_configs"] = {
        "default": dict(sorted(admin.dynamic_default.items())) if admin else {},
        "brokers": {str(b): dict(sorted(p.items())) for b, p in sorted(admin.dynamic_broker.items())} if admin else {}}
    doc["client_metrics"] = {n: dict(sorted(p.items())) for n, p in sorted(admin.client_metrics.subscriptions.items())
                             } if admin else {}
    doc["group_configs"] = {g: dict(sorted(p.items())) for g, p in sorted(admin.group_configs.overrides.items())
                            } if admin else {}
    creds = made.get("credentials")
    doc["scram"] = {user: {_MECHANISMS[code]: {"salt": _b64(c.salt), "stored_key": _b64(c.stored_key),
                                               "server_key": _b64(c.server_key), "iterations": c.iterations}
                           for code, c in sorted(by_code.items())}
                    for user, by_code in sorted(creds.scram_credentials().items())} if creds else {}
    reassignments = made.get("reassignments")
    doc["reassignments"] = []
    if reassignments is not None:
        now = state.clock.now_ms()
        for (topic_id, index), r in reassignments.ongoing.items():
            topic = state.topics_by_id.get(topic_id)
            if topic is not None:
                doc["reassignments"].append({"topic": topic.name, "partition": index, "target": list(r.target),
                                             "adding": list(r.adding), "removing": list(r.removing),
                                             "remaining_ms": max(0, r.due_ms - now)})
    return doc


# -- reading a document, with the path of what is wrong ------------------------------------------------------
class Bad(ValueError):
    """One line: the JSON path and what is wrong there."""


def _fail(path: str, problem: str) -> Bad:
    return Bad(f"metadata document: {path}: {problem}")


def _kind(value: Any) -> str:
    return "null" if value is None else {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
                                         int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _get(obj: dict[str, Any], key: str, path: str, kind: type[T] | tuple[type, ...], default: Any = ...) -> T:
    where = f"{path}.{key}" if path else key
    if key not in obj:
        if default is not ...:
            return default
        raise _fail(where, "missing")
    value = obj[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join(_kind(k()) if k is not type(None) else "null" for k in kinds)
        raise _fail(where, f"{names} expected, not {_kind(value)}")
    return value  # type: ignore[return-value]


def _int(obj: dict[str, Any], key: str, path: str, minimum: int | None = None, default: Any = ...) -> int:
    value = _get(obj, key, path, int, default)
    if minimum is not None and value < minimum:
        raise _fail(f"{path}.{key}", f"{value} is below {minimum}")
    return value


def _strings(obj: Any, path: str) -> dict[str, str]:
    if not isinstance(obj, dict):
        raise _fail(path, f"an object expected, not {_kind(obj)}")
    for key, value in obj.items():
        if not isinstance(value, str):
            raise _fail(f"{path}.{key}", f"a string expected, not {_kind(value)}")
    return dict(obj)


def _items(obj: dict[str, Any], key: str, kind: type[T], required: bool = False) -> list[tuple[str, T]]:
    """(path, item) for each item of the list ``obj[key]`` (absent: none, unless ``required``), each a ``kind``."""
    found: list[Any] = _get(obj, key, "", list, ... if required else [])
    out: list[tuple[str, T]] = []
    for i, item in enumerate(found):
        if not isinstance(item, kind):
            raise _fail(f"{key}[{i}]", f"{_kind(kind())} expected, not {_kind(item)}")
        out.append((f"{key}[{i}]", item))
    return out


def _bytes(text: str, path: str, urlsafe: bool = False) -> bytes:
    try:
        if urlsafe:
            return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        return base64.b64decode(text, validate=True)
    except (ValueError, TypeError):
        raise _fail(path, f"{text!r} is not base64") from None


def _kafka(path: str, action: Callable[[], T]) -> T:
    """Run ``action``; a KafkaError (the state refusing a value) becomes one line naming ``path``."""
    try:
        return action()
    except KafkaError as exc:
        raise _fail(path, exc.message or str(exc)) from None


# -- restore -------------------------------------------------------------------------------------------
def _read_partition(state: ClusterState, path: str, item: Any, topic: Topic,
                    index: int) -> tuple[PartitionLog, int | None]:
    if not isinstance(item, dict):
        raise _fail(path, f"an object expected, not {_kind(item)}")
    replicas = _get(item, "replicas", path, list)
    if not replicas or not all(isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in replicas):
        raise _fail(f"{path}.replicas", "a non-empty list of broker ids expected")
    if len(set(replicas)) != len(replicas):
        raise _fail(f"{path}.replicas", f"{replicas} names a broker twice")
    leader = _int(item, "leader", path, -1)
    if leader != -1 and leader not in replicas:
        raise _fail(f"{path}.leader", f"broker {leader} is not one of the replicas {replicas}")
    epoch = _int(item, "leader_epoch", path, 0)
    starts = _get(item, "epoch_starts", path, list)
    pairs: list[tuple[int, int]] = []
    for i, pair in enumerate(starts):
        ok = (isinstance(pair, list) and len(pair) == 2
              and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in pair))
        if not ok:
            raise _fail(f"{path}.epoch_starts[{i}]", "[leader epoch, start offset] expected")
        if pairs and (pair[0] <= pairs[-1][0] or pair[1] < pairs[-1][1]):
            raise _fail(f"{path}.epoch_starts[{i}]", "epochs must increase and start offsets not decrease")
        pairs.append((pair[0], pair[1]))
    if not pairs or pairs[-1][0] > epoch:
        raise _fail(f"{path}.epoch_starts", f"must be non-empty and end at an epoch up to leader_epoch {epoch}")
    last: int | None = _get(item, "last_in_sync", path, (int, type(None)), None)
    log = state.new_log(topic, index, list(replicas))  # (a data directory's logs keep their files)
    log.leader = leader
    log.leader_epoch = epoch
    log.epoch_starts = pairs
    return log, last


def _read_topics(state: ClusterState, doc: dict[str, Any]) -> list[tuple[Topic, dict[PartitionLog, int]]]:
    from mockbroker.state.cluster import Topic

    names: set[str] = set()
    ids: set[bytes] = set()
    out = []
    for path, item in _items(doc, "topics", dict, required=True):
        name = _get(item, "name", path, str)
        _kafka(f"{path}.name", lambda n=name: validate_topic_name(n))  # type: ignore[misc]
        if name in names:
            raise _fail(f"{path}.name", f"topic {name!r} appears twice")
        id_text = _get(item, "topic_id", path, str)
        raw = _bytes(id_text, f"{path}.topic_id", urlsafe=True)
        if len(raw) != 16 or raw == bytes(16):
            raise _fail(f"{path}.topic_id", f"{id_text!r} is not a topic id (16 bytes, not all zero)")
        if raw in ids:
            raise _fail(f"{path}.topic_id", f"{id_text!r} is the id of another topic too")
        names.add(name)
        ids.add(raw)
        configs = _strings(_get(item, "configs", path, dict, {}), f"{path}.configs")
        config = _kafka(f"{path}.configs", lambda c=configs: TopicConfig(state.config, c))  # type: ignore[misc]
        parts = _get(item, "partitions", path, list)
        if not parts:
            raise _fail(f"{path}.partitions", "a topic has at least one partition")
        rf = _int(item, "replication_factor", path, 1)
        topic = Topic(name, raw, [], config, _get(item, "internal", path, bool), rf)
        last: dict[PartitionLog, int] = {}
        for index, part in enumerate(parts):
            log, in_sync = _read_partition(state, f"{path}.partitions[{index}]", part, topic, index)
            topic.partitions.append(log)
            if in_sync is not None and log.leader == -1:
                last[log] = in_sync
        out.append((topic, last))
    return out


def _read_acls(doc: dict[str, Any]) -> list[tuple[str, AclBinding]]:
    from mockbroker.state.acls import validate_new_acl

    out = []
    for path, item in _items(doc, "acls", dict):
        values: list[Any] = [_get(item, f, path, str if f in ("resource_name", "principal", "host") else int)
                             for f in _ACL_FIELDS]
        acl = AclBinding(*values)
        _kafka(path, lambda a=acl: validate_new_acl(a))  # type: ignore[misc]
        out.append((path, acl))
    return out


def _read_scram(doc: dict[str, Any]) -> list[tuple[str, int, Any]]:
    from mockbroker.state.credentials import MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential

    users = _get(doc, "scram", "", dict, {})
    out = []
    for user, by_mechanism in users.items():
        path = f"scram.{user}"
        if not user or not isinstance(by_mechanism, dict):
            raise _fail(path, "a user name and an object of credentials by mechanism expected")
        for mechanism, cred in by_mechanism.items():
            where = f"{path}.{mechanism}"
            if mechanism not in _MECHANISM_CODES:
                raise _fail(where, f"unknown SCRAM mechanism (one of {', '.join(_MECHANISM_CODES)})")
            if not isinstance(cred, dict):
                raise _fail(where, f"an object expected, not {_kind(cred)}")
            iterations = _int(cred, "iterations", where, MIN_ITERATIONS)
            if iterations > MAX_ITERATIONS:
                raise _fail(f"{where}.iterations", f"{iterations} is above {MAX_ITERATIONS}")
            salt, stored, server = (_bytes(_get(cred, k, where, str), f"{where}.{k}")
                                    for k in ("salt", "stored_key", "server_key"))
            out.append((user, _MECHANISM_CODES[mechanism], ScramCredential(salt, stored, server, iterations)))
    return out


def _read_features(doc: dict[str, Any]) -> tuple[dict[str, int], int] | None:
    features = _get(doc, "features", "", dict, None)
    if features is None:
        return None
    finalized = _get(features, "finalized", "features", dict)
    for name, level in finalized.items():
        where = f"features.finalized.{name}"
        if name not in SUPPORTED:
            raise _fail(where, f"unknown feature (one of {', '.join(SUPPORTED)})")
        low, high = SUPPORTED[name]
        if not isinstance(level, int) or isinstance(level, bool) or not (level == 0 or low <= level <= high):
            raise _fail(where, f"{level!r} is not a level this cluster supports ({low}-{high}, or 0)")
    return dict(finalized), _int(features, "epoch", "features", 0)


def _read_reassignments(doc: dict[str, Any], topics: dict[str, Topic]) -> list[tuple[Topic, int, Any]]:
    from mockbroker.state.reassignments import Reassignment

    out = []
    for path, item in _items(doc, "reassignments", dict):
        name = _get(item, "topic", path, str)
        topic = topics.get(name)
        if topic is None:
            raise _fail(f"{path}.topic", f"no topic {name!r} in topics")
        index = _int(item, "partition", path, 0)
        if index >= len(topic.partitions):
            raise _fail(f"{path}.partition", f"topic {name!r} has {len(topic.partitions)} partitions")
        lists = []
        for key in ("target", "adding", "removing"):
            value = _get(item, key, path, list)
            if not all(isinstance(b, int) and not isinstance(b, bool) and b >= 0 for b in value):
                raise _fail(f"{path}.{key}", "a list of broker ids expected")
            lists.append(list(value))
        remaining = _int(item, "remaining_ms", path, 0)
        out.append((topic, index, Reassignment(lists[0], lists[1], lists[2], remaining)))
    return out


def _broker_layers(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
    """(path, resource name, configs): the cluster-wide default ("") and each broker's layer."""
    layers = _get(doc, "broker_configs", "", dict, {})
    out = [("broker_configs.default", "", _strings(_get(layers, "default", "broker_configs", dict, {}),
                                                   "broker_configs.default"))]
    for broker, props in _get(layers, "brokers", "broker_configs", dict, {}).items():
        path = f"broker_configs.brokers.{broker}"
        if not broker.isdigit():
            raise _fail(path, "a broker id expected")
        out.append((path, str(int(broker)), _strings(props, path)))
    return out


def _named_configs(doc: dict[str, Any], key: str) -> list[tuple[str, str, dict[str, str]]]:
    return [(f"{key}.{name}", name, _strings(props, f"{key}.{name}"))
            for name, props in _get(doc, key, "", dict, {}).items()]


def _quota_entries(doc: dict[str, Any]) -> list[tuple[str, list[tuple[str, str | None]], list[tuple[str, float]]]]:
    out = []
    for path, item in _items(doc, "quotas", dict):
        entity = _get(item, "entity", path, list)
        pairs: list[tuple[str, str | None]] = []
        for i, pair in enumerate(entity):
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                    and (pair[1] is None or isinstance(pair[1], str))):
                raise _fail(f"{path}.entity[{i}]", "[entity type, name or null] expected")
            pairs.append((pair[0], pair[1]))
        values = _get(item, "values", path, dict)
        for key, value in values.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise _fail(f"{path}.values.{key}", f"a number expected, not {_kind(value)}")
        out.append((path, pairs, [(k, float(v)) for k, v in values.items()]))
    return out


def restore(state: ClusterState, data: dict[str, Any]) -> None:
    """Put a :func:`capture` document back into ``state``, a fresh one whose brokers have not started:
    topics with their ids, assignments, configs and leader epochs (their logs empty), and everything else
    the document keeps.  ValueError (one line naming the JSON path) for a damaged, unknown-format or
    inconsistent document."""
    _apply(state, _Plan(state, data))


class _Plan:
    """A document read and checked against the state it goes into (the dynamic broker configs already set:
    the group configs' bounds are read from them)."""

    def __init__(self, state: ClusterState, data: Any) -> None:
        if not isinstance(data, dict):
            raise _fail("$", f"an object expected, not {_kind(data)}")
        version = data.get("format")
        if version != FORMAT:
            raise _fail("format", f"{version!r} is not a format this mockbroker reads (it reads {FORMAT})")
        self.cluster_id = _get(data, "cluster_id", "", str)
        if not self.cluster_id:
            raise _fail("cluster_id", "empty")
        self.topics = _read_topics(state, data)
        taken = [topic.name for topic, _ in self.topics if topic.name in state.topics]
        if taken:
            raise _fail("topics", f"topic {taken[0]!r} already exists in the cluster being restored into")
        self.acls, self.scram, self.features = _read_acls(data), _read_scram(data), _read_features(data)
        self.reassignments = _read_reassignments(data, {topic.name: topic for topic, _ in self.topics})
        self.quotas = _quota_entries(data)
        for path, entity, values in self.quotas:
            _kafka(path, lambda e=entity, v=values: state.quotas.alter(e, v, validate_only=True))  # type: ignore[misc]
        ids = _get(data, "producer_ids", "", dict, {"next": state.producers.next_id})
        self.producer_next = _int(ids, "next", "producer_ids", 0)
        layers = _broker_layers(data)
        admin = state.config_admin
        for path, name, props in layers:  # checked, then set: group config bounds come from them
            node = int(name) if name else 0
            _kafka(path, lambda n=name, p=props, b=node: admin.alter(BROKER, n, p, b, True))  # type: ignore[misc]
        for path, name, props in layers:
            node = int(name) if name else 0
            _kafka(path, lambda n=name, p=props, b=node: admin.alter(BROKER, n, p, b, False))  # type: ignore[misc]
        self.metrics, self.groups = _named_configs(data, "client_metrics"), _named_configs(data, "group_configs")
        for path, name, props in self.metrics:
            _kafka(path, lambda n=name, p=props: admin.client_metrics.replace(n, p, True))  # type: ignore[misc]
        for path, name, props in self.groups:
            _kafka(path, lambda n=name, p=props: admin.group_configs.replace(n, p, True))  # type: ignore[misc]


def _apply(state: ClusterState, plan: _Plan) -> None:
    from mockbroker.state.elections import leaderless

    state.config.set("cluster.id", plan.cluster_id)  # the document's id wins over the one the cluster was made with
    if "cluster.id" in state.config.static:
        state.config.static["cluster.id"] = plan.cluster_id
    held = leaderless(state)
    for topic, last in plan.topics:
        state.topics[topic.name] = topic
        state.topics_by_id[topic.topic_id] = topic
        held.update(last)
    for _path, acl in plan.acls:
        state.acls.add(acl)
    for user, mechanism, credential in plan.scram:
        state.credentials.put_scram(user, mechanism, credential)
    for _path, entity, values in plan.quotas:
        state.quotas.alter(entity, values)
    admin = state.config_admin
    for _path, name, props in plan.metrics:
        admin.client_metrics.replace(name, props)
    for _path, name, props in plan.groups:
        admin.group_configs.replace(name, props)
    if plan.features is not None:
        state.features.finalized, state.features.epoch = plan.features
    now = state.clock.now_ms()
    for topic, index, r in plan.reassignments:
        r.due_ms = now + r.due_ms  # remaining_ms from the document
        state.reassignments.ongoing[(topic.topic_id, index)] = r
    state.producers.next_id = max(state.producers.next_id, plan.producer_next)
    answer_epoch.bump()
