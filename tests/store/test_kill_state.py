"""What else a SIGKILL must not lose: ``mockbroker serve --data-dir`` with a Schema Registry, a consumer
group that committed, a committed transaction and an open one, killed with SIGKILL and started again on
the same ports and folder.  After the restart the group resumes from its commit, the registry serves the
schema under the same id, the committed transaction's records are read by a read_committed consumer and
the open one is aborted once its timeout passes (its records never reach read_committed readers, and the
last stable offset moves past them)."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from tests.store.test_kill import _free_port, _kill, _serve

SCHEMA = ('{"type": "record", "name": "Order", "namespace": "shop", '
          '"fields": [{"name": "id", "type": "long"}]}')
TXN_TIMEOUT_MS = 3000


def _committed_reader(bootstrap: str, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                     "isolation.level": "read_committed", "auto.offset.reset": "earliest"})


def _values(consumer: Consumer, want: int, timeout_s: float = 30) -> list[bytes]:
    out: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < want and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and not msg.error():
            out.append(bytes(msg.value()))
    return out


def test_groups_schemas_and_transactions_survive_sigkill(tmp_path: Path) -> None:
    port, registry_port, data_dir = _free_port(), _free_port(), tmp_path / "data"
    extra = ("--topic", "orders:1", "--topic", "payments:1", "--schema-registry-port", str(registry_port))
    server, lines = _serve(port, data_dir, *extra)
    bootstrap, registry_url = f"127.0.0.1:{port}", f"http://127.0.0.1:{registry_port}"
    try:
        assert server.poll() is None, lines
        schema_id = SchemaRegistryClient({"url": registry_url}).register_schema(
            "orders-value", Schema(SCHEMA, "AVRO"))

        plain = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for i in range(10):
            plain.produce("orders", value=b"order-%d" % i, partition=0)
        assert plain.flush(15) == 0
        reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing", "enable.auto.commit": False,
                           "auto.offset.reset": "earliest"})
        reader.assign([TopicPartition("orders", 0, 0)])
        assert len(_values(reader, 4)) == 4
        reader.commit(asynchronous=False)  # offset 4 committed for billing
        reader.close()

        txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": "payments-writer",
                        "transaction.timeout.ms": TXN_TIMEOUT_MS})
        txn.init_transactions(15)
        txn.begin_transaction()
        for i in range(3):
            txn.produce("payments", value=b"paid-%d" % i, partition=0)
        txn.commit_transaction(15)
        txn.begin_transaction()
        for i in range(2):
            txn.produce("payments", value=b"open-%d" % i, partition=0)
        txn.flush(15)  # written and acknowledged, never committed: open at the kill
        _kill(server)

        server, lines = _serve(port, data_dir, *extra)
        assert server.poll() is None, lines

        resumed = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing", "enable.auto.commit": False})
        committed = resumed.committed([TopicPartition("orders", 0)], timeout=15)
        assert [tp.offset for tp in committed] == [4]
        resumed.assign(committed)
        assert _values(resumed, 6) == [b"order-%d" % i for i in range(4, 10)]
        resumed.close()

        registered = SchemaRegistryClient({"url": registry_url}).get_schema(schema_id)
        assert registered.schema_str is not None and '"Order"' in registered.schema_str

        payments = _committed_reader(bootstrap, "audit")
        payments.assign([TopicPartition("payments", 0, 0)])
        assert _values(payments, 3) == [b"paid-0", b"paid-1", b"paid-2"]
        # the open transaction holds the last stable offset until the coordinator aborts it at its timeout
        deadline = time.monotonic() + TXN_TIMEOUT_MS / 1000 + 20
        high = -1
        while time.monotonic() < deadline:
            high = payments.get_watermark_offsets(TopicPartition("payments", 0), timeout=5, cached=False)[1]
            _values(payments, 1, 0.3)
            if payments.position([TopicPartition("payments", 0)])[0].offset == high:
                break
        assert payments.position([TopicPartition("payments", 0)])[0].offset == high  # past the ABORT marker
        assert _values(payments, 1, 1.0) == []  # the open transaction's records: aborted, never read
        payments.close()

        again = Producer({"bootstrap.servers": bootstrap, "transactional.id": "payments-writer"})
        again.init_transactions(15)  # the id is usable again, its old epoch fenced
        again.begin_transaction()
        again.produce("payments", value=b"later", partition=0)
        again.commit_transaction(15)
    except KafkaException as exc:
        raise AssertionError(f"{exc}\n" + "\n".join(lines)) from None
    finally:
        _kill(server)
