"""The soak: a ``mockbroker serve`` process under steady mixed load, with flat RSS: 2 minutes in the slow tier
(``make test-slow``, CI), 10 minutes as ``make soak`` (``MOCKBROKER_SOAK_SECONDS=600``).

Load (all confluent-kafka, each in its own thread, all stopping by themselves):
- an idempotent producer (acks=all) writes numbered records to ``checked``; a consumer group reads
  them back and is closed and re-created every 45 s (reconnects and rebalances);
- a transactional producer commits two transactions in three and aborts the third on ``txn``; a
  read_committed consumer group must never see an aborted record;
- a short-lived producer connects, writes to ``churn`` and disconnects every second;
- an admin client creates, describes and deletes a topic and lists groups every 3 s;
- every 15 s a fault rule is added through the HTTP control API (retriable produce errors,
  fetch delays, dropped connections, a rebalance), rules of the previous round removed;
- retention (``log.retention.ms`` a tenth of the run: 60 s in the 10-minute form, 12 s in the 2-minute one;
  ``log.retention.bytes`` 512 KiB per partition) keeps the data bounded; with bytes alone, the slow topics
  (small transactional batches and markers) would still be filling up at the end.

The broker's VmRSS is sampled every 2 s. After a warm-up (a fifth of the run), the median of the
last third of the samples must be within 10 % (or 8 MiB) of the median of the first third, and
every record the producer had acknowledged on ``checked`` must have been read back.
``MOCKBROKER_SOAK_SECONDS`` sets the run's length (default 120); the warm-up is twice the retention, so every
topic has reached its steady size before the first samples count, whatever the length.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from tests.load.broker_process import BrokerProcess

pytestmark = [pytest.mark.soak, pytest.mark.slow, pytest.mark.clients]

SECONDS = int(os.environ.get("MOCKBROKER_SOAK_SECONDS", "120"))  # make soak: 600
RATE = 300  # records a second on `checked`
RETENTION_BYTES = 512 * 1024
SEGMENT_BYTES = 256 * 1024  # below Kafka 4's 1 MiB floor for segment.bytes, which the mock does not enforce
RETENTION_MS = SECONDS * 100  # a tenth of the run: every topic reaches its steady size within the warm-up (a fifth)
MiB = 1024 * 1024

FAULTS: list[dict[str, Any]] = [
    {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "scope": "partition", "topic": "checked", "times": 2},
    {"api": "Fetch", "action": "delay", "delay_ms": 300, "times": 5},
    {"api": "Produce", "action": "drop_after", "topic": "checked", "times": 1},
    {"api": "Metadata", "action": "drop_before", "times": 1},
    {"api": "Heartbeat", "error": "REBALANCE_IN_PROGRESS", "times": 1},
    {"api": "Fetch", "error": "NOT_LEADER_OR_FOLLOWER", "scope": "partition", "topic": "txn", "times": 2},
]


class Soak:
    def __init__(self, broker: BrokerProcess) -> None:
        self.broker = broker
        self.stop = threading.Event()
        self.producing = threading.Event()  # cleared to stop the checked producer before the final read
        self.producing.set()
        self.lock = threading.Lock()
        self.acked: set[int] = set()
        self.consumed: set[int] = set()
        self.txn_committed = self.txn_read = 0
        self.aborted_seen: list[bytes] = []
        self.errors: list[str] = []
        self.counts = {"admin rounds": 0, "churn connections": 0, "faults added": 0, "consumer restarts": 0,
                       "transactions": 0}
        self.threads: list[threading.Thread] = []

    def conf(self, **extra: Any) -> dict[str, Any]:
        return {"bootstrap.servers": self.broker.bootstrap, "retry.backoff.ms": 50, **extra}

    def spawn(self, name: str, fn: Callable[[], None]) -> None:
        def run() -> None:
            try:
                fn()
            except Exception as exc:
                self.errors.append(f"{name}: {exc!r}")
                self.stop.set()

        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        self.threads.append(thread)

    # -- the checked topic: every acknowledged record is read back ---------------------------
    def checked_producer(self) -> None:
        producer = Producer(self.conf(**{"enable.idempotence": True, "acks": "all", "linger.ms": 5}))

        def delivered(err: Any, msg: Any) -> None:
            if err is None:
                with self.lock:
                    self.acked.add(int(msg.value()[:10]))

        seq = 0
        start = time.monotonic()
        while self.producing.is_set() and not self.stop.is_set():
            target = int((time.monotonic() - start) * RATE)
            while seq < target:
                producer.produce("checked", key=str(seq % 97).encode(),
                                 value=b"%010d" % seq + b"." * 140, on_delivery=delivered)
                seq += 1
            producer.poll(0.02)
        assert producer.flush(60) == 0, "the checked producer could not deliver everything"

    def checked_consumer(self) -> None:
        while not self.stop.is_set():
            consumer = Consumer(self.conf(**{"group.id": "soak-checked", "auto.offset.reset": "earliest",
                                             "session.timeout.ms": 10000}))
            consumer.subscribe(["checked"])
            until = time.monotonic() + 45
            while time.monotonic() < until and not self.stop.is_set():
                msg = consumer.poll(0.2)
                if msg is None or msg.error():
                    continue
                with self.lock:
                    self.consumed.add(int(msg.value()[:10]))
            consumer.close()
            self.counts["consumer restarts"] += 1

    # -- transactions: aborted records stay invisible to read_committed ----------------------
    def txn_producer(self) -> None:
        producer = Producer(self.conf(**{"transactional.id": "soak-txn", "linger.ms": 2}))
        producer.init_transactions(30)
        n = 0
        while not self.stop.is_set():
            commit = n % 3 != 2
            producer.begin_transaction()
            for i in range(10):
                producer.produce("txn", key=b"%d" % i, value=(b"commit-%d" if commit else b"abort-%d") % n)
            if commit:
                producer.commit_transaction(30)
                self.txn_committed += 10
            else:
                producer.abort_transaction(30)
            n += 1
            self.counts["transactions"] = n
            self.stop.wait(0.2)

    def txn_consumer(self) -> None:
        consumer = Consumer(self.conf(**{"group.id": "soak-txn", "auto.offset.reset": "earliest",
                                         "isolation.level": "read_committed"}))
        consumer.subscribe(["txn"])
        while not self.stop.is_set():
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            self.txn_read += 1
            if msg.value().startswith(b"abort"):
                self.aborted_seen.append(msg.value())
        consumer.close()

    # -- churn, admin and faults ---------------------------------------------------------------
    def churn(self) -> None:
        while not self.stop.wait(1.0):
            producer = Producer(self.conf(**{"linger.ms": 0}))
            for i in range(20):
                producer.produce("churn", value=b"churn-%d" % i)
            assert producer.flush(30) == 0, "a churn producer could not deliver"
            self.counts["churn connections"] += 1

    def admin(self) -> None:
        admin = AdminClient(self.conf())
        n = 0
        while not self.stop.wait(3.0):
            name = f"soak-tmp-{n % 4}"
            for f in admin.create_topics([NewTopic(name, 2, 1)], operation_timeout=10).values():
                f.result(10)
            resource = ConfigResource(ConfigResource.Type.TOPIC, name)
            for f in admin.describe_configs([resource]).values():
                assert "retention.bytes" in f.result(10)
            admin.list_consumer_groups().result(10)
            for f in admin.delete_topics([name], operation_timeout=10).values():
                f.result(10)
            n += 1
            self.counts["admin rounds"] = n

    def faults(self) -> None:
        n = 0
        while not self.stop.wait(15.0):
            self.broker.control_call("DELETE", "/faults")
            self.broker.control_call("POST", "/faults", FAULTS[n % len(FAULTS)])
            n += 1
            self.counts["faults added"] = n


def _mib(n: float) -> str:
    return f"{n / MiB:.1f} MiB"


def test_soak_rss_stays_flat_and_nothing_acknowledged_is_lost() -> None:
    with BrokerProcess("--brokers", "3", "--topic", "checked:3", "--topic", "txn:3", "--topic", "churn:3",
                       "--config", f"log.retention.bytes={RETENTION_BYTES}",
                       "--config", f"log.retention.ms={RETENTION_MS}",
                       # retention deletes whole segments below the active one (as Kafka): segments of 256 KiB
                       # or a quarter of the retention time keep each partition near its bounds
                       "--config", f"log.segment.bytes={SEGMENT_BYTES}",
                       "--config", f"log.roll.ms={RETENTION_MS // 4}") as broker:
        soak = Soak(broker)
        for name in ("checked_producer", "checked_consumer", "txn_producer", "txn_consumer", "churn", "admin",
                     "faults"):
            soak.spawn(name, getattr(soak, name))
        samples: list[tuple[float, int]] = []
        start = time.monotonic()
        while time.monotonic() - start < SECONDS and not soak.stop.is_set():
            assert broker.alive(), broker.log_tail()
            samples.append((time.monotonic() - start, broker.rss()))
            time.sleep(2.0)
        # the end: stop producing, let the checked consumer catch up, then stop everything
        soak.producing.clear()
        soak.threads[0].join(90)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not soak.stop.is_set():
            with soak.lock:
                if soak.acked <= soak.consumed:
                    break
            time.sleep(0.5)
        soak.stop.set()
        for thread in soak.threads:
            thread.join(60)
        broker.control_call("DELETE", "/faults")
        assert broker.alive(), broker.log_tail()
        log_tail = broker.log_tail(10)

    assert not soak.errors, f"{soak.errors}\nbroker log:\n{log_tail}"
    warm = [rss for t, rss in samples if t >= SECONDS / 5]
    third = max(1, len(warm) // 3)
    first, last = statistics.median(warm[:third]), statistics.median(warm[-third:])
    rss = [r for _, r in samples]
    print(f"\nsoak {SECONDS} s, {len(samples)} RSS samples: start {_mib(rss[0])}, min {_mib(min(rss))}, "
          f"max {_mib(max(rss))}, end {_mib(rss[-1])}; after warm-up: first third median {_mib(first)}, "
          f"last third median {_mib(last)} ({(last - first) / first:+.1%})")
    step = max(1, len(samples) // 10)
    print("RSS series: " + ", ".join(f"{t:.0f}s {_mib(r)}" for t, r in samples[::step]))
    print(f"checked: {len(soak.acked)} acknowledged, {len(soak.consumed)} read back; txn: "
          f"{soak.txn_committed} committed records, {soak.txn_read} read; {soak.counts}")
    missing = soak.acked - soak.consumed
    assert not missing, f"{len(missing)} acknowledged records never read back, e.g. {sorted(missing)[:10]}"
    assert len(soak.acked) >= RATE * SECONDS * 0.5, "the checked producer fell far behind its rate"
    assert not soak.aborted_seen, f"read_committed saw aborted records: {soak.aborted_seen[:5]}"
    assert soak.txn_read > 0 and soak.counts["consumer restarts"] >= 1
    assert abs(last - first) <= max(0.10 * first, 8 * MiB), "the broker's RSS grew during the soak"
