"""Snapshots with real clients: ``cluster.snapshot(path)`` written while the cluster runs, a cluster
started from it (``MockCluster(snapshot=...)``, the pytest marker, ``mock_cluster_factory(snapshot=...)``)
holding its own copy: independent of the cluster that wrote it and of every other cluster started from
it, the snapshot's files never written to; a snapshot into a data directory only when it is empty.

The session fixture ``orders_snapshot`` shows the usual shape: the snapshot built once, each test's
cluster started from it."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from mockbroker.cluster import MockCluster

SEEDED = 500


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 2})
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(15) == 0


def _values(bootstrap: str, topic: str, at_least: int) -> list[bytes]:
    """Every value in partition 0, read until the end (at least ``at_least`` of them, within 20 s)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "read", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    at_end = False
    while (not at_end or len(values) < at_least) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            at_end = True
            continue
        values.append(bytes(msg.value()))
    consumer.close()
    return values


def _digest(folder: Path) -> str:
    sha = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            sha.update(str(path.relative_to(folder)).encode())
            sha.update(path.read_bytes())
    return sha.hexdigest()


@pytest.fixture(scope="session")
def orders_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A snapshot of a cluster holding SEEDED records in ``orders``, built once for the session."""
    path = tmp_path_factory.mktemp("snapshots") / "orders"
    with MockCluster(topics={"orders": 1}) as cluster:
        _produce(cluster.bootstrap_servers, "orders", [b"seeded-%d" % i for i in range(SEEDED)])
        cluster.snapshot(path)
    return path


@pytest.mark.parametrize("writer", ["first", "second"])
def test_each_cluster_from_the_snapshot_is_its_own(orders_snapshot: Path, writer: str,
                                                   mock_cluster_factory: Callable[..., MockCluster]) -> None:
    """Run twice: each run must see only the snapshot's records, not what the other run wrote."""
    cluster = mock_cluster_factory(snapshot=orders_snapshot)
    before = _values(cluster.bootstrap_servers, "orders", SEEDED)
    assert before == [b"seeded-%d" % i for i in range(SEEDED)]
    _produce(cluster.bootstrap_servers, "orders", [b"written-by-%s" % writer.encode()])
    assert _values(cluster.bootstrap_servers, "orders", SEEDED + 1)[-1] == b"written-by-%s" % writer.encode()


def test_the_marker_takes_a_snapshot(pytester: pytest.Pytester, orders_snapshot: Path) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.mockbroker(snapshot={str(orders_snapshot)!r})
        def test_from_snapshot(mock_cluster):
            assert mock_cluster.state.topics["orders"].partitions[0].next_offset == {SEEDED}
    """)
    pytester.runpytest("-q").assert_outcomes(passed=1)


def test_a_snapshot_is_independent_of_the_cluster_that_wrote_it(tmp_path: Path) -> None:
    with MockCluster(topics={"t": 1}) as writer:
        _produce(writer.bootstrap_servers, "t", [b"a", b"b"])
        writer.snapshot(tmp_path / "snap")
        digest = _digest(tmp_path / "snap")
        _produce(writer.bootstrap_servers, "t", [b"after"])  # not in the snapshot
        with MockCluster(snapshot=tmp_path / "snap") as reader:
            assert _values(reader.bootstrap_servers, "t", 2) == [b"a", b"b"]
            _produce(reader.bootstrap_servers, "t", [b"reader's"])
            assert _values(writer.bootstrap_servers, "t", 3) == [b"a", b"b", b"after"]
            reader.reset()  # back to the snapshot
            assert _values(reader.bootstrap_servers, "t", 2) == [b"a", b"b"]
    assert _digest(tmp_path / "snap") == digest  # never written to


def test_a_snapshot_starts_only_an_empty_data_dir(tmp_path: Path) -> None:
    with MockCluster(topics={"t": 1}) as writer:
        _produce(writer.bootstrap_servers, "t", [b"a"])
        writer.snapshot(tmp_path / "snap")
        with pytest.raises(ValueError, match="exists and is not an empty folder"):
            writer.snapshot(tmp_path / "snap")
    with MockCluster(snapshot=tmp_path / "snap", data_dir=tmp_path / "data") as cluster:
        _produce(cluster.bootstrap_servers, "t", [b"b"])
    with pytest.raises(ValueError, match="is not empty"):
        MockCluster(snapshot=tmp_path / "snap", data_dir=tmp_path / "data")
    with MockCluster(data_dir=tmp_path / "data") as cluster:  # the copy went on in the data dir
        assert _values(cluster.bootstrap_servers, "t", 2) == [b"a", b"b"]
    with pytest.raises(ValueError, match="not a snapshot"):
        MockCluster(snapshot=tmp_path)
