"""Sarama (Go, Debian's golang-github-shopify-sarama-dev 1.22) produces and consumes through
mockbroker.  The Go program is tests/clients/go/src/sarama_client, built offline per session."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mockbroker.cluster import MockCluster

GO = shutil.which("go")
SARAMA = Path("/usr/share/gocode/src/github.com/Shopify/sarama")
SOURCE = Path(__file__).parent / "go"
pytestmark = [
    pytest.mark.clients,
    pytest.mark.skipif(GO is None or not SARAMA.is_dir(),
                       reason="Go or Sarama is missing (apt-get install golang-go golang-github-shopify-sarama-dev; "
                              ".ci/install-clients.sh)"),
]
COUNT = 10_000
PARTITIONS = 4


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sarama") / "sarama_client"
    env = {**os.environ, "GO111MODULE": "off", "GOPROXY": "off", "GOPATH": f"{SOURCE}:/usr/share/gocode",
           "GOCACHE": str(tmp_path_factory.mktemp("gocache")), "GOFLAGS": ""}
    result = subprocess.run([GO, "build", "-o", str(out), "sarama_client"], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as c:
        yield c


def run(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=90)


@pytest.mark.parametrize("acks", ["0", "1", "all"])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_produce_and_consume(binary: Path, cluster: MockCluster, codec: str, acks: str) -> None:
    topic = f"sarama-{codec}-{acks}"
    cluster.create_topic(topic, PARTITIONS)
    common = ["-brokers", cluster.bootstrap_servers, "-topic", topic, "-count", str(COUNT),
              "-partitions", str(PARTITIONS)]
    produced = run(binary, "produce", "-codec", codec, "-acks", acks, *common)
    assert produced.returncode == 0 and f"acked {COUNT}" in produced.stdout, produced.stderr
    consumed = run(binary, "consume", *common)
    assert consumed.returncode == 0, consumed.stderr
    per_partition: dict[int, list[tuple[int, str, str, str, int]]] = {}
    for line in consumed.stdout.splitlines():
        p, o, k, v, h, ts = line.split("\t")
        per_partition.setdefault(int(p), []).append((int(o), k, v, h, int(ts)))
    assert sorted(per_partition) == list(range(PARTITIONS))
    for p, recs in per_partition.items():
        recs.sort()
        assert [r[0] for r in recs] == list(range(COUNT // PARTITIONS))
        for offset, key, value, headers, ts in recs:
            i = offset * PARTITIONS + p
            assert key == f"key-{i}" and value == f"value-{i}-" + "x" * (i % 50)
            assert headers == "origin=sarama" and ts > 0
        stamps = [r[4] for r in recs]
        assert stamps == sorted(stamps)  # the producer's timestamps, i ms apart, kept


def test_zstd_over_produce_v3_is_refused_as_kafka_does(binary: Path, cluster: MockCluster) -> None:
    # Sarama 1.22 sends zstd batches in Produce v3; Kafka requires v7 for zstd and answers
    # UNSUPPORTED_COMPRESSION_TYPE, and so does mockbroker.
    cluster.create_topic("sarama-zstd", PARTITIONS)
    produced = run(binary, "produce", "-codec", "zstd", "-brokers", cluster.bootstrap_servers, "-topic", "sarama-zstd",
                   "-count", "10", "-partitions", str(PARTITIONS))
    assert produced.returncode == 1
    assert "does not support the compression type" in produced.stderr
    assert all(p.next_offset == 0 for p in cluster.state.topics["sarama-zstd"].partitions)


def test_idempotent_producer(binary: Path, cluster: MockCluster) -> None:
    topic = "sarama-idempotent"
    cluster.create_topic(topic, PARTITIONS)
    common = ["-brokers", cluster.bootstrap_servers, "-topic", topic, "-count", "2000", "-partitions", str(PARTITIONS)]
    produced = run(binary, "produce", "-idempotent", *common)
    assert produced.returncode == 0 and "acked 2000" in produced.stdout, produced.stderr
    logs = cluster.state.topics[topic].partitions
    assert [log.next_offset for log in logs] == [500] * PARTITIONS  # every record exactly once
    pids = {pid for log in logs for pid in log.producers.entries}
    assert len(pids) == 1  # one producer id, tracked on every partition
    assert all(log.producers.entries[next(iter(pids))].last_seq == 499 for log in logs)
    consumed = run(binary, "consume", *common)
    assert consumed.returncode == 0 and len(consumed.stdout.splitlines()) == 2000, consumed.stderr


def test_consumer_group_balances_and_takes_over(binary: Path) -> None:
    from tests.clients.test_groups import fill

    with MockCluster(brokers=3, topics={"orders": 6}) as c:
        fill(c, "orders", 600, 6)
        result = run(binary, "group", "-brokers", c.bootstrap_servers, "-topic", "orders", "-group", "sarama-flow",
                     "-count", "600")
        committed = c.state.groups.committed_all("sarama-flow")
    assert result.returncode == 0, result.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())

    def partitions(claims: str) -> list[int]:
        return sorted(int(p) for p in claims.replace("[", " ").replace("]", " ").split())

    assert partitions(lines["balanced"]) == list(range(6)) and lines["balanced"].count("[") == 3
    assert partitions(lines["takeover"]) == list(range(6)) and lines["takeover"].count("[") == 2
    assert {offset for offset, _, _ in committed.values()} == {100}  # Sarama committed what it marked
