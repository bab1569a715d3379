"""The console's journal page over HTTP against a real cluster that confluent-kafka and kafka-python talked to
(a producer a fault rule hit, a consumer in a group, a client whose id is markup), compared row for row with
what the journal holds; and the journal's section of the report."""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from confluent_kafka import Consumer, Producer

from mockbroker.cluster import MockCluster
from mockbroker.console.journal import journal_section
from mockbroker.console.markup import Links
from mockbroker.faults.journal import JournalEntry

pytestmark = pytest.mark.clients

HOSTILE = "<img src=x onerror=alert(1)>"
ROW = re.compile(r'<tr(?: class="([^"]*)")? data-seq="(\d+)">')


class World:
    def __init__(self, cluster: MockCluster, rule_id: int) -> None:
        self.cluster = cluster
        self.rule_id = rule_id

    def get(self, query: str = "", live: bool = False) -> tuple[int, str]:
        assert self.cluster.console_url is not None
        request = urllib.request.Request(self.cluster.console_url + "journal" + query,
                                         headers={"X-Console-Part": "live"} if live else {})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def rows(self, query: str) -> list[tuple[int, str]]:
        status, text = self.get(query, live=True)
        assert status == 200, text
        return [(int(seq), classes or "") for classes, seq in ROW.findall(text)]

    def seqs(self, query: str) -> list[int]:
        return [seq for seq, _ in self.rows(query)]

    def entries(self, **filters: Any) -> list[JournalEntry]:
        return self.cluster.state.journal.entries(**filters)


def newest_first(entries: list[JournalEntry]) -> list[int]:
    return [e.seq for e in reversed(entries)][:200]


def _consume(cluster: MockCluster, topic: str, count: int) -> None:
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "readers", "client.id": "consumer-1",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 20
    while got < count and time.monotonic() < deadline:
        m = c.poll(0.1)
        if m is not None and m.error() is None:
            got += 1
    c.commit(asynchronous=False)
    c.close()
    assert got == count


def settle(cluster: MockCluster) -> None:
    """Until the journal stops growing: the closed clients' last requests are in it before pages are compared."""
    seen, deadline = -1, time.monotonic() + 5
    while len(cluster.state.journal.entries()) != seen and time.monotonic() < deadline:
        seen = len(cluster.state.journal.entries())
        time.sleep(0.2)


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with MockCluster(control_port=0, topics={"orders": 2, "other": 1}) as cluster:
        rule = cluster.add_fault(api="Produce", error="NOT_LEADER_OR_FOLLOWER", topic="orders", times=1,
                                 name="first produce fails")
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "producer-1", "linger.ms": 1,
                      "retry.backoff.ms": 20})
        for i in range(5):
            p.produce("orders", f"v{i}".encode(), partition=i % 2)
        assert p.flush(15) == 0
        p.close()
        assert rule.hits == 1
        _consume(cluster, "orders", 5)
        hostile = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": HOSTILE, "linger.ms": 1})
        hostile.produce("other", b"x")
        assert hostile.flush(15) == 0
        hostile.close()
        from kafka import KafkaProducer

        kp = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id="kafka-python-1")
        kp.send("other", b"y").get(timeout=15)
        kp.close()
        settle(cluster)
        yield World(cluster, rule.id)


def test_every_request_newest_first(world: World) -> None:
    assert world.seqs("") == newest_first(world.entries())
    assert world.seqs("?limit=3") == newest_first(world.entries())[:3]


@pytest.mark.parametrize("api", ["Produce", "produce", "0"])
def test_filter_by_api(world: World, api: str) -> None:
    produce = world.entries(api="Produce")
    assert len(produce) >= 3
    shown = world.seqs(f"?api={api}")
    assert shown == newest_first(produce)
    fetch_seq = world.entries(api="Fetch")[0].seq
    assert fetch_seq not in shown


def test_filter_by_error_and_fault(world: World) -> None:
    failed = [e for e in world.entries() if e.errors]
    assert any("NOT_LEADER_OR_FOLLOWER" in e.errors for e in failed)
    rows = world.rows("?error=any")
    assert [seq for seq, _ in rows] == newest_first(failed)
    assert all("error" in classes.split() for _, classes in rows)
    named = world.seqs("?error=not_leader_or_follower")
    assert named == newest_first([e for e in failed if "NOT_LEADER_OR_FOLLOWER" in e.errors])

    hit = [e for e in world.entries() if e.faults]
    assert len(hit) == 1 and hit[0].api == "Produce" and hit[0].faults == [world.rule_id]
    for query in ("?fault=any", f"?fault={world.rule_id}"):
        rows = world.rows(query)
        assert rows == [(hit[0].seq, "error fault")]
    assert world.seqs(f"?fault={world.rule_id + 7}") == []
    _, text = world.get("?fault=any", live=True)
    assert f"rule {world.rule_id} first produce fails" in text
    assert f'href="/ui/journal?fault={world.rule_id}"' in text
    assert 'href="/ui/journal?error=NOT_LEADER_OR_FOLLOWER"' in text


