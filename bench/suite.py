"""`make bench`: every load against mockbroker and its peers in one run, side by side.

    python -m bench.suite [--repeat 5] [--quick] [--no-readme] [--brokers NAME,...]

Brokers: mockbroker, mockbroker with the C extension off (MOCKBROKER_PURE_PYTHON=1, to show what the
strict record checks cost without it), librdkafka's mock cluster and Tansu (bench/peers.py).  Each row
is the median over --repeat runs; the ratio columns are mockbroker's cost divided by the peer's (time,
or 1/rate for MB/s rows), so <= 1.00 means mockbroker is at least as fast.  Results go to
bench/results.json; the table in docs/benchmarks.md between its bench markers and the chart
docs/img/bench-results.png are regenerated from them (bench/report.py).  --quick runs tiny loads once
and touches no files (CI uses it to prove the benchmark still runs); its numbers mean nothing.
"""

from __future__ import annotations

import argparse
import atexit
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import loads
from bench.peers import PEERS, Peer, cpu_ms_between, raise_fd_limit, start_mockbroker

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    unit: str
    higher_is_better: bool = False
    throughput: bool = True


ROWS = (
    Row("c100k_produce", "confluent-kafka 100k x 100 B, 4 partitions: produce", "s"),
    Row("c100k_consume", "confluent-kafka 100k x 100 B, 4 partitions: consume", "s"),
    Row("aio100k_produce", "aiokafka 100k x 100 B, 4 partitions: produce", "s"),
    Row("aio100k_consume", "aiokafka 100k x 100 B, 4 partitions: consume", "s"),
    Row("c1m_produce", "confluent-kafka 1M x 100 B, 16 partitions, lz4: produce", "s"),
    Row("c1m_consume", "confluent-kafka 1M x 100 B, 16 partitions, lz4: consume", "s"),
    Row("big_produce", "1 MiB messages: produce", "MB/s", higher_is_better=True),
    Row("big_consume", "1 MiB messages: consume", "MB/s", higher_is_better=True),
    Row("raw_fetch", "1 MiB batches: raw Fetch answers", "GB/s", higher_is_better=True),
    Row("lat_p50", "produce latency p50, acks=all, 1,000/s", "ms", throughput=False),
    Row("lat_p99", "produce latency p99, acks=all, 1,000/s", "ms", throughput=False),
    Row("follow_p50", "a consumer following 1,000/s: delivery p50", "ms", throughput=False),
    Row("follow_p99", "a consumer following 1,000/s: delivery p99", "ms", throughput=False),
    Row("start", "process start to first Metadata answer", "ms", throughput=False),
    Row("join1", "group join, 1 member (classic)", "s", throughput=False),
    Row("join3", "group join, 3 members (classic)", "s", throughput=False),
    Row("meta10k", "Metadata for 10k partitions (100 x 100)", "ms", throughput=False),
    Row("clients", "a client's connection: ApiVersions, Metadata, close", "us", throughput=False),
    Row("rss_per_mb", "RSS growth per stored MB", "MB/MB", throughput=False),
    Row("rss_conn", "RSS per idle connection (1,000 open)", "KiB", throughput=False),
)
# The broker's own CPU (user + system, bench.peers.cpu_reading) while it serves each load: far steadier than wall time
# on a small shared VM, where the clients and the broker compete for the same two cores.
# Loads with phases (bench.loads: Peer.phase_done) fill one row per phase shown; their consume topics'
# untimed fills are shown for the 1M lz4 load, where the record checks of its large batches are most
# of the broker's work.
CPU_ROWS = (
    Row("cpu_c100k_produce", "confluent-kafka 100k x 100 B: produce", "ms", throughput=False),
    Row("cpu_c100k_consume", "confluent-kafka 100k x 100 B: consume", "ms", throughput=False),
    Row("cpu_aio100k_produce", "aiokafka 100k x 100 B: produce", "ms", throughput=False),
    Row("cpu_aio100k_consume", "aiokafka 100k x 100 B: consume", "ms", throughput=False),
    Row("cpu_c1m_produce", "confluent-kafka 1M x 100 B, lz4: produce", "ms", throughput=False),
    Row("cpu_c1m_fill", "1M x 100 B, lz4: filling the consume topic (untimed)", "ms", throughput=False),
    Row("cpu_c1m_consume", "confluent-kafka 1M x 100 B, lz4: consume", "ms", throughput=False),
    Row("cpu_big", "256 x 1 MiB: produce + consume + raw fetch", "ms", throughput=False),
    Row("cpu_lat", "produce at 1,000/s, acks=all, 2 s", "ms", throughput=False),
    Row("cpu_follow", "a consumer following 1,000/s, 2 s (with its long polls)", "ms", throughput=False),
    Row("cpu_clients_clients", "1,000 short-lived clients (ApiVersions, Metadata)", "ms", throughput=False),
)
BROKERS: tuple[tuple[str, Callable[[], Peer]], ...] = (
    PEERS[0],
    ("mockbroker (pure Python)", lambda: start_mockbroker(pure_python=True)),
    # strict validation off: no CRC, decompression or per-record checks (README: what the trade is)
    ("mockbroker (envelope checks)", lambda: start_mockbroker("mock.produce.validation=envelope")),
    # every append written to a data directory before its answer (docs/data-dir-and-snapshots.md)
    ("mockbroker (data dir)", lambda: start_mockbroker(f"mock.data.dir={_bench_data_dir()}")),
    *PEERS[1:],
)
# the rows mockbroker's variants (pure Python, envelope checks, data dir) are measured on; not the following consumer,
# whose cost is the Fetch path, or the clients' connections (the variants change only how produced
# batches are checked)
VARIANT_ROWS = ({r.key for r in ROWS if r.throughput} | {"lat_p50", "lat_p99"}
                | {r.key for r in CPU_ROWS if r.key not in ("cpu_follow", "cpu_clients_clients")})


