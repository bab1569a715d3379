"""Seed data: records read from JSON Lines files and written straight into a cluster's partitions at start.

One record a line (docs/seed-and-dump.md; ``mockbroker dump`` writes the same format)::

    {"partition": 0, "offset": 12, "timestamp": 1700000000000, "key": "k", "value": {"base64": "AAE="},
     "headers": [["trace", "abc"], ["trace", null]]}

Key, value and header values are a JSON string (the bytes as UTF-8), ``{"base64": "..."}`` (any bytes) or
``null``.  ``partition``, ``timestamp`` and ``headers`` are optional (no partition: Kafka's default
partitioner, murmur2 of the key, round-robin for a null key; no timestamp: now); ``offset`` is what dump
wrote and is ignored here.  The records become v2 CreateTime batches, so every client reads them as if
produced.  With a schema (``{"path": ..., "value_schema": "order.avsc"}``) the ``value`` is the record's
JSON form, registered under ``TOPIC-value`` and framed as Confluent's serializers frame it.

Every problem is one ValueError line (``orders.jsonl:3: field 'vaule' (did you mean 'value'?)``), raised
by :func:`plan` before anything listens.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mockbroker import batches
from mockbroker import records as rec
from mockbroker.client.partitioner import partition_for_key
from mockbroker.nearest import hint

if TYPE_CHECKING:
    from mockbroker.registry.server import SchemaRegistry
    from mockbroker.state.cluster import ClusterState

FIELDS = ("partition", "offset", "timestamp", "key", "value", "headers")
ENTRY_FIELDS = ("path", "value_schema", "key_schema")
BATCH_RECORDS = 500  # records per stored batch
Header = tuple[str, bytes | None]


class SeedError(ValueError):
    """A seed file, entry or schema that cannot be loaded (one line; ``serve`` names ``--seed``)."""


def bytes_to_json(data: bytes | memoryview | None) -> Any:
    """The JSON form of a key, value or header value: a string when UTF-8, else ``{"base64": ...}``."""
    if data is None:
        return None
    raw = bytes(data)
    try:
        return raw.decode("utf-8")  # (strict: the UTF-8 encoding of a lone surrogate is refused too)
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode("ascii")}


def json_to_bytes(obj: Any, where: str) -> bytes | None:
    """The bytes a JSON key, value or header value stands for; ValueError naming ``where``."""
    if obj is None:
        return None
    if isinstance(obj, str):
        try:
            return obj.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{where}: a lone surrogate in the string (use {{\"base64\": ...}})") from None
    if isinstance(obj, dict) and list(obj) == ["base64"] and isinstance(obj["base64"], str):
        try:
            return base64.b64decode(obj["base64"], validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"{where}: {obj['base64']!r} is not base64") from None
    raise ValueError(f"{where}: a string, {{\"base64\": \"...\"}} or null, not {json.dumps(obj)[:60]}")


@dataclass
class SeedRecord:
    where: str  # file:line
    partition: int | None
    timestamp: int | None
    key: bytes | None  # the JSON form while a key schema is to frame it
    value: Any
    headers: list[Header] = field(default_factory=list)


@dataclass
class Schema:
    kind: str  # AVRO or JSON
    text: str
    encode: Any  # JSON form -> the serializer's bytes after the 5-byte frame
    schema_id: int = 0


@dataclass
class Source:
    topic: str
    records: list[SeedRecord]
    value_schema: Schema | None = None
    key_schema: Schema | None = None
    partitions: int = 1

    def frame(self, schema: Schema | None, data: Any, where: str) -> bytes | None:
        if schema is None or data is None:
            return data  # type: ignore[no-any-return]
        try:
            body: bytes = schema.encode(data)
        except Exception as exc:  # fastavro and jsonschema say what does not fit the schema
            raise ValueError(f"{where}: does not fit the {schema.kind} schema: {_one_line(exc)}") from None
        return struct.pack(">bI", 0, schema.schema_id) + body


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] if text else type(exc).__name__


def parse_line(text: str, where: str, framed: bool = False) -> SeedRecord:
    """One JSON Lines record (``framed``: key and value stay JSON forms, for a schema to encode)."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: a record is a JSON object, not {type(obj).__name__}")
    for name in obj:
        if name not in FIELDS:
            raise ValueError(f"{where}: unknown field {name!r}{hint(name, FIELDS)} (fields: {', '.join(FIELDS)})")
    partition = _whole(obj.get("partition"), f"{where}: field 'partition'", 0)
    timestamp = _whole(obj.get("timestamp"), f"{where}: field 'timestamp'", -1)
    _whole(obj.get("offset"), f"{where}: field 'offset'", 0)  # written by dump, ignored
    headers_in = obj.get("headers") or []
    if not isinstance(headers_in, list):
        raise ValueError(f"{where}: field 'headers' is a list of [name, value] pairs")
    headers: list[Header] = []
    for i, pair in enumerate(headers_in):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
            raise ValueError(f"{where}: field 'headers' item {i} is not a [name, value] pair with a string name")
        headers.append((pair[0], json_to_bytes(pair[1], f"{where}: field 'headers' item {i} value")))
    key, value = obj.get("key"), obj.get("value")
    if not framed:
        key = json_to_bytes(key, f"{where}: field 'key'")
        value = json_to_bytes(value, f"{where}: field 'value'")
    return SeedRecord(where, partition, timestamp, key, value, headers)


