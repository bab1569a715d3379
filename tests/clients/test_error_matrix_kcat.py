"""Error paths with kcat (the librdkafka 2.0 inside Debian's kcat), where its command line reaches them: a
record over the topic's ``max.message.bytes`` among small ones, a group whose committed offset
retention deleted, under ``auto.offset.reset`` earliest and error, and ``-o`` past the log's end or below
its start (after DeleteRecords) under each ``auto.offset.reset``.  (The rest of the matrix needs API
calls kcat does not have: see test_error_matrix_confluent.py.)
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest

from mockbroker.cluster import MockCluster
from tests.clients.test_error_matrix_confluent import new_topic, topic_with_expired_head

KCAT = shutil.which("kcat")
pytestmark = [
    pytest.mark.clients,
    pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install kcat; .ci/install-clients.sh)"),
]


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as c:
        yield c


def _kcat(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert KCAT is not None
    return subprocess.run([KCAT, *args], input=stdin, capture_output=True, text=True, timeout=30)


def test_kcat_oversized_record_fails_alone(cluster: MockCluster) -> None:
    topic = new_topic(cluster, max_message_bytes=2000)
    lines = [f"s{i}" for i in range(5)] + ["B" * 5000] + [f"s{i}" for i in range(5, 10)]
    # one record a batch: Kafka refuses a whole batch, and librdkafka never splits one
    produced = _kcat("-b", cluster.bootstrap_servers, "-P", "-t", topic, "-p", "0", "-X", "batch.num.messages=1",
                     "-X", "linger.ms=0", stdin="\n".join(lines) + "\n")
    assert produced.returncode == 1
    assert produced.stderr.count("Delivery failed") == 1 and "Message size too large" in produced.stderr
    consumed = _kcat("-b", cluster.bootstrap_servers, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == [line for line in lines if not line.startswith("B")]


@pytest.mark.parametrize("reset", ["earliest", "error"])
def test_kcat_group_offset_removed_by_retention(cluster: MockCluster, reset: str) -> None:
    group = f"g-kcat-{reset}"
    topic = topic_with_expired_head(cluster, group)  # committed 3, log start now 10, n0..n4 kept
    consumed = _kcat("-b", cluster.bootstrap_servers, "-G", group, topic, "-X", f"auto.offset.reset={reset}",
                     "-e", "-q")
    if reset == "earliest":
        assert consumed.returncode == 0, consumed.stderr
        assert consumed.stdout.splitlines() == [f"n{i}" for i in range(5)]
    else:
        assert consumed.returncode == 1 and consumed.stdout == ""
        assert "Offset out of range" in consumed.stderr


@pytest.mark.parametrize("reset", ["earliest", "latest", "error"])
@pytest.mark.parametrize("where", ["past-the-end", "below-the-start"])
def test_kcat_fetch_outside_the_log_resets_by_policy(cluster: MockCluster, where: str, reset: str) -> None:
    """kcat -o N outside the log: OFFSET_OUT_OF_RANGE (with empty records), then librdkafka resets by
    auto.offset.reset (earliest: from the log start; latest: nothing until new records; error: fails)."""
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    topic = new_topic(cluster)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(20):
        producer.produce(topic, f"v{i}".encode(), partition=0)
    assert producer.flush(20) == 0
    start = 0
    if where == "below-the-start":
        start = 10
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})  # kept alive until the answer
        deleted = admin.delete_records([TopicPartition(topic, 0, start)])
        assert next(iter(deleted.values())).result(20).low_watermark == start
    offset = "25" if where == "past-the-end" else "5"
    consumed = _kcat("-b", cluster.bootstrap_servers, "-C", "-t", topic, "-p", "0", "-o", offset,
                     "-X", f"auto.offset.reset={reset}", "-e", "-q")
    if reset == "error":
        assert consumed.returncode == 1 and consumed.stdout == ""
        assert "Offset out of range" in consumed.stderr
        return
    assert consumed.returncode == 0, consumed.stderr
    expected = [f"v{i}" for i in range(start, 20)] if reset == "earliest" else []
    assert consumed.stdout.splitlines() == expected
