"""The journal's chart (mockbroker.console.chart) on hand-made journal entries: counts per bucket, bucket sizes
over long windows, the top APIs and "other", error and fault marks with their titles, the legend, escaping."""

from __future__ import annotations

import re
import time

from mockbroker.console.chart import OTHER, bucket_entries, bucket_seconds, chart_svg, nice_ceiling
from mockbroker.faults.journal import JournalEntry

NOW = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC


def entry(seq: int, ago_ms: int, api: str = "Produce", errors: tuple[str, ...] = (), faults: tuple[int, ...] = (),
          client_id: str = "client") -> JournalEntry:
    return JournalEntry(seq, NOW - ago_ms, 0, "127.0.0.1:1", client_id, None, api, 0, 9, seq, 0.5, {}, errors, faults,
                        "answered")


def clock(time_ms: int) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(time_ms // 1000))


def test_bucket_sizes() -> None:
    assert bucket_seconds(1) == bucket_seconds(60) == bucket_seconds(120) == 1
    assert bucket_seconds(121) == bucket_seconds(150) == 2
    assert bucket_seconds(300) == 2
    assert bucket_seconds(900) == 10
    assert bucket_seconds(3600) == 30
    for window in (121, 300, 301, 1000, 3600, 7200, 86400):
        assert (window + bucket_seconds(window) - 1) // bucket_seconds(window) <= 150


def test_counts_per_bucket() -> None:
    entries = [entry(1, 500), entry(2, 900), entry(3, 999), entry(4, 1000, "Fetch"), entry(5, 1500, "Fetch"),
               entry(6, 59_999), entry(7, 60_000), entry(8, -20)]  # 7: outside the window; 8: a little ahead
    b = bucket_entries(entries, NOW, window_s=60)
    assert (b.size_s, b.count) == (1, 60)
    assert b.apis == ["Produce", "Fetch"]
    assert b.requests["Produce"][59] == 4  # 500, 900, 999 ms ago and the one ahead of now
    assert b.requests["Fetch"][58] == 2
    assert b.requests["Produce"][0] == 1  # 59.999 s ago
    assert sum(b.requests["Produce"]) == 5 and sum(b.requests["Fetch"]) == 2
    assert b.start_ms(59) == NOW - 1000 and b.start_ms(0) == NOW - 60_000


def test_long_window_buckets() -> None:
    entries = [entry(1, 1000 * 1000), entry(2, 1000 * 1000 + 29_000), entry(3, 3_599_000), entry(4, 10)]
    b = bucket_entries(entries, NOW, window_s=3600)
    assert (b.size_s, b.count) == (30, 120)
    # 1000 s and 1029 s ago: the 33rd bucket back (990..1020 s) and the 34th (1020..1050 s)
    assert b.requests["Produce"][119 - 33] == 1 and b.requests["Produce"][119 - 34] == 1
    assert b.requests["Produce"][0] == 1 and b.requests["Produce"][119] == 1
    svg = chart_svg(entries, NOW, window_s=3600)
    assert 'data-bucket-s="30"' in svg and 'data-buckets="120"' in svg
    assert ">1 h ago<" in svg and ">now<" in svg and "one point per 30 seconds" in svg
    points = re.search(r'<polyline points="([^"]*)"', svg)
    assert points is not None and len(points.group(1).split()) == 120
    forced = bucket_entries(entries, NOW, window_s=3600, bucket_s=60)
    assert (forced.size_s, forced.count) == (60, 60)


def test_top_eight_apis_and_other() -> None:
    apis = ["Produce", "Fetch", "Metadata", "ApiVersions", "Heartbeat", "JoinGroup", "SyncGroup", "OffsetCommit",
            "ListOffsets", "FindCoordinator"]
    entries = []
    seq = 0
    for rank, api in enumerate(apis):
        for _ in range(20 - rank):
            seq += 1
            entries.append(entry(seq, 100 * seq, api))
    b = bucket_entries(entries, NOW, window_s=120)
    assert b.apis == [*apis[:8], OTHER]
    assert sum(b.requests[OTHER]) == (20 - 8) + (20 - 9)
    svg = chart_svg(entries, NOW, window_s=120)
    legend = re.search(r'<g class="legend">.*?</g></g>', svg)
    assert legend is not None
    names = re.findall(r"<text [^>]*>([^<]*)</text>", legend.group(0))
    assert names == [f"{api} ({20 - rank})" for rank, api in enumerate(apis[:8])] + ["other (23)"]
    assert re.findall(r'data-api="([^"]*)"', svg) == [*apis[:8], OTHER]


def test_rates_and_axis() -> None:
    entries = [entry(i, 100 + i) for i in range(7)]  # 7 requests in the newest second
    svg = chart_svg(entries, NOW, window_s=30)
    assert ">10<" in svg and ">5<" in svg and ">0<" in svg  # 7/s: the axis tops at 10
    assert nice_ceiling(7) == 10 and nice_ceiling(0.5) == 0.5 and nice_ceiling(0.6) == 1 and nice_ceiling(0) == 1
    assert nice_ceiling(21) == 50 and nice_ceiling(200) == 200
    # over 300 s, two-second buckets: 7 requests in one are 3.5/s
    wide = chart_svg(entries, NOW, window_s=300)
    assert ">5<" in wide and ">2.5<" in wide and ">5 min ago<" in wide


def test_error_and_fault_marks() -> None:
    entries = [entry(1, 200, errors=("NOT_LEADER_OR_FOLLOWER",), faults=(3,)),
               entry(2, 300, errors=("NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PARTITION")),
               entry(3, 5_400, "Fetch", faults=(3, 4)), entry(4, 5_500, "Fetch")]
    svg = chart_svg(entries, NOW, window_s=60)
    errors = re.findall(r'<rect ([^>]*class="mark error"[^>]*)><title>([^<]*)</title>', svg)
    faults = re.findall(r'<rect ([^>]*class="mark fault"[^>]*)><title>([^<]*)</title>', svg)
    assert [title for _, title in errors] == [f"2 errors at {clock(NOW - 1000)}"]
    assert [title for _, title in faults] == [f"2 fault hits at {clock(NOW - 6000)}",
                                              f"1 fault hit at {clock(NOW - 1000)}"]
    assert 'data-count="2"' in errors[0][0]
    assert svg == chart_svg(list(entries), NOW, window_s=60)  # the same entries draw the same chart
    quiet = chart_svg([entry(1, 100)], NOW, window_s=60)
    assert "mark error" not in quiet and "mark fault" not in quiet


def test_empty_and_escaped() -> None:
    empty = chart_svg([], NOW, window_s=300)
    assert "no requests in the last 5 min" in empty and "<polyline" not in empty
    assert 'width="100%"' in empty and 'viewBox="0 0 ' in empty
    odd = chart_svg([entry(1, 10, api="<script>x</script>", client_id="<img src=x onerror=alert(1)>")], NOW, 60)
    assert "<script>" not in odd and "&lt;script&gt;x&lt;/script&gt;" in odd
    assert "onerror" not in odd and "alert" not in odd  # client ids never reach the chart
