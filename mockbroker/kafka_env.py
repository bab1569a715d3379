"""Kafka's container conventions: the environment the ``apache/kafka`` and ``confluentinc/cp-kafka`` images read
(``KAFKA_*``, ``CLUSTER_ID``) and the one ``confluentinc/cp-schema-registry`` reads (``SCHEMA_REGISTRY_*``), turned
into what ``mockbroker serve --kafka-env`` and ``mockbroker.testcontainers`` run.

Names follow the images' rules (apache/kafka's KafkaDockerWrapper, Confluent's ``env_to_props``): the prefix goes,
the rest is lower-cased, ``_`` becomes ``.``, ``___`` becomes ``-`` and ``__`` becomes ``_``
(``KAFKA_NUM_PARTITIONS`` -> ``num.partitions``, ``KAFKA_LISTENER_NAME_CLIENT_SCRAM___SHA___256_SASL_JAAS_CONFIG`` ->
``listener.name.client.scram-sha-256.sasl.jaas.config``).  The launcher's own variables (JVM and log4j options) are not
configs, as in the images.  What only a KRaft controller, ZooKeeper, a disk or the JVM needs is accepted and
listed as not needed; a name Kafka does not know is refused with the nearest one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

KAFKA_PREFIX = "KAFKA_"
REGISTRY_PREFIX = "SCHEMA_REGISTRY_"
# the images' launcher variables: options of the JVM, log4j and JMX, never broker configs (apache/kafka's
# KafkaDockerWrapper ExcludeServerPropsEnv, cp-kafka's template, plus the launch scripts' JMX port)
LAUNCHER = frozenset({
    "KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS",
    "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
    "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_HOSTNAME", "KAFKA_JMX_PORT",
    # the images' TLS helpers: JKS keystore file names and credential files under /etc/kafka/secrets
    "KAFKA_SSL_KEYSTORE_FILENAME", "KAFKA_SSL_KEY_CREDENTIALS", "KAFKA_SSL_KEYSTORE_CREDENTIALS",
    "KAFKA_SSL_TRUSTSTORE_FILENAME", "KAFKA_SSL_TRUSTSTORE_CREDENTIALS",
})
REGISTRY_LAUNCHER = frozenset({
    "SCHEMA_REGISTRY_OPTS", "SCHEMA_REGISTRY_HEAP_OPTS", "SCHEMA_REGISTRY_JMX_OPTS", "SCHEMA_REGISTRY_JMX_PORT",
    "SCHEMA_REGISTRY_JMX_HOSTNAME", "SCHEMA_REGISTRY_LOG4J_OPTS", "SCHEMA_REGISTRY_LOG4J_ROOT_LOGLEVEL",
    "SCHEMA_REGISTRY_LOG4J_LOGGERS", "SCHEMA_REGISTRY_LOG4J_TOOLS_LOGLEVEL", "SCHEMA_REGISTRY_JVM_PERFORMANCE_OPTS",
})
# broker configs a mock broker has no use for: config name -> why
NOT_NEEDED = {
    "process.roles": "KRaft roles: a mock broker is broker and controller at once",
    "node.id": "the mock numbers its brokers itself",
    "broker.id": "the mock numbers its brokers itself",
    "controller.quorum.voters": "no KRaft quorum to form",
    "controller.quorum.bootstrap.servers": "no KRaft quorum to form",
    "controller.listener.names": "the controller's listeners are not served",
    "inter.broker.listener.name": "mock brokers replicate in memory, not over a listener",
    "security.inter.broker.protocol": "mock brokers replicate in memory, not over a listener",
    "sasl.mechanism.inter.broker.protocol": "mock brokers replicate in memory, not over a listener",
    "log.dirs": "data is kept in memory",
    "log.dir": "data is kept in memory",
    "metadata.log.dir": "data is kept in memory",
    "log.flush.interval.messages": "data is kept in memory",
    "log.flush.interval.ms": "data is kept in memory",
    "jmx.port": "no JVM",
}
NOT_NEEDED_PREFIXES = {
    "zookeeper.": "no ZooKeeper (Kafka 4 removed these configs)",
    "confluent.": "a Confluent Server feature",
}
REMOVED = frozenset({"inter.broker.protocol.version", "log.message.format.version", "broker.id.generation.enable",
                     "reserved.broker.max.id", "control.plane.listener.name"})
# cp-schema-registry's properties: the ones the mock registry acts on, and the ones it accepts and has no use for
REGISTRY_USED = ("listeners", "kafkastore.bootstrap.servers", "schema.compatibility.level",
                 "avro.compatibility.level", "kafkastore.topic", "kafkastore.init.timeout.ms")
REGISTRY_NOT_NEEDED = {
    "host.name": "the registry is the only one: no leader election",
    "leader.eligibility": "the registry is the only one: no leader election",
    "master.eligibility": "the registry is the only one: no leader election",
    "schema.registry.group.id": "the registry is the only one: no leader election",
    "kafkastore.group.id": "the registry is the only one: no leader election",
    "kafkastore.topic.replication.factor": "_schemas takes the cluster's replication",
    "kafkastore.timeout.ms": "the store's writes have their own timeout",
    "kafkastore.security.protocol": "the store connects in PLAINTEXT",
    "debug": "errors are logged either way",
    "access.control.allow.origin": "CORS is not served",
    "access.control.allow.methods": "CORS is not served",
    "access.control.allow.headers": "CORS is not served",
    "mode.mutability": "modes are always mutable",
    "schema.providers": "AVRO, JSON and PROTOBUF are built in",
}
# Kafka's default listeners map (the images' defaults; CONTROLLER only serves a KRaft controller)
CONTROLLER_DEFAULT = "CONTROLLER"


# apache/kafka's "file input": a server.properties mounted here is read before the variables (which win)
MOUNTED_CONFIG_DIR = "/mnt/shared/config"


def mounted_dir(environ: Mapping[str, str]) -> str:
    """Where a mounted server.properties is looked for: ``$MOCKBROKER_KAFKA_CONFIG_DIR``, else the image's folder."""
    return environ.get("MOCKBROKER_KAFKA_CONFIG_DIR") or MOUNTED_CONFIG_DIR


