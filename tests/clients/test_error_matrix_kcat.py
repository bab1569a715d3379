"""Error paths with kcat (the librdkafka 2.0 inside Debian's kcat), where its command line reaches them: a
record over the topic's ``max.message.bytes`` among small ones, and a group whose committed offset
retention deleted, under ``auto.offset.reset`` earliest and error.  (The rest of the matrix needs API
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
