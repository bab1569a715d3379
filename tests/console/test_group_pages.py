"""The console's group and transaction pages, fetched over HTTP from a MockCluster that real clients use:
classic (confluent-kafka, kafka-python) and KIP-848 consumer groups with their members, hosts, assignments,
committed offsets and lag; a share group's ACQUIRED records; a transaction Ongoing then CompleteCommit; an
unknown group's 404; client-chosen names shown as text.  Plus the pieces on their own (assignment decoding,
record ranges, the client host)."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from urllib.parse import quote

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from mockbroker.cluster import MockCluster
from mockbroker.console.groups import decode_assignment
from mockbroker.console.share_groups import record_ranges
from mockbroker.handlers.groups_common import client_host
from mockbroker.protocol import api

pytestmark = pytest.mark.clients

XSS = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(control_port=0, topics={"orders": 1, "payments": 1, "jobs": 1, "kp": 1, "evil": 1}) as c:
        yield c


def get(cluster: MockCluster, path: str) -> tuple[int, str]:
    url = (cluster.console_url or "").split("?")[0] + path
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def group_page(cluster: MockCluster, group_id: str) -> str:
    status, body = get(cluster, "groups/" + quote(group_id, safe=""))
    assert status == 200, body
    return body


class Tables(HTMLParser):
    """Every table's rows as lists of cell texts, the header row first."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "div" and self._cell is not None and self._cell:
            self._cell.append(" | ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip(" |"))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def table_with(html: str, header: str) -> list[dict[str, str]]:
    """The rows (as header -> text) of the table whose header row has ``header``."""
    for rows in Tables(html).tables:
        if rows and header in rows[0]:
            return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]
    raise AssertionError(f"no table with a {header!r} column")


def produce(cluster: MockCluster, topic: str, count: int, partitions: int = 1) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 2})
    for i in range(count):
        p.produce(topic, f"v{i}".encode(), partition=i % partitions)
    assert p.flush(10) == 0


def wait_for(check: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def consume(consumer: Consumer, count: int, timeout: float = 20) -> None:
    got = 0
    deadline = time.monotonic() + timeout
    while got < count:
        assert time.monotonic() < deadline, f"read {got} of {count}"
        for m in consumer.consume(count - got, 0.2):
            if m.error() is None:
                got += 1


def offsets(cluster: MockCluster, group_id: str) -> dict[tuple[str, int], dict[str, str]]:
    rows = table_with(group_page(cluster, group_id), "committed")
    return {(r["topic"], int(r["partition"])): r for r in rows}


def check_lag(row: dict[str, str], committed: int, hw: int) -> None:
    assert (int(row["committed"]), int(row["log end (high watermark)"])) == (committed, hw)
    assert int(row["lag"]) == hw - committed


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_confluent_group_page_members_assignment_offsets_and_lag(cluster: MockCluster, protocol: str) -> None:
    group, topic = f"shop-{protocol}", "orders" if protocol == "classic" else "payments"
    produce(cluster, topic, 20)  # (the topic is new: its log end is 20)
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "client.id": "shop-app",
                  "group.protocol": protocol, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  **({"session.timeout.ms": 6000, "heartbeat.interval.ms": 200} if protocol == "classic" else {})})
    try:
        c.subscribe([topic])
        consume(c, 4)
        c.commit(asynchronous=False)
        page = group_page(cluster, group)
        [member] = table_with(page, "member id")
        assert member["client id"] == "shop-app"
        assert member["client host"] == "/127.0.0.1"  # Kafka's form (Java's InetAddress.toString()), both protocols
        assigned = member["assignment" if protocol == "classic" else "assigned"]
        assert assigned == f"{topic}: 0"
        check_lag(offsets(cluster, group)[(topic, 0)], 4, 20)
        consume(c, 10)
        c.commit(asynchronous=False)
        check_lag(offsets(cluster, group)[(topic, 0)], 14, 20)
        [listed] = [r for r in table_with(get(cluster, "groups")[1], "total lag") if r["group"] == group]
        assert (listed["type"], listed["members"], listed["total lag"]) == (protocol, "1", "6")
        if protocol == "classic":
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
            described = admin.describe_consumer_groups([group])[group].result(10)
            assert [(m.client_id, m.host) for m in described.members] == [("shop-app", "/127.0.0.1")]
        else:  # ConsumerGroupDescribe answers the same form
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
            described = admin.describe_consumer_groups([group])[group].result(10)
            assert [(m.client_id, m.host) for m in described.members] == [("shop-app", "/127.0.0.1")]
    finally:
        c.close()