class KafkaEnvError(ValueError):
    """A variable the images would not take, or that mockbroker cannot serve: one line naming it."""


def config_name(variable: str, prefix: str) -> str:
    """The config name the images derive from ``variable`` (which starts with ``prefix``).

    apache/kafka drops every ``KAFKA_`` in the name (Java's String.replace); Confluent's images drop the prefix once.
    Both then lower-case, map ``_`` to ``.``, and ``...`` back to ``-`` and ``..`` to ``_``."""
    rest = variable.replace(KAFKA_PREFIX, "") if prefix == KAFKA_PREFIX else variable[len(prefix):]
    return rest.lower().replace("_", ".").replace("...", "-").replace("..", "_")


def variable_name(config: str, prefix: str) -> str:
    """The variable that spells ``config`` (``num.partitions`` -> ``KAFKA_NUM_PARTITIONS``): for suggestions."""
    return prefix + config.replace("_", "__").replace("-", "___").replace(".", "_").upper()


@dataclass
class RegistryEnv:
    """cp-schema-registry's settings: where to listen and which cluster stores ``_schemas``."""

    host: str
    port: int
    kafkastore: str | None  # bootstrap servers (PLAINTEXT:// prefixes dropped), None when not given
    compatibility: str | None
    init_timeout_s: float = 60.0  # kafkastore.init.timeout.ms: how long to wait for the cluster at start


@dataclass
class KafkaEnv:
    """What the environment asks for, in mockbroker's terms."""

    configs: dict[str, str] = field(default_factory=dict)  # broker configs, Kafka's names (MockCluster(config=...))
    listeners: str | None = None  # KAFKA_LISTENERS without the KRaft controller's listeners
    advertised_listeners: str | None = None
    protocol_map: str | None = None
    process_roles: str | None = None
    voters: int = 0  # how many brokers KAFKA_CONTROLLER_QUORUM_VOTERS names
    not_needed: list[tuple[str, str]] = field(default_factory=list)  # (variable, why)
    registry: RegistryEnv | None = None
    kafka_given: bool = False  # any KAFKA_* or CLUSTER_ID variable (or a mounted server.properties) at all
    origins: dict[str, tuple[str, str]] = field(default_factory=dict)  # config -> (variable or file:line, value)

    def source_of(self, message: str) -> str | None:
        """The variable (or file:line) whose value an error message quotes, to name it instead of a flag."""
        for label, value in self.origins.values():
            if len(value) >= 3 and value in message:
                return label
        return None

    @property
    def controller_only(self) -> bool:
        """A KRaft controller without the broker role: it serves no client."""
        roles = {role.strip() for role in (self.process_roles or "").split(",") if role.strip()}
        return roles == {"controller"}

    def summary(self) -> list[str]:
        """Log lines: what is used and what is not needed."""
        lines = []
        used = {**self.configs}
        for key, value in (("listeners", self.listeners), ("advertised.listeners", self.advertised_listeners),
                           ("listener.security.protocol.map", self.protocol_map)):
            if value:
                used[key] = value
        if used:
            lines.append("kafka-env: using " + ", ".join(f"{k}={shown(k, v)}" for k, v in sorted(used.items())))
        if self.registry is not None:
            lines.append(f"kafka-env: schema registry on {self.registry.host}:{self.registry.port}"
                         + (f" (compatibility {self.registry.compatibility})" if self.registry.compatibility else ""))
        if self.not_needed:
            lines.append("kafka-env: not needed by a mock broker: "
                         + "; ".join(f"{var} ({why})" for var, why in self.not_needed))
        return lines


