"""The HTML report (mockbroker.console.report): what a cluster saw, in one file that opens from disk.

Real clients produce and consume over sockets; the report is read back as text: records escaped, the fault
rules that ran (also one removed before the report, with its hits), no script and no URL outside the file.
Also FaultSet's history of removed rules, and ``mockbroker serve --report`` run as a process.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from mockbroker.cluster import MockCluster
from mockbroker.console import report
from mockbroker.faults import FaultSet
from mockbroker.faults.fault_set import REMOVED_KEPT
from mockbroker.state.clock import ManualClock
from tests.processes import interrupt_group

pytestmark = pytest.mark.clients

VALUES = [b"plain text", b"<script>alert(1)</script>", b'{"amount": 12}']
ROOT = Path(__file__).resolve().parents[2]


def part(page: str, name: str) -> str:
    """The report's section ``name`` (up to the next of the report's own sections)."""
    start = page.index(f'<section id="{name}">')
    ends = [page.find(f'<section id="{other}">', start + 1) for other, _ in report.SECTIONS]
    return page[start:min([e for e in ends if e > start] or [len(page)])]


def produce(bootstrap: str, topic: str = "orders") -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "retry.backoff.ms": 20, "linger.ms": 1})
    for value in VALUES:
        producer.produce(topic, value, key=b"k<1>")
    assert producer.flush(15) == 0


def consume(bootstrap: str, group: str, count: int, topic: str = "orders") -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                got.append(message.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


@pytest.fixture(scope="module")
def seen() -> Iterator[tuple[MockCluster, str]]:
    """A cluster that saw a produce (one NOT_LEADER_OR_FOLLOWER from a rule removed since), a group's
    consume and commit, and a rule still listed; with its report written."""
    with MockCluster(topics={"payments": 2}) as cluster:
        with cluster.fault(api="Produce", error="NOT_LEADER_OR_FOLLOWER", name="first produce") as rule:
            produce(cluster.bootstrap_servers)
        assert rule.hits == 1
        assert consume(cluster.bootstrap_servers, "billing<g>", len(VALUES)) == VALUES
        cluster.add_fault(api="Fetch", action="delay", delay_ms=1, times=None, topic="nowhere", name="idle")
        yield cluster, cluster.report_html("after the consume", "failed", "AssertionError: <b>boom</b>")


def test_the_records_are_there_escaped(seen: tuple[MockCluster, str]) -> None:
    _, page = seen
    topics = part(page, "topics")
    assert 'id="topic-orders"' in topics and 'id="topic-payments"' in topics
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in topics and "plain text" in topics and "amount" in topics
    assert "k&lt;1&gt;" in topics
    assert "<script" not in page  # a value is text, and the report has no script of its own
    # an internal topic shows only when it holds records: __consumer_offsets holds the group's commit (issue 53),
    # __transaction_state (no transaction here) is not there at all
    assert 'id="topic-__consumer_offsets"' in page and 'id="topic-__transaction_state"' not in page


def test_the_header_says_the_outcome_and_the_failure(seen: tuple[MockCluster, str]) -> None:
    cluster, page = seen
    head = page[:page.index('<section id="cluster">')]
    assert '<span class="pill bad">failed</span>' in head
    assert "AssertionError: &lt;b&gt;boom&lt;/b&gt;" in head and "<b>boom" not in head
    assert cluster.bootstrap_servers in head and cluster.state.cluster_id in head
    assert all(f'href="#{key}"' in head for key, _ in report.SECTIONS)  # the nav, anchors in the file


def test_every_rule_that_ran_with_its_hits(seen: tuple[MockCluster, str]) -> None:
    _, page = seen
    rows = re.findall(r"<tr>(.*?)</tr>", part(page, "faults"))
    first = next(r for r in rows if "first produce" in r)
    assert "NOT_LEADER_OR_FOLLOWER" in first and "<td>1 / 1</td>" in first and ">removed<" in first
    idle = next(r for r in rows if "idle" in r)
    assert "0 / ∞" in idle and ">removed<" not in idle


def test_self_contained(seen: tuple[MockCluster, str]) -> None:
    _, page = seen
    assert page.startswith("<!doctype html>") and page.count("<html") == 1
    assert "<style>" in page and ".pill.ok" in page  # the console's stylesheet, inlined
    assert re.findall(r'\b(?:src|href|action)\s*=\s*"(?!#)[^"]*"', page) == []
    assert "<link" not in page and "http:" not in page and "https:" not in page and "url(" not in page
    assert 'id="topic-orders"' in page and 'href="#topic-orders"' in page  # the cluster table's links land


def test_the_group_and_its_offsets(seen: tuple[MockCluster, str]) -> None:
    _, page = seen
    groups_part = part(page, "groups")
    assert "billing&lt;g&gt;" in groups_part and "orders" in groups_part and ">3<" in groups_part


def test_the_journal_rows(seen: tuple[MockCluster, str]) -> None:
    _, page = seen
    journal_part = part(page, "journal")
    assert "Produce" in journal_part and "NOT_LEADER_OR_FOLLOWER" in journal_part and "Fetch" in journal_part


def test_write_report_from_python(tmp_path: Path) -> None:
    with MockCluster() as cluster:
        produce(cluster.bootstrap_servers, topic="audit")
        path = cluster.write_report(tmp_path / "new" / "run.html")
    assert path == tmp_path / "new" / "run.html"
    text = path.read_text(encoding="utf-8")
    assert "<title>run · mockbroker report</title>" in text and 'id="topic-audit"' in text
    assert "&lt;script&gt;" in text and "pill bad" not in text  # no outcome given: no pill


def test_a_part_that_cannot_be_drawn_leaves_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(cluster: MockCluster, links: object) -> str:
        raise RuntimeError("<not drawn>")

    monkeypatch.setattr(report, "transactions_section", broken)
    with MockCluster(topics={"kept": 1}) as cluster:
        page = cluster.report_html("partial")
    assert "could not be drawn: RuntimeError: &lt;not drawn&gt;" in part(page, "transactions")
    assert 'id="topic-kept"' in part(page, "topics")


def test_removed_rules_are_kept_for_ran() -> None:
    faults = FaultSet(ManualClock())
    first = faults.add(api="Produce", error="NOT_LEADER_OR_FOLLOWER")
    second = faults.add(api="Fetch", action="delay", delay_ms=5)
    third = faults.add(api="Metadata", action="delay", delay_ms=5)
    assert faults.remove(second.id) and not faults.remove(second.id)
    assert [r.id for r in faults.removed] == [second.id]
    assert [r.id for r in faults.ran()] == [first.id, second.id, third.id]
    assert [r.id for r in faults.listed()] == [first.id, third.id]
    faults.clear()
    assert list(faults.listed()) == [] and [r.id for r in faults.ran()] == [first.id, second.id, third.id]


def test_the_history_of_removed_rules_is_bounded() -> None:
    faults = FaultSet(ManualClock())
    ids = [faults.add(api="Fetch", action="delay", delay_ms=1).id for _ in range(REMOVED_KEPT + 5)]
    for rule_id in ids:
        faults.remove(rule_id)
    assert [r.id for r in faults.ran()] == ids[5:]


def test_reset_forgets_the_removed_rules() -> None:
    with MockCluster() as cluster:
        with cluster.fault(api="Produce", error="NOT_LEADER_OR_FOLLOWER"):
            pass
        assert len(cluster.faults.ran()) == 1
        cluster.reset()
        assert cluster.faults.ran() == []


def _serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--port", "0", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_serve_writes_its_report_when_stopped(tmp_path: Path) -> None:
    target = tmp_path / "made" / "serve.html"
    proc = _serve("--report", str(target))
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("bootstrap.servers="), (line, proc.stderr.read() if proc.stderr else "")
        produce(line.split("=", 1)[1], topic="served")
        assert not target.exists()  # written when the broker stops
    finally:
        interrupt_group(proc)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert f"report={target}" in out.splitlines()
    text = target.read_text(encoding="utf-8")
    assert 'id="topic-served"' in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_serve_cannot_write_its_report(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    proc = _serve("--report", str(blocker / "serve.html"))
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("bootstrap.servers=")
    finally:
        interrupt_group(proc)
    out, err = proc.communicate()
    assert proc.returncode == 1
    assert "report=" not in out
    problems = [line for line in err.splitlines() if "--report" in line]
    assert len(problems) == 1 and problems[0].startswith("mockbroker serve: error: argument --report: cannot write")
    assert "Traceback" not in err


def test_serve_report_flag(tmp_path: Path) -> None:
    shown = subprocess.run([sys.executable, "-m", "mockbroker", "serve", "--help"], capture_output=True, text=True,
                           timeout=30, cwd=ROOT)
    assert "--report PATH" in shown.stdout
    refused = subprocess.run([sys.executable, "-m", "mockbroker", "serve", "--port", "0", "--report", str(tmp_path)],
                             capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert refused.returncode == 2 and "--report" in refused.stderr and "is a folder" in refused.stderr