def _bench_data_dir() -> str:
    """A fresh data directory for the data dir variant, removed when the run ends."""
    folder = tempfile.mkdtemp(prefix="mockbroker-bench-data-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


@dataclass(frozen=True)
class Scale:
    records: int = 100_000
    big_records: int = 1_000_000
    large_count: int = 256
    latency_s: float = 2.0
    meta_topics: int = 100
    rss_mib: int = 192
    connections: int = 1000


QUICK = Scale(records=5_000, big_records=20_000, large_count=16, latency_s=0.3, meta_topics=5, rss_mib=8,
              connections=50)


Samples = dict[str, dict[str, list[float]]]


class Recorder:
    """Collects samples per row and broker; a load that fails is reported and the others go on."""

    def __init__(self) -> None:
        self.samples: Samples = {}
        self.failures: dict[str, str] = {}

    def add(self, broker: str, key: str, value: float) -> None:
        self.samples.setdefault(key, {}).setdefault(broker, []).append(value)

    def attempt(self, broker: str, what: str, keys: tuple[str, ...], load: Callable[[], Any]) -> None:
        try:
            values = load()
        except Exception as exc:
            self.failures[f"{broker}: {what}"] = f"{type(exc).__name__}: {exc}"
            print(f"{broker}: {what} failed ({type(exc).__name__}: {exc})", file=sys.stderr)
            return
        for key, value in zip(keys, values if isinstance(values, tuple) else (values,), strict=False):
            self.add(broker, key, value)


FRESH = {"1 MiB messages"}  # runs on a fresh broker process: a GB of earlier data makes page faults slow here


Load = tuple[str, tuple[str, ...], "str | None", Callable[[Peer], Any]]


# the 100k loads take a fraction of a second and vary most (this VM's fast and slow spells split their
# samples into two groups): several samples per repetition, so each median rests on more of them
SHORT_SAMPLES = 4
# the 1M lz4 consume is the client's (librdkafka decompressing, the Python loop taking a million
# messages: the broker answers a few fetches and long polls) and its samples fall into two groups ~0.5 s
# apart on every broker: the topic is read again this many more times per repetition
C1M_REREADS = 2


def round_loads(scale: Scale, i: int) -> list[Load]:
    """The loads of one repetition: (name, the rows it fills, its broker-CPU row or None, the load)."""
    short: list[Load] = [
        (f"confluent 100k #{n}", ("c100k_produce", "c100k_consume"), "cpu_c100k",
         lambda peer, n=n: loads.produce_consume(peer, f"c100k-{i}-{n}", scale.records, 100, 4))
        for n in range(1, SHORT_SAMPLES + 1)
    ] + [
        (f"aiokafka 100k #{n}", ("aio100k_produce", "aio100k_consume"), "cpu_aio100k",
         lambda peer, n=n: loads.aiokafka_produce_consume(peer, f"aio-{i}-{n}", scale.records, 100, 4))
        for n in range(1, SHORT_SAMPLES + 1)
    ]
    return [
        *short,
        ("confluent 1M", ("c1m_produce", "c1m_consume"), "cpu_c1m",
         lambda peer: loads.produce_consume(peer, f"c1m-{i}", scale.big_records, 100, 16, "lz4")),
        *[(f"confluent 1M, read again #{n}", ("c1m_consume",), None,
           lambda peer: loads.consume_again(peer, f"c1m-{i}", scale.big_records, 16))
          for n in range(1, C1M_REREADS + 1)],
        ("1 MiB messages", ("big_produce", "big_consume", "raw_fetch"), "cpu_big",
         lambda peer: loads.large_messages(peer, f"big-{i}", scale.large_count, min(64, scale.large_count))),
        ("latency", ("lat_p50", "lat_p99"), "cpu_lat",
         lambda peer: loads.produce_latency(peer, f"lat-{i}", seconds=scale.latency_s)),
        ("following consumer", ("follow_p50", "follow_p99"), "cpu_follow",
         lambda peer: loads.follow_latency(peer, f"follow-{i}", seconds=scale.latency_s)),
        ("short-lived clients", ("clients",), "cpu_clients",
         lambda peer: loads.client_connections(peer, f"clients-{i}", scale.connections)),
        ("join 1", ("join1",), None, lambda peer: loads.group_join(peer, f"join1-{i}", 1)),
        ("join 3", ("join3",), None, lambda peer: loads.group_join(peer, f"join3-{i}", 3)),
    ]


def measure(chosen: list[tuple[str, Callable[[], Peer]]], scale: Scale, repeat: int, rec: Recorder) -> None:
    """All brokers run at once (idle ones cost nothing) and take each load in turn, repetition by
    repetition (each repetition starting with the next broker), so a slow spell on the machine hits
    every broker alike.  Memory and start time are measured afterwards on fresh processes."""
    running: dict[str, Peer] = {}
    starts = dict(chosen)
    try:
        for name, start in chosen:
            try:
                running[name] = start()
            except Exception as exc:  # a peer that cannot run here is reported, not fatal
                rec.failures[name] = f"{type(exc).__name__}: {exc}"
                print(f"{name}: not measured ({rec.failures[name]})", file=sys.stderr)
        for i in range(repeat):
            print(f"repetition {i + 1} of {repeat} ...", file=sys.stderr, flush=True)
            # each repetition starts with the next broker: whatever the load before leaves behind (a
            # peer still busy, the page cache) falls on every broker in turn, not always on the first
            order = _rotated(list(running.items()), i)
            for what, keys, cpu_key, load in round_loads(scale, i):
                for name, peer in order:
                    if not _measures(name, keys[0]):
                        continue
                    timed = _with_cpu(rec, name, cpu_key, load)
                    if what in FRESH:
                        rec.attempt(name, what, keys, lambda name=name, timed=timed: _on_fresh(starts[name], timed))
                    else:
                        rec.attempt(name, what, keys, lambda peer=peer, timed=timed: timed(peer))
        for name, peer in running.items():
            if _measures(name, "meta10k"):
                rec.attempt(name, "metadata", ("meta10k",), lambda peer=peer: _metadata(peer, scale))
    finally:
        for peer in running.values():
            peer.stop()
    fresh = [(name, start) for name, start in chosen if name in running and _measures(name, "rss_conn")]
    for name, start in fresh:
        peer = start()  # memory on a fresh process
        try:
            rec.attempt(name, "idle connections", ("rss_conn",),
                        lambda peer=peer: loads.rss_per_connection(peer, scale.connections))
            rec.attempt(name, "stored bytes", ("rss_per_mb",),
                        lambda peer=peer: loads.rss_per_stored_mb(peer, "rss", scale.rss_mib)[0])
        finally:
            peer.stop()
    # start times interleaved, each round starting with the next broker: measured broker after broker,
    # a spell of the machine's fell on one broker's starts alone (one run: 150-166 ms for mockbroker's
    # seven, then 82-89 for the mock's, where interleaved starts a minute later gave 94 and 80)
    for i in range(repeat):
        for name, start in _rotated(fresh, i):
            rec.attempt(name, "start", ("start",), lambda start=start: loads.start_to_metadata(start))


def _rotated(items: list[Any], i: int) -> list[Any]:
    """``items`` starting at position i (modulo their count): repetition i starts with the next one."""
    shift = i % max(len(items), 1)
    return items[shift:] + items[:shift]


CPU_KEYS = frozenset(row.key for row in CPU_ROWS)


def _with_cpu(rec: Recorder, broker: str, cpu_key: str | None, load: Callable[[Peer], Any]) -> Callable[[Peer], Any]:
    """``load``, also recording the broker process's CPU milliseconds: under ``cpu_key`` for the whole
    load, and under ``<cpu_key>_<phase>`` for each phase the load marks (Peer.phase_done), where such a
    row is shown.  A "setup" phase (making the load's topics: the peers do it in different ways, an admin
    request or a helper's call) counts in no row, the whole load's included.  Nothing is recorded for a
    load that fails."""
    if cpu_key is None:
        return load

    def run(peer: Peer) -> Any:
        before = last = peer.cpu_reading()
        phases: dict[str, float] = {}

        def phase_done(phase: str) -> None:
            nonlocal before, last
            now = peer.cpu_reading()
            phases[phase] = cpu_ms_between(last, now)
            last = now
            if phase == "setup":  # making the load's topics: no part of any row
                before = now

        peer.on_phase = phase_done
        try:
            values = load(peer)
        finally:
            peer.on_phase = None
        for phase, ms in phases.items():
            if f"{cpu_key}_{phase}" in CPU_KEYS:
                rec.add(broker, f"{cpu_key}_{phase}", ms)
        if cpu_key in CPU_KEYS:
            rec.add(broker, cpu_key, cpu_ms_between(before, peer.cpu_reading()))
        return values

    return run


def _on_fresh(start: Callable[[], Peer], load: Callable[[Peer], Any]) -> Any:
    peer = start()
    try:
        return load(peer)
    finally:
        peer.stop()


def _measures(broker: str, key: str) -> bool:
    """mockbroker's variants (pure Python, envelope checks, data dir) take the throughput, latency and CPU loads."""
    return not broker.startswith("mockbroker (") or key in VARIANT_ROWS


def _metadata(peer: Peer, scale: Scale) -> float:
    loads.make_partitions(peer, "meta", scale.meta_topics, 100)
    return loads.metadata_ms(peer)[0]


def medians(samples: Samples) -> dict[str, dict[str, float]]:
    return {key: {broker: statistics.median(values) for broker, values in by_broker.items()}
            for key, by_broker in samples.items()}


def ratio(row: Row, ours: float | None, peer: float | None) -> float | None:
    """mockbroker's cost over the peer's: <= 1.0 means mockbroker is at least as good."""
    if ours is None or peer is None or ours <= 0 or peer <= 0:
        return None
    return peer / ours if row.higher_is_better else ours / peer


def print_table(results: dict[str, dict[str, float]], brokers: list[str], rows: tuple[Row, ...] = ROWS) -> None:
    peers = [b for b in brokers if not b.startswith("mockbroker")]
    head = f"{'load':58} {'unit':>6} " + " ".join(f"{b[:14]:>14}" for b in brokers)
    head += " " + " ".join(f"{'mb/' + p[:9]:>12}" for p in peers)
    print(head)
    for row in rows:
        values = results.get(row.key, {})
        cells = " ".join(f"{_fmt(values.get(b)):>14}" for b in brokers)
        ratios = " ".join(f"{_fmt(ratio(row, values.get('mockbroker'), values.get(p)), 2):>12}" for p in peers)
        print(f"{row.label:58} {row.unit:>6} {cells} {ratios}")


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}" if digits != 2 else f"{value:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="tiny loads, one run, no files written")
    ap.add_argument("--no-readme", action="store_true", help="do not rewrite docs/benchmarks.md and the chart")
    ap.add_argument("--brokers", default=None, help="comma-separated subset of: " + ", ".join(n for n, _ in BROKERS))
    ap.add_argument("--out", type=Path, default=HERE / "results.json")
    args = ap.parse_args(argv)
    raise_fd_limit()
    scale = QUICK if args.quick else Scale()
    repeat = 1 if args.quick else args.repeat
    chosen = [b for b in BROKERS if args.brokers is None or b[0] in args.brokers.split(",")]
    rec = Recorder()
    began = time.monotonic()
    measure(chosen, scale, repeat, rec)
    samples, failed = rec.samples, rec.failures
    results = medians(samples)
    brokers = [n for n, _ in chosen if any(n in by_broker for by_broker in samples.values())]
    print(f"\nmedian of {repeat} run(s); mb/peer: mockbroker's cost over the peer's (<= 1.00: at least as fast)")
    print_table(results, brokers)
    print("\nbroker CPU (user + system) per load, median")
    print_table(results, brokers, CPU_ROWS)
    print(f"\n{time.monotonic() - began:.0f} s", file=sys.stderr)
    if "mockbroker" not in brokers or any(k.startswith("mockbroker") for k in failed):
        return 1
    if args.quick:
        return 0
    document: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"), "repeat": repeat, "short_samples": SHORT_SAMPLES,
        "c1m_reads": 1 + C1M_REREADS, "machine": _machine(),
        "brokers": brokers, "not_measured": failed, "results": results, "samples": samples,
    }
    args.out.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    if not args.no_readme:
        from bench import report

        report.write_all(document)
    return 0


def _machine() -> str:
    import os

    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


if __name__ == "__main__":
    sys.exit(main())