def shown(name: str, value: str) -> str:
    """A config's value for a log line: a sensitive one (a password, a JAAS config) as ``[hidden]``, as Kafka
    logs them."""
    from mockbroker.state.config_catalogue import broker_spec

    spec = broker_spec(name)
    sensitive = (spec is not None and spec.sensitive) or name.endswith(("password", "jaas.config", "secret"))
    return "[hidden]" if sensitive else value


def read_env(env: Mapping[str, str], mounted: str | Path | None = None) -> KafkaEnv:
    """Read ``KAFKA_*``, ``CLUSTER_ID`` and ``SCHEMA_REGISTRY_*`` from ``env``, over the ``server.properties`` in the
    folder ``mounted`` when there is one (apache/kafka's "file input": the variables win, as in the image);
    KafkaEnvError on the first problem."""
    out = KafkaEnv()
    raw = _settings(env, mounted, out)
    for variable in sorted(env):  # cp-kafka / cp-server's own: confluent.support.*, the metrics reporter
        if variable.startswith("CONFLUENT_"):
            out.not_needed.append((variable, "a Confluent Server feature"))
    if env.get("CLUSTER_ID"):
        out.kafka_given = True
        out.configs["cluster.id"] = env["CLUSTER_ID"]
    for name, (source, value) in raw.items():
        _take(out, name, source, value)
    _listeners(out, raw)
    _jaas_file_users(env, out)
    out.registry = _registry(env, out)
    return out


def _settings(env: Mapping[str, str], mounted: str | Path | None, out: KafkaEnv) -> dict[str, tuple[str, str]]:
    """config name -> (where it was set: a variable or file:line, value): the mounted file's, then the variables'."""
    raw: dict[str, tuple[str, str]] = {}
    properties = Path(mounted) / "server.properties" if mounted is not None else None
    if properties is not None and properties.is_file():
        out.kafka_given = True
        for number, name, value in read_properties(properties):
            raw[name] = (f"{properties}:{number}", value)
    for variable in sorted(env):
        if not variable.startswith(KAFKA_PREFIX) or variable in LAUNCHER:
            continue
        out.kafka_given = True
        name = config_name(variable, KAFKA_PREFIX)
        if variable in ("KAFKA_PORT", "KAFKA_ADVERTISED_PORT", "KAFKA_ADVERTISED_HOST", "KAFKA_HOST"):
            raise KafkaEnvError(f"{variable}: {name} is gone from Kafka: use KAFKA_LISTENERS and "
                                "KAFKA_ADVERTISED_LISTENERS (as the images say)")
        raw[name] = (variable, env[variable])
    return raw


def _take(out: KafkaEnv, name: str, source: str, value: str) -> None:
    """One setting: noted (process roles, voters), listed as not needed, left to _listeners, or checked and used."""
    from mockbroker.errors import KafkaError
    from mockbroker.state.config import BrokerConfig, check_broker_name

    if name == "process.roles":
        out.process_roles = value
    if name == "controller.quorum.voters":
        out.voters = len([v for v in value.split(",") if v.strip()])
    why = NOT_NEEDED.get(name) or next((w for p, w in NOT_NEEDED_PREFIXES.items() if name.startswith(p)), None)
    if why is None and name in REMOVED:
        why = "a ZooKeeper-era config Kafka 4 removed"
    if why is not None:
        out.not_needed.append((source, f"{name}: {why}"))
        return
    if name in ("listeners", "advertised.listeners", "listener.security.protocol.map"):
        return
    try:
        check_broker_name(name)
    except KafkaError:
        raise KafkaEnvError(_unknown(source, name)) from None
    try:
        BrokerConfig({name: value})  # Kafka's value checks, named by the variable
    except KafkaError as exc:
        raise KafkaEnvError(f"{source}: {exc.message or exc}") from None
    out.origins[name] = (source, value)
    out.configs[name] = value