def test_kafka_python_group_page(cluster: MockCluster) -> None:
    from kafka import KafkaConsumer

    produce(cluster, "kp", 6)
    c = KafkaConsumer("kp", bootstrap_servers=cluster.bootstrap_servers, group_id="kp-group", client_id="kp-client",
                      auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=6000,
                      heartbeat_interval_ms=200)
    try:
        got = 0
        deadline = time.monotonic() + 20
        while got < 6 and time.monotonic() < deadline:
            got += sum(len(batch) for batch in c.poll(timeout_ms=200).values())
        assert got == 6
        c.commit()
        [member] = table_with(group_page(cluster, "kp-group"), "member id")
        assert (member["client id"], member["client host"], member["assignment"]) == ("kp-client", "/127.0.0.1",
                                                                                      "kp: 0")
        check_lag(offsets(cluster, "kp-group")[("kp", 0)], 6, 6)
    finally:
        c.close()


def test_share_group_page_shows_acquired_records(cluster: MockCluster) -> None:
    from confluent_kafka import ShareConsumer

    from tests.clients.test_share_groups import set_group_config

    set_group_config(cluster, "workers", "share.auto.offset.reset", "earliest")
    produce(cluster, "jobs", 5)
    c = ShareConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "workers",
                       "client.id": "worker-1", "share.acknowledgement.mode": "explicit"})
    try:
        c.subscribe(["jobs"])
        seen: list[object] = []
        deadline = time.monotonic() + 20
        while len(seen) < 5 and time.monotonic() < deadline:
            seen += [m for m in c.poll(0.2) if m.error() is None]
        assert len(seen) == 5
        page = group_page(cluster, "workers")
        [member] = table_with(page, "member id")
        assert (member["client id"], member["assignment"]) == ("worker-1", "jobs: 0")
        [acquired] = table_with(page, "acquired by")
        assert (acquired["offsets"], acquired["records"], acquired["state"], acquired["delivery count"]) == (
            "0..4", "5", "ACQUIRED", "1")
        assert acquired["acquired by"] == member["member id"] and acquired["lock expires"]
        [listed] = [r for r in table_with(get(cluster, "groups")[1], "total lag") if r["group"] == "workers"]
        assert (listed["type"], listed["members"], listed["total lag"]) == ("share", "1", "5")
    finally:
        c.close()


def test_transaction_page_ongoing_then_complete_commit(cluster: MockCluster) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "pay-tx"})
    p.init_transactions(10)
    p.begin_transaction()
    p.produce("payments", b"x", partition=0)
    assert p.flush(10) == 0
    reader = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "pay-group"})
    try:  # offsets sent with the transaction: pending in the group until it commits
        p.send_offsets_to_transaction([TopicPartition("payments", 0, 7)], reader.consumer_group_metadata(), 10)
    finally:
        reader.close()
    [pending] = table_with(group_page(cluster, "pay-group"), "transaction")
    assert (pending["transaction"].split(" (")[0], pending["topic"], pending["offset"]) == ("pay-tx", "payments", "7")

    def row() -> dict[str, str]:
        [found] = [r for r in table_with(get(cluster, "transactions")[1], "transactional id")
                   if r["transactional id"] == "pay-tx"]
        return found

    ongoing = row()
    assert (ongoing["state"], ongoing["partitions"], ongoing["epoch"]) == ("Ongoing", "payments: 0", "0")
    assert ongoing["groups"] == "pay-group"
    assert int(ongoing["producer id"]) >= 0 and ongoing["started"] != "-"
    p.commit_transaction(10)
    wait_for(lambda: row()["state"] == "CompleteCommit")
    assert row()["partitions"] == ""
    assert offsets(cluster, "pay-group")[("payments", 0)]["committed"] == "7"
    assert "no offsets pending in open transactions" in group_page(cluster, "pay-group")


