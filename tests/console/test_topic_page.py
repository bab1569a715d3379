"""The console's topic page over HTTP, with real clients: partitions and their offsets, the newest records paged
backwards, transaction markers and the records of aborted and open transactions shown as such, and the errors a
person meets (an unknown topic or partition, a bad number) as one line on a 4xx page."""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from html import unescape

import pytest
from confluent_kafka import Producer

from mockbroker.cluster import MockCluster

pytestmark = pytest.mark.clients


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def offsets_shown(page: str) -> list[int]:
    """The offsets in the records table, top to bottom (the table's first column when one partition is shown)."""
    body = page.split('<table class="records">', 1)[1]
    return [int(m) for m in re.findall(r"<tr><td>(\d+)</td><td><time", body)]


def text(page: str) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", page))


def test_newest_records_first_paged_backwards() -> None:
    with MockCluster(control_port=0, topics={"pages": 2}) as cluster:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
        for i in range(120):
            producer.produce("pages", value=f"value-{i}".encode(), partition=0)
        later = int(time.time() * 1000) + 60_000  # the newest of the topic, by its timestamp
        producer.produce("pages", value=b"on partition one", partition=1, timestamp=later)
        assert producer.flush(15) == 0
        status, page = get(cluster.console_url + "topics/pages?partition=0&limit=50")
        assert status == 200
        assert offsets_shown(page) == list(range(119, 69, -1))
        older = re.search(r'<a href="([^"]+)" class="older">older</a>', page)
        assert older is not None
        status, page = get(cluster.control_url + unescape(older.group(1)))
        assert offsets_shown(page) == list(range(69, 19, -1))
        status, page = get(cluster.console_url + "topics/pages?partition=0&before=20&limit=50")
        assert offsets_shown(page) == list(range(19, -1, -1))
        assert 'class="older"' not in page  # the log's start: nothing older
        # the partitions table: log start, high watermark, last stable offset per partition
        status, page = get(cluster.console_url + "topics/pages")
        rows = re.findall(r"<tr><td><a href=\"/ui/topics/pages\?partition=(\d)\">\d</a></td>((?:<td>[^<]*</td>)+)</tr>",
                          page)
        cells = {int(p): re.findall(r"<td>([^<]*)</td>", rest) for p, rest in rows}
        assert cells[0][3:6] == ["0", "120", "120"] and cells[1][3:6] == ["0", "1", "1"]
        # all partitions: the newest records of the topic by timestamp, merged
        shown = text(page)
        assert shown.index("on partition one") < shown.index("value-119") and "value-69" not in shown


def test_records_moved_below_the_log_start_are_not_shown() -> None:
    with MockCluster(control_port=0, topics={"trimmed": 1}) as cluster:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
        for i in range(10):
            producer.produce("trimmed", value=f"v{i}".encode(), partition=0)
        assert producer.flush(15) == 0
        cluster.call(cluster.state.partition("trimmed", 0).advance_log_start, 6)
        page = get(cluster.console_url + "topics/trimmed?partition=0")[1]
        assert offsets_shown(page) == [9, 8, 7, 6]


def test_transaction_markers_and_aborted_and_open_records() -> None:
    with MockCluster(control_port=0, topics={"txns": 1}) as cluster:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "console-tx",
                             "linger.ms": 0})
        producer.init_transactions(15)
        producer.begin_transaction()
        producer.produce("txns", value=b"kept", partition=0)
        producer.commit_transaction(15)
        producer.begin_transaction()
        producer.produce("txns", value=b"thrown away", partition=0)
        assert producer.flush(15) == 0  # written before the abort (an abort drops what is not sent yet)
        producer.abort_transaction(15)
        producer.begin_transaction()
        producer.produce("txns", value=b"still open", partition=0)
        assert producer.flush(15) == 0
        page = get(cluster.console_url + "topics/txns?partition=0")[1]
        rows = [text(row) for row in page.split('<table class="records">', 1)[1].split("<tr>")[2:]]
        assert "still open" in rows[0] and "transaction open" in rows[0]
        assert "ABORT marker" in rows[1]
        assert "thrown away" in rows[2] and "transaction aborted" in rows[2]
        assert "COMMIT marker" in rows[3]
        assert "kept" in rows[4] and "transaction committed" in rows[4]
        producer.abort_transaction(15)


@pytest.mark.parametrize(("path", "status", "line"), [
    ("topics/missing", 404, "unknown topic 'missing'"),
    ("topics/txns?partition=4", 400, "topic 'txns' has partitions 0..0, not 4"),
    ("topics/txns?partition=one", 400, "partition must be an integer, not 'one'"),
    ("topics/txns?before=x", 400, "before must be an integer, not 'x'"),
    ("no/such/page", 404, "no console page /ui/no/such/page"),
])
def test_a_bad_address_is_one_line_on_a_4xx_page(path: str, status: int, line: str) -> None:
    with MockCluster(control_port=0, topics={"txns": 1}) as cluster:
        got, page = get(cluster.console_url + path)
        assert got == status
        assert re.findall(r'<p class="problem">(.*?)</p>', page) == [line.replace("'", "&#x27;")]