def _unknown(variable: str, name: str) -> str:
    """``KAFKA_NUM_PARTITONS: unknown broker config 'num.partitons': did you mean KAFKA_NUM_PARTITIONS
    (num.partitions)?``"""
    from mockbroker.nearest import did_you_mean
    from mockbroker.state.config import broker_names

    near = did_you_mean(name, broker_names() | set(NOT_NEEDED))
    if near is None:
        return f"{variable}: unknown broker config {name!r} (no Kafka broker config is near it)"
    if not variable.startswith(KAFKA_PREFIX):  # a line of the mounted server.properties
        return f"{variable}: unknown broker config {name!r}: did you mean {near!r}?"
    return f"{variable}: unknown broker config {name!r}: did you mean {variable_name(near, KAFKA_PREFIX)} ({near})?"


def _listeners(out: KafkaEnv, raw: dict[str, tuple[str, str]]) -> None:
    """Listeners without the controller's; derived from the advertised ones when not given (as the images do)."""
    controllers = {CONTROLLER_DEFAULT}
    if "controller.listener.names" in raw:
        controllers = {n.strip().upper() for n in raw["controller.listener.names"][1].split(",") if n.strip()}
    advertised = raw.get("advertised.listeners", ("", ""))[1].strip() or None
    listeners = raw.get("listeners", ("", ""))[1].strip() or None
    if listeners is None and advertised is not None:
        listeners = re.sub(r"://[^:,]*:", "://0.0.0.0:", advertised)  # the images' sed: every host -> 0.0.0.0
    if listeners is not None:
        kept: list[str] = []
        dropped: list[str] = []
        for item in (part.strip() for part in listeners.split(",")):
            if item:
                (dropped if item.partition("://")[0].upper() in controllers else kept).append(item)
        if dropped:
            out.not_needed.append(("KAFKA_LISTENERS", f"{', '.join(dropped)}: the KRaft controller's listener"))
        out.listeners = ",".join(kept) or None
    out.advertised_listeners = advertised
    for name in ("listeners", "advertised.listeners", "listener.security.protocol.map"):
        if name in raw:
            out.origins[name] = raw[name]
    protocol_map = raw.get("listener.security.protocol.map", ("", ""))[1].strip() or None
    if protocol_map is not None:
        entries = [e.strip() for e in protocol_map.split(",") if e.strip()]
        protocol_map = ",".join(e for e in entries if e.partition(":")[0].strip().upper() not in controllers) or None
    out.protocol_map = protocol_map


JAAS_OPTION = "-Djava.security.auth.login.config="
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


def _jaas_file_users(env: Mapping[str, str], out: KafkaEnv) -> None:
    """The images' SASL: a JAAS file named in KAFKA_OPTS (``-Djava.security.auth.login.config=PATH``) whose
    ``KafkaServer`` section lists PLAIN users (PlainLoginModule's ``user_NAME="password"``).  They become each SASL
    listener's ``plain.sasl.jaas.config`` (unless the variables set one), which the mock reads for its users."""
    from mockbroker.errors import KafkaError
    from mockbroker.server.listeners import parse_listeners

    options = env.get("KAFKA_OPTS", "")
    if JAAS_OPTION not in options:
        return
    path = Path(options.split(JAAS_OPTION, 1)[1].split()[0].strip("\"'"))
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KafkaEnvError(f"KAFKA_OPTS: the JAAS file {path} cannot be read: {exc.strerror or exc}") from None
    users = jaas_file_users(text)
    if not users:
        out.not_needed.append(("KAFKA_OPTS", f"{path}: no PlainLoginModule user_NAME option in a KafkaServer section"))
        return
    line = PLAIN_MODULE + " required " + " ".join(f'user_{name}="{password}"' for name, password in users.items()) + ";"
    try:
        listeners = parse_listeners(out.listeners, out.protocol_map)
    except KafkaError:  # serve names a listener it cannot take, with the flag's check
        return
    for spec in listeners:
        key = f"listener.name.{spec.name.lower()}.plain.sasl.jaas.config"
        if spec.uses_sasl and key not in out.configs:
            out.configs[key] = line
            out.origins[key] = ("KAFKA_OPTS", line)


def jaas_file_users(text: str) -> dict[str, str]:
    """``user_NAME="password"`` options of PlainLoginModule entries in a JAAS file's KafkaServer sections (also the
    listener-prefixed ``sasl_plaintext.KafkaServer`` ones)."""
    from mockbroker.server.security import plain_users

    users: dict[str, str] = {}
    for section in re.finditer(r"(?:^|[\s;}])(?:[\w.-]+\.)?KafkaServer\s*\{(.*?)\}\s*;", text, re.S):
        for entry in section.group(1).split(";"):
            if "PlainLoginModule" in entry:
                users.update(plain_users(entry))
    return users