def test_filter_by_client_topic_group(world: World) -> None:
    mine = world.entries(client_id="producer-1")
    assert world.seqs("?client_id=producer-1") == newest_first(mine)
    consumer_seq = world.entries(client_id="consumer-1")[-1].seq
    assert consumer_seq not in world.seqs("?client_id=producer-1")

    about_orders = [e for e in world.entries() if "orders" in (e.about.get("topics") or {})]
    assert {"Produce", "Fetch"} <= {e.api for e in about_orders}
    shown = world.seqs("?topic=orders")
    assert shown == newest_first(about_orders)
    assert world.entries(api="ApiVersions")[0].seq not in shown
    assert world.seqs("?topic=orders&api=Fetch&client_id=consumer-1") == newest_first(
        [e for e in about_orders if e.api == "Fetch" and e.client_id == "consumer-1"])

    in_group = [e for e in world.entries() if "readers" in (e.about.get("groups") or [])]
    assert {"JoinGroup", "OffsetCommit"} <= {e.api for e in in_group} or {"ConsumerGroupHeartbeat"} <= {
        e.api for e in in_group}
    assert world.seqs("?group=readers") == newest_first(in_group)


def test_filter_by_broker(world: World) -> None:
    assert world.seqs("?broker=0") == newest_first(world.entries(broker=0)) == newest_first(world.entries())
    assert world.seqs("?broker=1") == []


def test_rows_link_to_their_filters(world: World) -> None:
    _, text = world.get("?api=Produce&client_id=producer-1", live=True)
    for href in ('/ui/journal?api=Produce', '/ui/journal?client_id=producer-1', '/ui/journal?broker=0',
                 '/ui/topics/orders', '/ui/journal?topic=orders'):
        assert f'href="{href}"' in text, href
    _, text = world.get("?group=readers&api=OffsetCommit", live=True)
    assert 'href="/ui/groups/readers"' in text and 'href="/ui/journal?group=readers"' in text


def test_unknown_filters_are_400_pages(world: World) -> None:
    status, text = world.get("?api=Prodcue")
    assert status == 400 and "did you mean &#x27;Produce&#x27;" in text
    status, text = world.get("?error=NOT_LEADR_OR_FOLLOWER")
    assert status == 400 and "NOT_LEADER_OR_FOLLOWER" in text
    status, text = world.get("?broker=zero")
    assert status == 400 and "broker must be an integer" in text


def test_page_form_summary_and_chart(world: World) -> None:
    status, page = world.get("?api=Produce&limit=2")
    assert status == 200
    form = re.search(r"<form [^>]*>.*?</form>", page, re.S)
    assert form is not None
    assert 'method="get"' in form.group(0) and 'class="filters"' in form.group(0)
    assert "data-api" not in form.group(0)
    assert 'name="api" value="Produce"' in form.group(0) and 'name="limit" value="2"' in form.group(0)
    produce = world.entries(api="Produce")
    summary = re.search(r'<div class="summary">.*?</div></div>', page, re.S)
    assert summary is not None
    numbers = [int(n) for n in re.findall(r"<b>(\d+)</b>", summary.group(0))]
    assert numbers[:3] == [2, len(produce), len(world.entries())]
    assert numbers[3] == sum(1 for e in produce if e.errors) == 1
    assert numbers[4] == 1
    _, live = world.get("?api=Produce", live=True)
    assert "<html" not in live and "<form" not in live
    svg = re.search(r"<svg .*?</svg>", live, re.S)
    assert svg is not None and 'data-api="Produce"' in svg.group(0)
    assert 'class="mark error"' in svg.group(0) and 'class="mark fault"' in svg.group(0)
    assert "Fetch" not in svg.group(0)  # the chart is of the requests shown


def test_client_chosen_markup_is_text(world: World) -> None:
    hostile = world.entries(client_id=HOSTILE)
    assert hostile
    _, page = world.get()
    assert "<img" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    _, page = world.get("?client_id=" + quote(HOSTILE))
    assert "<img" not in page
    assert [int(seq) for _, seq in ROW.findall(page)] == newest_first(hostile)
    svg = re.search(r"<svg .*?</svg>", world.get()[1], re.S)
    assert svg is not None
    assert "onerror" not in svg.group(0) and "producer-1" not in svg.group(0)  # no client ids in the chart


def test_report_section(world: World) -> None:
    text = world.cluster.call(journal_section, world.cluster, Links(anchors=True), 4)
    assert "<section" not in text  # the report gives it its section (id "journal") and heading
    assert [int(seq) for _, seq in ROW.findall(text)] == newest_first(world.entries())[:4]
    assert "/ui/" not in text and "<img" not in text and "<svg " in text
    whole = world.cluster.call(journal_section, world.cluster, Links(anchors=True), 10_000)
    assert 'href="#topic-orders"' in whole and 'href="#faults"' in whole
    assert len(ROW.findall(whole)) == len(world.entries())