def test_with_a_token_the_console_wants_it_once_then_keeps_it_as_a_cookie() -> None:
    with MockCluster(control_port=0, control_token="s3cret", topics={"t": 1}) as cluster:
        assert cluster.console_url is not None and cluster.console_url.endswith("/ui/?token=s3cret")
        status, _ = get(f"{cluster.control_url}/ui/")
        assert status == 401
        status, _ = get(f"{cluster.control_url}/ui/?token=wrong")
        assert status == 401
        with urllib.request.urlopen(cluster.console_url, timeout=10) as response:
            cookie = response.headers["Set-Cookie"]
        assert cookie.startswith("mockbroker_token=s3cret") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
        # the cookie opens the API routes the page's script calls
        request = urllib.request.Request(f"{cluster.control_url}/faults", headers={"Cookie": "mockbroker_token=s3cret"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
        # a token in the query opens only GET pages, never an action
        request = urllib.request.Request(f"{cluster.control_url}/faults?token=s3cret", data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 401


def test_the_console_needs_no_schema_registry_extra() -> None:
    """A runtime-only install has no fastavro or protobuf: the console still serves (values as text or hex)."""
    import subprocess
    import sys

    code = """
import sys, urllib.request
for name in ("fastavro", "google.protobuf"):
    sys.modules[name] = None  # as if not installed: importing it raises ImportError
from mockbroker.cluster import MockCluster
with MockCluster(control_port=0, topics={"t": 1}) as cluster:
    from mockbroker.state.inspect import append_records
    cluster.call(append_records, cluster.state.partition("t", 0), [(b"k", b"\\x00\\x00\\x00\\x00\\x01\\xff", [])], 0)
    page = urllib.request.urlopen(cluster.console_url + "topics/t").read().decode()
    assert "00 00 00 00 01 ff" in page, page
    print("served")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "served", done.stderr[-2000:]


def test_a_page_on_another_site_cannot_change_the_cluster() -> None:
    """A browser sends Origin with a cross-site POST (a "simple" one needs no preflight): refused with 403, while
    the console's own pages (same origin) and clients that send no Origin act as before."""
    with MockCluster(brokers=2, control_port=0, topics={"t": 1}) as cluster:
        body = b'{"action": "broker_down", "broker": 1}'
        for origin, status in (("http://evil.example", 403), ("null", 403), (cluster.control_url, 200), (None, 200)):
            headers = {"Content-Type": "text/plain"} | ({"Origin": origin} if origin else {})
            request = urllib.request.Request(f"{cluster.control_url}/actions", data=body, headers=headers,
                                             method="POST")
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    got = response.status
            except urllib.error.HTTPError as exc:
                got = exc.code
                assert "from another site" in exc.read().decode()
            assert got == status, origin
            assert (1 in cluster.state.brokers) == (status == 403), origin  # refused: nothing happened
            if status == 200:
                cluster.broker_up(1)
        # reading stays open to any page (the console's pages are plain GETs)
        request = urllib.request.Request(cluster.console_url or "", headers={"Origin": "http://evil.example"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200


def test_the_newest_records_of_a_wide_topic_read_only_the_partitions_holding_them() -> None:
    from mockbroker.console.topics import newest_across, newest_rows
    from mockbroker.state.inspect import append_records

    with MockCluster(topics={"wide": 2000}) as cluster:
        def fill() -> None:
            for index in range(2000):
                log = cluster.state.partition("wide", index)
                append_records(log, [(None, f"old-{index}".encode(), [])], 1_000 + index)
            append_records(cluster.state.partition("wide", 7), [(None, b"newest", [])], 10_000)

        cluster.call(fill)
        rows = cluster.call(newest_across, cluster, "wide", 3)
        assert [(r.partition, r.value) for r in rows] == [(7, b"newest"), (1999, b"old-1999"), (1998, b"old-1998")]
        # the same as reading every partition and merging
        def read_all() -> list:
            return [r for i in range(2000) for r in newest_rows(cluster.state.partition("wide", i))]

        every = sorted(cluster.call(read_all), key=lambda r: (r.timestamp, r.offset), reverse=True)[:3]
        assert [(r.partition, r.offset) for r in every] == [(r.partition, r.offset) for r in rows]
        # a report lists the first thousand partitions and counts the rest
        from mockbroker.console.markup import Links
        from mockbroker.console.topics import topic_section

        section = cluster.call(topic_section, cluster, Links(anchors=True), "wide", 3)
        assert section.count('href="#topic-wide"') == 1000 and "and 1000 more partitions" in section
