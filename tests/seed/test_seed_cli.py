"""``mockbroker serve --seed`` / ``--seed-value-schema`` and ``mockbroker dump`` as processes, and every bad
input as one line and exit status 2 (from serve, before anything listens, and from MockCluster as a ValueError)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mockbroker.cluster import MockCluster
from tests.seed.helpers import mockbroker, read_confluent, serving

pytestmark = [pytest.mark.clients]

TS = 1_700_000_000_000


def test_serve_seed_then_dump_as_processes(tmp_path: Path) -> None:
    lines = [{"partition": 1, "offset": 0, "timestamp": TS, "key": "k", "value": {"base64": "/wA="},
              "headers": [["a", "1"], ["a", None]]},
             {"partition": 1, "offset": 1, "timestamp": TS + 1, "key": None, "value": "v", "headers": []}]
    path = tmp_path / "orders.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    with serving("--seed", f"orders={path}") as bootstrap:
        got = read_confluent(bootstrap, "orders", 2, 2)
        assert [(p, k, v, h) for p, k, v, h, _ts in got] == [(1, b"k", b"\xff\x00", [("a", b"1"), ("a", None)]),
                                                             (1, None, b"v", [])]
        done = mockbroker("dump", "orders", "--bootstrap-server", bootstrap)
        assert done.returncode == 0, done.stderr
        assert done.stdout == path.read_text()  # the same lines: dump writes what seed reads
        out = tmp_path / "p1.jsonl"
        assert mockbroker("dump", "orders", "--bootstrap-server", bootstrap, "--partition", "0",
                          "--output", str(out)).returncode == 0
        assert out.read_text() == ""  # partition 0 is empty
        missing = mockbroker("dump", "nothing", "--bootstrap-server", bootstrap)
        assert (missing.returncode, missing.stderr.count("\n")) == (2, 1)
        assert "topic 'nothing' does not exist" in missing.stderr


def test_serve_seed_value_schema_registers_and_frames(tmp_path: Path) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    schema = tmp_path / "order.avsc"
    schema.write_text(json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"}]}))
    path = tmp_path / "orders.jsonl"
    path.write_text('{"value": {"id": 7}, "partition": 0}\n')
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with serving("--schema-registry-port", str(port), "--seed", f"orders={path}",
                 "--seed-value-schema", f"orders={schema}") as bootstrap:
        registry = SchemaRegistryClient({"url": f"http://127.0.0.1:{port}"})
        assert registry.get_latest_version("orders-value").schema.schema_type == "AVRO"
        [(_p, _k, raw, _h, _ts)] = read_confluent(bootstrap, "orders", 1, 1)
        assert AvroDeserializer(registry)(raw, SerializationContext("orders", MessageField.VALUE)) == {"id": 7}


def one_line_failure(*args: str) -> str:
    done = mockbroker(*args)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    return done.stderr


def test_bad_inputs_are_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "a"}\n{"key": \n')
    assert f"argument --seed: {bad}:2: not JSON" in one_line_failure("serve", "--port", "0", "--seed", f"t={bad}")
    typo = tmp_path / "typo.jsonl"
    typo.write_text('{"vaule": "a"}\n')
    message = one_line_failure("serve", "--port", "0", "--seed", f"t={typo}")
    assert f"{typo}:1: unknown field 'vaule' (did you mean 'value'?)" in message
    assert "no such file" in one_line_failure("serve", "--port", "0", "--seed", f"t={tmp_path / 'absent.jsonl'}")
    schema = tmp_path / "s.avsc"
    schema.write_text('{"type": "string"}')
    assert "runs none" in one_line_failure("serve", "--port", "0", "--seed", f"t={typo}",
                                           "--seed-value-schema", f"t={schema}")
    assert "no --seed u=PATH" in one_line_failure("serve", "--port", "0", "--seed", f"t={typo}",
                                                  "--seed-value-schema", f"u={schema}")
    assert "cannot reach" in one_line_failure("dump", "t", "--bootstrap-server", "127.0.0.1:1")


@pytest.mark.parametrize(("line", "said"), [
    ('{"key": {"base64": "!!"}}', "field 'key': '!!' is not base64"),
    ('{"value": 3}', "field 'value': a string"),
    ('{"partition": -1}', "field 'partition' is a whole number >= 0"),
    ('{"headers": [["a"]]}', "field 'headers' item 0 is not a [name, value] pair"),
    ('{"key": "\\ud800"}', "field 'key': a lone surrogate"),
    ('[1]', "a record is a JSON object"),
])
def test_bad_lines_are_value_errors_naming_file_line_and_field(tmp_path: Path, line: str, said: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"key": "fine"}\n' + line + "\n")
    with pytest.raises(ValueError, match=r"^" + str(path).replace(".", r"\.") + ":2: ") as caught:
        MockCluster(seed={"t": path})
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_a_value_that_does_not_fit_its_schema_and_a_partition_past_the_topic(tmp_path: Path) -> None:
    schema = tmp_path / "s.avsc"
    schema.write_text(json.dumps({"type": "record", "name": "R", "fields": [{"name": "id", "type": "int"}]}))
    path = tmp_path / "t.jsonl"
    path.write_text('{"value": {"id": "x"}}\n')
    with pytest.raises(ValueError, match=r"t\.jsonl:1: field 'value': does not fit the AVRO schema"):
        MockCluster(schema_registry=True, seed={"t": {"path": path, "value_schema": schema}})
    path.write_text('{"partition": 3}\n')
    with pytest.raises(ValueError, match=r"t\.jsonl:1: field 'partition' 3 is past topic 't''s 2 partitions"):
        MockCluster(topics={"t": 2}, seed={"t": path})
    with pytest.raises(ValueError, match=r"unknown key 'value_shema' \(did you mean 'value_schema'\?\)"):
        MockCluster(seed={"t": {"path": path, "value_shema": schema}})
