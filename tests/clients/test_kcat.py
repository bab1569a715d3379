"""kcat (librdkafka 2.0 inside Debian's kcat) produces and consumes through mockbroker."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mockbroker.cluster import MockCluster

KCAT = shutil.which("kcat")
pytestmark = [
    pytest.mark.clients,
    pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install kcat; .ci/install-clients.sh)"),
]
COUNT = 10_000
PARTITIONS = 4


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as c:
        yield c


def kcat(*args: str, stdin: str | None = None, timeout: float = 60) -> str:
    result = subprocess.run([KCAT, *args], input=stdin, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.mark.parametrize("acks", ["0", "1", "all"])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume(cluster: MockCluster, tmp_path: Path, codec: str, acks: str) -> None:
    topic = f"kcat-{codec}-{acks}"
    cluster.create_topic(topic, PARTITIONS)
    lines = [f"key-{i}:value-{i}-" + "x" * (i % 50) for i in range(COUNT)]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n")
    kcat("-b", cluster.bootstrap_servers, "-P", "-t", topic, "-K", ":", "-z", codec, "-H", "origin=kcat",
         "-X", f"acks={acks}", "-X", "linger.ms=5", "-l", str(source))
    out = kcat("-b", cluster.bootstrap_servers, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
               "-f", "%p\t%o\t%k\t%s\t%h\t%T\n")
    rows = [line.split("\t") for line in out.splitlines()]
    assert len(rows) == COUNT
    per_partition: dict[int, list[tuple[int, str, str]]] = {}
    for p, o, k, v, h, ts in rows:
        assert h == "origin=kcat" and int(ts) > 0
        per_partition.setdefault(int(p), []).append((int(o), k, v))
    assert set(per_partition) <= set(range(PARTITIONS))
    expected = {line.split(":", 1)[0]: line.split(":", 1)[1] for line in lines}
    order = {line.split(":", 1)[0]: i for i, line in enumerate(lines)}
    for recs in per_partition.values():
        assert [o for o, _, _ in recs] == list(range(len(recs)))  # offsets 0..n-1
        assert all(expected[k] == v for _, k, v in recs)  # byte-identical values
        assert [order[k] for _, k, _ in recs] == sorted(order[k] for _, k, _ in recs)  # produce order kept
    assert sum(len(r) for r in per_partition.values()) == COUNT


def test_metadata_listing(cluster: MockCluster) -> None:
    cluster.create_topic("kcat-listed", 3)
    out = kcat("-b", cluster.bootstrap_servers, "-L", "-t", "kcat-listed")
    assert "3 brokers" in out and "3 partitions" in out
