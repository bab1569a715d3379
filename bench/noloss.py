"""No-loss audit under random faults, without Spark (see mockbroker.audit).

    python -m bench.noloss --records 1000000 --transactions 400 [--seed 7] [--json]

Idempotent producers (confluent-kafka, kafka-python, aiokafka) and transactional confluent-kafka producers write
to a 3-broker mockbroker while seeded faults fire: connections dropped before and after Produce and
transaction requests are handled, leader moves, broker restarts, coordinator moves.  Then the topics
are read back (read_uncommitted and read_committed) and the figures printed; exits 1 if a record was
lost, duplicated or out of order, or an aborted record was seen.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from mockbroker.audit import AuditOptions, ChaosPlan, run_audit


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    d = AuditOptions()
    ap.add_argument("--records", type=int, default=d.records, help="idempotent records over the confluent producers")
    ap.add_argument("--producers", type=int, default=d.confluent_producers, help="confluent idempotent producers")
    ap.add_argument("--kafka-python-producers", type=int, default=d.kafka_python_producers)
    ap.add_argument("--kafka-python-records", type=int, default=d.kafka_python_records, help="per producer")
    ap.add_argument("--aiokafka-producers", type=int, default=d.aiokafka_producers)
    ap.add_argument("--aiokafka-records", type=int, default=d.aiokafka_records, help="per producer")
    ap.add_argument("--transactional-producers", type=int, default=d.transactional_producers)
    ap.add_argument("--transactions", type=int, default=d.transactions, help="per transactional producer")
    ap.add_argument("--per-txn", type=int, default=d.per_txn, help="records per transaction")
    ap.add_argument("--abort-every", type=int, default=d.abort_every, help="abort every n-th transaction (0: none)")
    ap.add_argument("--partitions", type=int, default=d.partitions)
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument("--produce-drop", type=float, default=ChaosPlan.produce_drop,
                    help="probability of drop_before and of drop_after per Produce request")
    ap.add_argument("--txn-drop", type=float, default=ChaosPlan.txn_drop,
                    help="the same per transaction request (InitProducerId ... EndTxn)")
    ap.add_argument("--txn-produce-error", type=float, default=ChaosPlan.txn_produce_error,
                    help="probability that a Produce to the transactional topic is refused (the transaction aborts)")
    ap.add_argument("--interval", type=float, default=ChaosPlan.interval_s, help="mean seconds between actions")
    ap.add_argument("--duration", type=float, default=d.duration_s,
                    help="seconds the idempotent producers spread their records over (0: as fast as they can)")
    ap.add_argument("--config", action="append", default=[], metavar="NAME=VALUE",
                    help="a broker config for the cluster, e.g. mock.transaction.marker.delay.ms=50 (repeatable)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    for name in ("mockbroker.audit.client", "kafka", "aiokafka"):  # drops on purpose: quiet the clients
        logging.getLogger(name).setLevel(logging.CRITICAL)
    options = AuditOptions(records=args.records, confluent_producers=args.producers,
                           kafka_python_producers=args.kafka_python_producers,
                           kafka_python_records=args.kafka_python_records,
                           aiokafka_producers=args.aiokafka_producers, aiokafka_records=args.aiokafka_records,
                           transactional_producers=args.transactional_producers, transactions=args.transactions,
                           per_txn=args.per_txn, duration_s=args.duration, abort_every=args.abort_every,
                           partitions=args.partitions, config=dict(c.split("=", 1) for c in args.config),
                           seed=args.seed, chaos=ChaosPlan(produce_drop=args.produce_drop, txn_drop=args.txn_drop,
                                                           txn_produce_error=args.txn_produce_error,
                                                           interval_s=args.interval))
    figures = run_audit(options, progress=None if args.json else lambda line: print(line, flush=True))
    print(json.dumps(figures.to_dict(), indent=2) if args.json else figures.table())
    return 0 if figures.passed else 1


if __name__ == "__main__":
    sys.exit(main())
