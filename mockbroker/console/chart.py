"""The journal's chart: requests per second by API over a time window, as an inline SVG rendered on the server.

One line per API (the eight most requested; the rest summed as "other"), a legend, axes with a few labelled
ticks (seconds ago, requests/s), and under the plot a row of red marks where requests were answered with errors
and a row of orange marks where fault rules acted, each mark titled ("3 errors at 14:03:05").  No script: the
same entries and the same ``now_ms`` always give the same text.  Client ids never reach the SVG.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from mockbroker.console.markup import Safe, join, tag
from mockbroker.faults.journal import JournalEntry

TOP_APIS = 8
OTHER = "other"
MAX_BUCKETS = 150
FINE_WINDOW_S = 120  # up to this window, buckets of one second
BUCKET_SIZES_S = (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1800, 3600)
PALETTE = ("#2d5bd7", "#1d7a3e", "#8e44ad", "#c0398b", "#00838f", "#6d4c41", "#5c6bc0", "#7cb342")
OTHER_COLOUR = "#9aa0ab"
ERROR_COLOUR = "#b3261e"
FAULT_COLOUR = "#e08a00"

# the drawing's geometry (user units of the viewBox; the SVG is scaled to the page's width)
WIDTH, HEIGHT = 960, 232
LEFT, RIGHT = 56, 800  # the plot's x range; the legend sits to its right
TOP, BOTTOM = 24, 168  # the plot's y range
ERROR_ROW, FAULT_ROW, MARK_HEIGHT = 176, 190, 10
AXIS_LABELS_Y = 218


def bucket_seconds(window_s: int) -> int:
    """One second up to a two-minute window; above, the smallest of BUCKET_SIZES_S giving at most MAX_BUCKETS."""
    if window_s <= FINE_WINDOW_S:
        return 1
    for size in BUCKET_SIZES_S[1:]:
        if math.ceil(window_s / size) <= MAX_BUCKETS:
            return size
    return math.ceil(window_s / MAX_BUCKETS)


@dataclass
class Buckets:
    """Counts per bucket: bucket ``i`` of ``count`` holds the entries ``(count - 1 - i) * size_s`` to
    ``(count - i) * size_s`` seconds older than ``now_ms`` (the last bucket is the newest)."""

    now_ms: int
    size_s: int
    count: int
    apis: list[str]  # the series, most requested first, "other" last when there is one
    requests: dict[str, list[int]]
    errors: list[int]  # requests answered with errors
    faults: list[int]  # fault rule hits (a request two rules acted on counts twice)

    def start_ms(self, index: int) -> int:
        return self.now_ms - (self.count - index) * self.size_s * 1000


def bucket_entries(entries: Sequence[JournalEntry], now_ms: int, window_s: int = 300,
                   bucket_s: int | None = None) -> Buckets:
    """The entries of the last ``window_s`` seconds before ``now_ms``, counted per bucket and API."""
    window_s = max(1, int(window_s))
    size = max(1, int(bucket_s)) if bucket_s else bucket_seconds(window_s)
    count = math.ceil(window_s / size)
    size_ms = size * 1000
    placed: list[tuple[int, JournalEntry]] = []
    for entry in entries:
        back = max(0, now_ms - entry.time_ms) // size_ms
        if back < count:
            placed.append((count - 1 - back, entry))
    totals = Counter(entry.api for _, entry in placed)
    ranked = sorted(totals, key=lambda api: (-totals[api], api))
    shown = ranked if len(ranked) <= TOP_APIS else ranked[:TOP_APIS]
    apis = shown + ([OTHER] if len(ranked) > len(shown) else [])
    requests = {api: [0] * count for api in apis}
    errors, faults = [0] * count, [0] * count
    for index, entry in placed:
        requests[entry.api if entry.api in requests and entry.api != OTHER else OTHER][index] += 1
        if entry.errors:
            errors[index] += 1
        faults[index] += len(entry.faults)
    return Buckets(now_ms, size, count, apis, requests, errors, faults)


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is at least ``value`` (1 for nothing)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * power >= value * (1 - 1e-9):
            return float(step * power)
    return 10 * power


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _ago(seconds: int) -> str:
    if seconds == 0:
        return "now"
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h ago"
    if seconds >= 120 and seconds % 60 == 0:
        return f"{seconds // 60} min ago"
    return f"{seconds} s ago"


def _span(buckets: Buckets) -> str:
    return _ago(buckets.count * buckets.size_s).removesuffix(" ago")


def _clock(time_ms: int) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(time_ms // 1000))


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _x(buckets: Buckets, index: float) -> float:
    return LEFT + (RIGHT - LEFT) * index / buckets.count


def _axes(buckets: Buckets, top_rate: float) -> Safe:
    parts = []
    for fraction in (0.0, 0.5, 1.0):
        y = BOTTOM - (BOTTOM - TOP) * fraction
        parts.append(tag("line", x1=LEFT, x2=RIGHT, y1=f"{y:.1f}", y2=f"{y:.1f}",
                         stroke="#dde0e6" if fraction else "#99a", stroke_width=1))
        parts.append(tag("text", _number(top_rate * fraction), x=LEFT - 6, y=f"{y + 4:.1f}", text_anchor="end"))
    parts.append(tag("text", "requests/s", x=4, y=TOP - 10, class_="axis-title"))
    window = buckets.count * buckets.size_s
    for fraction in (0.0, 0.25, 0.5, 0.75, 1.0):
        seconds = round(window * (1 - fraction))
        x = LEFT + (RIGHT - LEFT) * fraction
        parts.append(tag("line", x1=f"{x:.1f}", x2=f"{x:.1f}", y1=BOTTOM, y2=FAULT_ROW + MARK_HEIGHT + 2,
                         stroke="#dde0e6", stroke_width=1))
        anchor = "start" if fraction == 0 else "end" if fraction == 1 else "middle"
        parts.append(tag("text", _ago(seconds), x=f"{x:.1f}", y=AXIS_LABELS_Y, text_anchor=anchor))
    parts.append(tag("text", "errors", x=LEFT - 6, y=ERROR_ROW + 9, text_anchor="end"))
    parts.append(tag("text", "faults", x=LEFT - 6, y=FAULT_ROW + 9, text_anchor="end"))
    bucket = "one point per " + ("second" if buckets.size_s == 1 else _plural(buckets.size_s, "second"))
    parts.append(tag("text", bucket, x=RIGHT, y=HEIGHT - 2, text_anchor="end", class_="axis-title"))
    return join(parts)


def _series(buckets: Buckets, top_rate: float) -> Safe:
    lines = []
    for number, api in enumerate(buckets.apis):
        colour = OTHER_COLOUR if api == OTHER else PALETTE[number % len(PALETTE)]
        points = " ".join(f"{_x(buckets, i + 0.5):.1f},"
                          f"{BOTTOM - (BOTTOM - TOP) * (n / buckets.size_s) / top_rate:.1f}"
                          for i, n in enumerate(buckets.requests[api]))
        lines.append(tag("polyline", tag("title", api), points=points, fill="none", stroke=colour,
                         stroke_width=1.5, stroke_linejoin="round", class_="series", data_api=api))
    return join(lines)


def _marks(buckets: Buckets, counts: list[int], word: str, row: int, colour: str, kind: str) -> Safe:
    width = max(2.0, (RIGHT - LEFT) / buckets.count - 1)
    marks = []
    for index, n in enumerate(counts):
        if n:
            at = _clock(buckets.start_ms(index))
            marks.append(tag("rect", tag("title", f"{_plural(n, word)} at {at}"), x=f"{_x(buckets, index):.1f}",
                             y=row, width=f"{width:.1f}", height=MARK_HEIGHT, fill=colour, class_=f"mark {kind}",
                             data_count=n))
    return join(marks)


def _legend(buckets: Buckets) -> Safe:
    items = []
    for number, api in enumerate(buckets.apis):
        colour = OTHER_COLOUR if api == OTHER else PALETTE[number % len(PALETTE)]
        y = TOP + 14 * number
        total = sum(buckets.requests[api])
        items.append(tag("g", tag("rect", "", x=RIGHT + 16, y=y, width=10, height=10, rx=2, fill=colour)
                         + tag("text", f"{api} ({total})", x=RIGHT + 31, y=y + 9), class_="legend-item"))
    return tag("g", join(items), class_="legend")


def chart_svg(entries: Sequence[JournalEntry], now_ms: int, window_s: int = 300, bucket_s: int | None = None) -> Safe:
    """Requests per second by API over the last ``window_s`` seconds before ``now_ms`` (see the module's text)."""
    buckets = bucket_entries(entries, now_ms, window_s, bucket_s)
    peak = max((n for series in buckets.requests.values() for n in series), default=0)
    top_rate = nice_ceiling(peak / buckets.size_s)
    body = _axes(buckets, top_rate)
    if buckets.apis:
        body += _series(buckets, top_rate) + _legend(buckets)
    else:
        body += tag("text", f"no requests in the last {_span(buckets)}",
                    x=(LEFT + RIGHT) // 2, y=(TOP + BOTTOM) // 2, text_anchor="middle", class_="empty")
    body += _marks(buckets, buckets.errors, "error", ERROR_ROW, ERROR_COLOUR, "error")
    body += _marks(buckets, buckets.faults, "fault hit", FAULT_ROW, FAULT_COLOUR, "fault")
    label = f"requests per second by API over the last {_span(buckets)}"
    return tag("svg", tag("title", label) + body, viewBox=f"0 0 {WIDTH} {HEIGHT}",
               width="100%", class_="chart", role="img", aria_label=label, preserveAspectRatio="xMinYMin meet",
               data_bucket_s=buckets.size_s, data_buckets=buckets.count)