def test_unknown_group_is_a_404_page(cluster: MockCluster) -> None:
    status, body = get(cluster, "groups/no-such-group")
    assert status == 404 and "GROUP_ID_NOT_FOUND" in body and "no group &#x27;no-such-group&#x27;" in body


def test_names_clients_chose_are_shown_as_text(cluster: MockCluster) -> None:
    produce(cluster, "evil", 2)
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": XSS, "client.id": XSS,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "session.timeout.ms": 6000,
                  "heartbeat.interval.ms": 200})
    try:
        c.subscribe(["evil"])
        consume(c, 2)
        c.commit(asynchronous=False)
        for body in (group_page(cluster, XSS), get(cluster, "groups")[1]):
            assert "<script>alert" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
        [member] = table_with(group_page(cluster, XSS), "member id")
        assert member["client id"] == XSS  # (the parser unescapes: the text on the page is the client's id)
    finally:
        c.close()


# -- the pieces on their own ------------------------------------------------------------------------------
def test_decode_assignment_reads_the_consumer_protocol() -> None:
    mod = api.module("ConsumerProtocolAssignment")
    value = mod.ConsumerProtocolAssignment([mod.TopicPartition("a", [2, 0]), mod.TopicPartition("<b>", [1])], None)
    for version in (0, 3):
        out = bytearray(version.to_bytes(2, "big"))
        mod.WRITERS[version](value, out, [])
        assert decode_assignment(bytes(out)) == {"a": [0, 2], "<b>": [1]}
    assert decode_assignment(b"") is None
    assert decode_assignment(b"\x00\x00\x00\x00\x00\x05ab") is None  # a topic count running past the end


def test_record_ranges_join_alike_neighbours() -> None:
    def rec(offset: int, state: str, member: str | None = None) -> dict[str, object]:
        return {"offset": offset, "state": state, "delivery_count": 1, "member_id": member,
                "lock_deadline_ms": 5 if member else None}

    records = [rec(3, "ACQUIRED", "m"), rec(4, "ACQUIRED", "m"), rec(5, "ACQUIRED", "n"), rec(7, "ACQUIRED", "n"),
               rec(8, "ACKNOWLEDGED")]
    assert [(a, b, r["state"], r["member_id"]) for a, b, r in record_ranges(records)] == [
        (3, 4, "ACQUIRED", "m"), (5, 5, "ACQUIRED", "n"), (7, 7, "ACQUIRED", "n"), (8, 8, "ACKNOWLEDGED", None)]


def test_client_host_is_kafkas_form() -> None:
    assert client_host("127.0.0.1:54321") == "/127.0.0.1"
    assert client_host("::1:54321") == "/::1"
    assert client_host("?") == ""


def test_report_sections_anchor_every_group() -> None:
    from mockbroker.console.groups import groups_section
    from mockbroker.console.markup import Links
    from mockbroker.console.transactions import transactions_section

    with MockCluster(topics={"orders": 1}) as own:
        for group_id, offset in (("shop-classic", 2), (XSS, 6)):
            committer = Consumer({"bootstrap.servers": own.bootstrap_servers, "group.id": group_id})
            committer.commit(offsets=[TopicPartition("orders", 0, offset)], asynchronous=False)
            committer.close()
        producer = Producer({"bootstrap.servers": own.bootstrap_servers, "transactional.id": "pay-tx"})
        producer.init_transactions(15)
        producer.begin_transaction()
        producer.produce("orders", b"paid", partition=0)
        producer.commit_transaction(15)
        links = Links(anchors=True)
        html = own.call(lambda: groups_section(own, links) + transactions_section(own, links))
    for group_id in ("shop-classic", XSS):
        anchor = "group-" + quote(group_id, safe="")
        assert f'id="{anchor}"' in html and f'href="#{anchor}"' in html
    assert "<script>alert" not in html
    assert "pay-tx" in html and "CompleteCommit" in html
    committed = {row[2] for rows in Tables(html).tables if rows[0][:3] == ["topic", "partition", "committed"]
                 for row in rows[1:]}
    assert committed == {"2", "6"}  # every group's offsets are in the report