def _registry(env: Mapping[str, str], kafka: KafkaEnv) -> RegistryEnv | None:
    """cp-schema-registry's variables, or None when there are none."""
    from mockbroker.nearest import did_you_mean

    settings: dict[str, tuple[str, str]] = {}
    for variable in sorted(env):
        if not variable.startswith(REGISTRY_PREFIX) or variable in REGISTRY_LAUNCHER:
            continue
        name = config_name(variable, REGISTRY_PREFIX)
        if name == "port":
            raise KafkaEnvError(f"{variable}: PORT is deprecated, use SCHEMA_REGISTRY_LISTENERS (as the image says)")
        if name in REGISTRY_NOT_NEEDED:
            kafka.not_needed.append((variable, f"{name}: {REGISTRY_NOT_NEEDED[name]}"))
            continue
        if name not in REGISTRY_USED:
            known = set(REGISTRY_USED) | set(REGISTRY_NOT_NEEDED)
            near = did_you_mean(name, known)
            hint = f": did you mean {variable_name(near, REGISTRY_PREFIX)} ({near})?" if near else ""
            raise KafkaEnvError(f"{variable}: unknown schema registry setting {name!r}{hint}")
        settings[name] = (variable, env[variable])
    if not settings:
        return None
    host, port = "0.0.0.0", 8081  # the image's default listener
    if "listeners" in settings:
        host, port = _http_listener(*settings["listeners"])
    topic = settings.get("kafkastore.topic", ("", "_schemas"))
    if topic[1] != "_schemas":
        raise KafkaEnvError(f"{topic[0]}: the mock registry keeps its schemas in _schemas, not {topic[1]!r}")
    store = settings.get("kafkastore.bootstrap.servers", ("", ""))[1]
    servers = ",".join(s.strip().partition("://")[2] or s.strip() for s in store.split(",") if s.strip()) or None
    level_item = settings.get("schema.compatibility.level") or settings.get("avro.compatibility.level")
    level = None
    if level_item is not None:
        from mockbroker.registry.compatibility import LEVELS

        level = level_item[1].strip().upper()
        if level not in LEVELS:
            raise KafkaEnvError(f"{level_item[0]}: {level_item[1]!r} is not a compatibility level: one of "
                                f"{', '.join(LEVELS)}")
    timeout = settings.get("kafkastore.init.timeout.ms", ("", "60000"))
    if not timeout[1].strip().isdigit():
        raise KafkaEnvError(f"{timeout[0]}: {timeout[1]!r} is not a number of milliseconds")
    if servers and kafka.kafka_given:  # a broker service serving its own registry
        kafka.not_needed.append(("SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS",
                                 "the registry keeps _schemas on this process's brokers"))
    return RegistryEnv(host, port, servers, level, int(timeout[1]) / 1000)


def read_properties(path: Path) -> list[tuple[int, str, str]]:
    """(line number, key, value) of a Java properties file: ``#`` / ``!`` comments, ``key=value``, ``key: value`` or
    ``key value``, a trailing backslash continuing the line, and the usual escapes (``\\t``, ``\\n``, ``\\uXXXX``)."""
    out: list[tuple[int, str, str]] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        number, line = index + 1, lines[index].lstrip()
        index += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and index < len(lines):
            line = line[:-1] + lines[index].lstrip()
            index += 1
        split = re.search(r"(?<!\\)(\s*[=:]\s*|\s+)", line)
        key, value = (line[:split.start()], line[split.end():]) if split else (line, "")
        out.append((number, _unescape(key), _unescape(value)))
    return out


def _continues(line: str) -> bool:
    """A line ending in an odd number of backslashes goes on on the next one."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _unescape(text: str) -> str:
    singles = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}

    def one(match: re.Match[str]) -> str:
        escaped = match.group(1)
        if escaped.startswith("u"):
            return chr(int(escaped[1:], 16))
        return singles.get(escaped, escaped)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", one, text)


def _http_listener(variable: str, value: str) -> tuple[str, int]:
    """``http://0.0.0.0:8081`` -> (host, port); the first of a comma list."""
    first = value.split(",")[0].strip()
    scheme, sep, rest = first.partition("://")
    host, _, port = rest.rpartition(":")
    if not sep or scheme.lower() != "http" or not port.isdigit() or int(port) > 65535:
        raise KafkaEnvError(f"{variable}: {value!r} is not a listener like http://0.0.0.0:8081 (https is not served)")
    return host.strip("[]") or "0.0.0.0", int(port)