def _whole(value: Any, where: str, least: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{where} is a whole number >= {least}, not {json.dumps(value)}")
    return value


def read_lines(path: Path) -> list[tuple[str, str]]:
    """(file:line, text) of every non-blank line of a file, or of a folder's ``*.jsonl`` files in name order."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix == ".jsonl" and p.is_file())
        if not files:
            raise ValueError(f"{path}: no *.jsonl file in the folder")
    elif path.is_file():
        files = [path]
    else:
        raise ValueError(f"{path}: no such file or folder")
    out: list[tuple[str, str]] = []
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"{file}: cannot be read: {_one_line(exc)}") from None
        # lines end at "\n" only: a JSON string may hold U+2028 or U+0085, which str.splitlines would split at
        out.extend((f"{file}:{n}", line) for n, line in enumerate(text.split("\n"), 1) if line.strip())
    return out


def _schema(path: Path, topic: str) -> Schema:
    """A schema file: Avro (``.avsc``) or JSON Schema (``.json``), with its encoder."""
    try:
        text = path.read_text(encoding="utf-8")
        document = json.loads(text)
    except OSError as exc:
        raise ValueError(f"seed {topic}: schema {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"seed {topic}: schema {path} is not JSON: {_one_line(exc)}") from None
    from mockbroker.registry import missing_extra

    missing = missing_extra()  # fastavro and jsonschema come with mockbroker[schema-registry]
    if missing:
        raise ValueError(f"seed {topic}: {missing}")
    if path.suffix == ".avsc":
        import fastavro

        try:
            parsed = fastavro.parse_schema(document)
        except Exception as exc:
            raise ValueError(f"seed {topic}: schema {path} is not an Avro schema: {_one_line(exc)}") from None

        def avro(data: Any) -> bytes:
            out = io.BytesIO()
            fastavro.schemaless_writer(out, parsed, data)
            return out.getvalue()

        return Schema("AVRO", text, avro)
    if path.suffix == ".json":
        import jsonschema

        try:
            validator = jsonschema.validators.validator_for(document)(document)
            validator.check_schema(document)
        except Exception as exc:
            raise ValueError(f"seed {topic}: schema {path} is not a JSON Schema: {_one_line(exc)}") from None

        def as_json(data: Any) -> bytes:
            error = jsonschema.exceptions.best_match(validator.iter_errors(data))
            if error is not None:
                raise ValueError(error.message)
            return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

        return Schema("JSON", text, as_json)
    raise ValueError(f"seed {topic}: schema {path}: an Avro schema ends in .avsc, a JSON Schema in .json")


def _entry(topic: str, entry: Any) -> tuple[Path, Path | None, Path | None]:
    if isinstance(entry, (str, os.PathLike)):
        return Path(entry), None, None
    if not isinstance(entry, Mapping):
        raise ValueError(f"seed {topic}: a path, or a mapping of {', '.join(ENTRY_FIELDS)}; not {entry!r}")
    for name in entry:
        if name not in ENTRY_FIELDS:
            raise ValueError(f"seed {topic}: unknown key {name!r}{hint(str(name), ENTRY_FIELDS)} "
                             f"(keys: {', '.join(ENTRY_FIELDS)})")
    if "path" not in entry:
        raise ValueError(f"seed {topic}: the mapping needs 'path'")
    schemas = [None if entry.get(k) is None else Path(entry[k]) for k in ("value_schema", "key_schema")]
    return Path(entry["path"]), schemas[0], schemas[1]


def plan(seed: Mapping[str, Any], state: ClusterState, initial_topics: Mapping[str, int | None],
         registry: bool) -> list[Source]:
    """Every seed file read and checked (and the partition count of each topic fixed) before anything
    listens; SeedError (a ValueError), one line, for the first problem."""
    try:
        return _plan(seed, state, initial_topics, registry)
    except SeedError:
        raise
    except ValueError as exc:
        raise SeedError(str(exc)) from None


def from_flags(seeds: list[tuple[str, str]], value_schemas: list[tuple[str, str]],
               key_schemas: list[tuple[str, str]]) -> dict[str, Any]:
    """``serve --seed T=PATH --seed-value-schema T=FILE --seed-key-schema T=FILE`` as MockCluster's ``seed``."""
    out: dict[str, Any] = {topic: {"path": path} for topic, path in seeds}
    for flag, key, pairs in (("--seed-value-schema", "value_schema", value_schemas),
                             ("--seed-key-schema", "key_schema", key_schemas)):
        for topic, path in pairs:
            if topic not in out:
                raise SeedError(f"{flag} {topic}={path}: no --seed {topic}=PATH{hint(topic, out)}")
            out[topic][key] = path
    return out


def _plan(seed: Mapping[str, Any], state: ClusterState, initial_topics: Mapping[str, int | None],
          registry: bool) -> list[Source]:
    from mockbroker.errors import KafkaError
    from mockbroker.state.topic_rules import validate_topic_name

    if not isinstance(seed, Mapping):
        raise ValueError(f"seed: a mapping of topic -> path, not {type(seed).__name__}")
    sources = []
    for topic, entry in seed.items():
        try:
            validate_topic_name(topic)
        except KafkaError as exc:
            raise ValueError(f"seed {topic}: {exc.message}") from None
        path, value_path, key_path = _entry(topic, entry)
        if (value_path or key_path) and not registry:
            raise ValueError(f"seed {topic}: a schema is registered in the cluster's Schema Registry, and this "
                             "cluster runs none (schema_registry=True, or serve --schema-registry-port)")
        value_schema = None if value_path is None else _schema(value_path, topic)
        key_schema = None if key_path is None else _schema(key_path, topic)
        framed = value_schema is not None or key_schema is not None
        records = []
        for where, text in read_lines(path):
            record = parse_line(text, where, framed)
            if framed:  # the side without a schema is plain bytes
                if key_schema is None:
                    record.key = json_to_bytes(record.key, f"{where}: field 'key'")
                if value_schema is None:
                    record.value = json_to_bytes(record.value, f"{where}: field 'value'")
            records.append(record)
        source = Source(topic, records, value_schema, key_schema)
        for record in records:  # what does not fit a schema is found now, not once the brokers listen
            source.frame(value_schema, record.value, f"{record.where}: field 'value'")
            source.frame(key_schema, record.key, f"{record.where}: field 'key'")
        highest = max((r.partition for r in records if r.partition is not None), default=-1)
        given = initial_topics.get(topic) or (int(state.config["num.partitions"]) if topic in initial_topics
                                              else None)  # topics={...} creates it first
        if given is not None and highest >= given:
            where = next(r.where for r in records if r.partition == highest)
            raise ValueError(f"{where}: field 'partition' {highest} is past topic {topic!r}'s {given} partitions")
        source.partitions = given or max(int(state.config["num.partitions"]), highest + 1)
        sources.append(source)
    return sources


async def register(sources: list[Source], registry: SchemaRegistry) -> None:
    """Register each source's schemas (``TOPIC-value``, ``TOPIC-key``) as a POST to the registry would."""
    from mockbroker.registry.errors import RegistryError

    for source in sources:
        for suffix, schema in (("value", source.value_schema), ("key", source.key_schema)):
            if schema is None:
                continue
            subject = f"{source.topic}-{suffix}"
            async with registry.lock:
                try:
                    change = registry.state.plan_register(subject, schema.kind, schema.text, [])
                    await registry.store.write(change.records)
                except RegistryError as exc:
                    raise ValueError(f"seed {source.topic}: subject {subject}: {exc.message}") from None
                schema.schema_id = change.apply()


def load(sources: list[Source], state: ClusterState) -> int:
    """Append every source's records to its topic (created when missing) as v2 CreateTime batches; returns
    how many records were written."""
    written = 0
    for source in sources:
        topic = state.topics.get(source.topic)
        if topic is None:
            topic = state.create_topic(source.topic, source.partitions)
        count = len(topic.partitions)
        per_partition: dict[int, list[tuple[bytes | None, bytes | None, list[Header], int]]] = {}
        round_robin = 0
        now = state.clock.now_ms()
        for r in source.records:
            key = source.frame(source.key_schema, r.key, f"{r.where}: field 'key'")
            value = source.frame(source.value_schema, r.value, f"{r.where}: field 'value'")
            partition = r.partition
            if partition is None:
                if key is None:
                    partition, round_robin = round_robin % count, round_robin + 1
                else:
                    partition = partition_for_key(key, count)
            elif partition >= count:
                raise ValueError(f"{r.where}: field 'partition' {partition} is past topic {source.topic!r}'s "
                                 f"{count} partitions")
            per_partition.setdefault(partition, []).append((key, value, r.headers, now if r.timestamp is None
                                                            else r.timestamp))
        for index in sorted(per_partition):
            log = state.partition(source.topic, index, topic)
            items = per_partition[index]
            for start in range(0, len(items), BATCH_RECORDS):
                base = log.next_offset
                data = rec.build_batch(items[start:start + BATCH_RECORDS], base_offset=base,
                                       partition_leader_epoch=log.leader_epoch)
                log.append(batches.stored_batch(memoryview(data), base, log.leader_epoch))
            written += len(items)
    return written
