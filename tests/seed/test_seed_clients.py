"""Seed data read by real clients: keys, values (binary and null), headers (duplicates, order), timestamps and
partitions as the file says; a topic produced by confluent-kafka (transactions included) dumped, seeded into a
fresh cluster and dumped again; Avro and JSON Schema seeds read by confluent-kafka's deserializers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mockbroker.cluster import MockCluster
from tests.seed.helpers import read_confluent, read_kafka_python

pytestmark = [pytest.mark.clients]

TS = 1_700_000_000_000
LINES = [
    {"partition": 0, "timestamp": TS, "key": "a", "value": "first"},
    {"partition": 2, "timestamp": TS + 5, "key": {"base64": "AP8="}, "value": {"base64": "gICA"},
     "headers": [["h", "1"], ["h", "2"], ["bin", {"base64": "/w=="}], ["none", None]]},
    {"partition": 0, "timestamp": TS - 1000, "key": "a", "value": None},  # a tombstone, an older timestamp
    {"partition": 1, "timestamp": TS + 7, "key": None, "value": "ünïcode ✓", "offset": 99},  # offset ignored
]
EXPECTED = sorted([
    (0, b"a", b"first", [], TS),
    (0, b"a", None, [], TS - 1000),
    (1, None, "ünïcode ✓".encode(), [], TS + 7),
    (2, b"\x00\xff", b"\x80\x80\x80", [("h", b"1"), ("h", b"2"), ("bin", b"\xff"), ("none", None)], TS + 5),
], key=lambda r: r[0])


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_seeded_records_are_read_as_written(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "orders.jsonl", LINES)
    with MockCluster(seed={"orders": path}) as cluster:
        assert len(cluster.state.topics["orders"].partitions) == 3  # the highest partition named + 1
        assert read_confluent(cluster.bootstrap_servers, "orders", 3, 4) == EXPECTED
        assert read_kafka_python(cluster.bootstrap_servers, "orders", 3, 4) == EXPECTED
        cluster.reset()  # a reset cluster starts from its seed again
        assert read_confluent(cluster.bootstrap_servers, "orders", 3, 4) == EXPECTED


def test_a_folder_in_name_order_and_keys_partitioned_by_murmur2(tmp_path: Path) -> None:
    from mockbroker.client.partitioner import partition_for_key

    folder = tmp_path / "events"
    folder.mkdir()
    write_lines(folder / "b.jsonl", [{"key": "k2", "value": "2", "timestamp": TS}])
    write_lines(folder / "a.jsonl", [{"key": "k1", "value": "1", "timestamp": TS}])
    (folder / "ignored.txt").write_text("not read")
    with MockCluster(seed={"events": folder}, topics={"events": 4}) as cluster:
        got = read_confluent(cluster.bootstrap_servers, "events", 4, 2)
    assert sorted((p, k) for p, k, *_ in got) == sorted([(partition_for_key(b"k1", 4), b"k1"),
                                                          (partition_for_key(b"k2", 4), b"k2")])
    if partition_for_key(b"k1", 4) == partition_for_key(b"k2", 4):
        assert [k for _p, k, *_ in got] == [b"k1", b"k2"]  # a.jsonl first


def produce_everything(bootstrap: str) -> list[tuple[int, bytes | None, bytes | None, list[Any], int]]:
    """Binary keys, headers, timestamps, three partitions, a tombstone, a committed and an aborted transaction;
    returns what a read_committed reader must see."""
    from confluent_kafka import Producer

    expected = []
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(9):
        key = bytes([i, 0xFF, 0xFE])
        headers = [("trace", str(i).encode()), ("trace", b"\x00\x01"), ("empty", b"")]
        value = None if i == 4 else f"value {i}".encode() + b"\xc3"
        producer.produce("orders", key=key, value=value, partition=i % 3, headers=headers, timestamp=TS + i)
        expected.append((i % 3, key, value, headers, TS + i))
    assert producer.flush(10) == 0
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": "seed-txn"})
    txn.init_transactions(10)
    for commit in (True, False):
        txn.begin_transaction()
        for p in range(3):
            value = f"{'committed' if commit else 'aborted'} {p}".encode()
            txn.produce("orders", key=b"t", value=value, partition=p, timestamp=TS + 100 + p)
            if commit:
                expected.append((p, b"t", value, [], TS + 100 + p))
        assert txn.flush(10) == 0
        (txn.commit_transaction if commit else txn.abort_transaction)(10)
    return sorted(expected, key=lambda r: r[0])  # (stable: offset order within a partition)


def test_dump_seed_dump_round_trips(tmp_path: Path) -> None:
    first, second, third = tmp_path / "first.jsonl", tmp_path / "second.jsonl", tmp_path / "third.jsonl"
    with MockCluster(topics={"orders": 3}) as source:
        expected = produce_everything(source.bootstrap_servers)
        assert source.dump("orders", str(first)) == len(expected)
    with MockCluster(seed={"orders": first}) as copy:
        assert read_confluent(copy.bootstrap_servers, "orders", 3, len(expected)) == expected
        assert read_kafka_python(copy.bootstrap_servers, "orders", 3, len(expected)) == expected
        copy.dump("orders", str(second))
    with MockCluster(seed={"orders": second}) as again:
        again.dump("orders", str(third))
    assert third.read_bytes() == second.read_bytes()  # dump -> seed -> dump: byte for byte

    def without_offsets(path: Path) -> list[dict[str, Any]]:
        return [{k: v for k, v in json.loads(line).items() if k != "offset"} for line in path.read_text().splitlines()]

    # the first dump's offsets have the control records' and the aborted records' gaps; seeding renumbers them
    assert without_offsets(first) == without_offsets(second)
    assert not any("aborted" in line for line in first.read_text().splitlines())


AVRO = {"type": "record", "name": "Order", "namespace": "shop",
        "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"},
                   {"name": "note", "type": ["null", "string"], "default": None}]}
JSON_SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
               "required": ["id"]}


@pytest.mark.parametrize("kind", ["avro", "json"])
def test_schema_seeds_read_by_confluents_deserializers(tmp_path: Path, kind: str) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    schema_path = tmp_path / ("order.avsc" if kind == "avro" else "order.json")
    schema_path.write_text(json.dumps(AVRO if kind == "avro" else JSON_SCHEMA))
    values = [{"id": 1, "item": "pen", "note": None}, {"id": 2, "item": "ink", "note": "blue"}] if kind == "avro" \
        else [{"id": 1, "item": "pen"}, {"id": 2}]
    path = write_lines(tmp_path / "orders.jsonl", [{"key": str(v["id"]), "value": v, "partition": 0} for v in values])
    with MockCluster(schema_registry=True, seed={"orders": {"path": path, "value_schema": schema_path}}) as cluster:
        registry = SchemaRegistryClient({"url": cluster.schema_registry_url})
        latest = registry.get_latest_version("orders-value")
        assert latest.schema.schema_type == ("AVRO" if kind == "avro" else "JSON")
        deserializer = AvroDeserializer(registry) if kind == "avro" else JSONDeserializer(json.dumps(JSON_SCHEMA),
                                                                                          schema_registry_client=registry)

        raw = read_confluent(cluster.bootstrap_servers, "orders", 1, 2)
        assert [v[:5] for _p, _k, v, _h, _ts in raw] == [b"\x00" + latest.schema_id.to_bytes(4, "big")] * 2
        got = [(k, deserializer(v, SerializationContext("orders", MessageField.VALUE))) for _p, k, v, _h, _ts in raw]
    assert got == [(b"1", values[0]), (b"2", values[1])]


def test_a_key_schema_frames_keys_and_partitions_by_the_framed_bytes(tmp_path: Path) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from mockbroker.client.partitioner import partition_for_key

    schema_path = tmp_path / "key.avsc"
    schema_path.write_text('{"type": "string"}')
    path = write_lines(tmp_path / "orders.jsonl", [{"key": f"order-{i}", "value": str(i)} for i in range(6)])
    seed = {"orders": {"path": path, "key_schema": schema_path}}
    with MockCluster(schema_registry=True, topics={"orders": 3}, seed=seed) as cluster:
        registry = SchemaRegistryClient({"url": cluster.schema_registry_url})
        assert registry.get_subjects() == ["orders-key"]
        got = read_confluent(cluster.bootstrap_servers, "orders", 3, 6)
        deserialize = AvroDeserializer(registry)
        keys = {deserialize(k, SerializationContext("orders", MessageField.KEY)): (p, k, v)
                for p, k, v, _h, _ts in got}
    assert sorted(keys) == sorted(f"order-{i}" for i in range(6))
    for name, (partition, framed, value) in keys.items():
        assert partition == partition_for_key(framed, 3) and value == name.split("-")[1].encode()
