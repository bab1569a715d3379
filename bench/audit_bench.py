"""No-loss run for the audit: an idempotent confluent-kafka producer writes N records to a 3-broker
mockbroker while faults are injected through the HTTP control API, then the Spark audit checks the topic.

    python bench/audit_bench.py [--records 10000000] [--partitions 8]

Faults: 1 % of Produce requests are handled but not answered (drop_after, seeded), every second a
partition's leader moves, and broker 2 goes down for three seconds in the middle.  Prints records
produced, acknowledged, read, lost and duplicated, and the audit table; exits 1 if anything is off.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

from confluent_kafka import Producer


def control(url: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read() or b"{}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--partitions", type=int, default=8)
    args = ap.parse_args()
    proc = subprocess.Popen([sys.executable, "-m", "mockbroker", "serve", "--brokers", "3", "--port", "0",
                             "--control-port", "0", "--log-level", "ERROR", "--topic", f"audit:{args.partitions}"],
                            stdout=subprocess.PIPE, text=True)
    try:
        bootstrap = proc.stdout.readline().strip().split("=", 1)[1]  # type: ignore[union-attr]
        url = proc.stdout.readline().strip().split("=", 1)[1]  # type: ignore[union-attr]
        control(url, "/faults", {"api": "Produce", "action": "drop_after", "probability": 0.01, "seed": 11,
                                 "times": None, "name": "lost answers"})
        acked = [0]
        failed: list[str] = []

        def report(err: object, _msg: object) -> None:
            if err is None:
                acked[0] += 1
            else:
                failed.append(str(err))

        done = threading.Event()

        def chaos() -> None:
            moves = 0
            while not done.wait(1.0):
                control(url, "/actions", {"action": "move_leader", "topic": "audit",
                                          "partition": moves % args.partitions})
                moves += 1
                if moves == 5:
                    control(url, "/actions", {"action": "broker_down", "broker": 2})
                if moves == 8:
                    control(url, "/actions", {"action": "broker_up", "broker": 2})

        p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20,
                      "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                      "socket.timeout.ms": 5000, "message.timeout.ms": 300_000, "retry.backoff.ms": 50})
        started = time.perf_counter()
        threading.Thread(target=chaos, daemon=True).start()
        for i in range(args.records):
            while True:
                try:
                    p.produce("audit", f"r{i:09d}".encode().ljust(100, b"."), key=f"k{i % 1000}".encode(),
                              on_delivery=report)
                    break
                except BufferError:
                    p.poll(0.01)
        p.flush(600)
        done.set()
        produce_s = time.perf_counter() - started
        faults = json.loads(urllib.request.urlopen(url + "/faults", timeout=10).read())["faults"]
        print(f"produced {args.records:,} in {produce_s:.1f} s; acknowledged {acked[0]:,}; failed {len(failed)}; "
              f"answers dropped by the fault: {faults[0]['hits']:,}")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        from mockbroker.spark.audit import run_audit

        spark = (SparkSession.builder.master("local[2]").appName("audit-bench").config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "6g")
                 .config("spark.sql.shuffle.partitions", "16").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        started = time.perf_counter()
        audit = run_audit(spark, bootstrap, ["audit"])
        audit_s = time.perf_counter() - started
        spark.stop()
    finally:
        proc.terminate()
    lost = acked[0] - audit.committed if audit.committed < acked[0] else 0
    print(audit.table())
    print(f"records produced {args.records:,}, acknowledged {acked[0]:,}, read {audit.committed:,}, lost {lost:,}, "
          f"duplicated {audit.duplicates:,} (audit {audit_s:.0f} s on local[2])")
    ok = audit.passed and audit.committed == acked[0] == args.records and not failed
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
