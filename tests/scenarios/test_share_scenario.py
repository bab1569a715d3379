"""A scenario driving a share group (KIP-932) like any other API: a fault step makes the broker answer the consumer's
first ShareFetch as if it had lost the share session (SHARE_SESSION_NOT_FOUND); confluent-kafka's
ShareConsumer opens a new one and every record is still accepted exactly once, which the journal and the
fault's hits show."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from mockbroker.scenarios import ScenarioRun, load_text

pytestmark = pytest.mark.clients

SCENARIO = """
name: share-session-lost
cluster: {topics: [{name: jobs, partitions: 2}]}
steps:
  - fault: {name: lost-session, api: ShareFetch, error: SHARE_SESSION_NOT_FOUND, times: 1}
expect:
  - fault_hits: {fault: lost-session, exactly: 1}
  - requests: {api: ShareFetch, error: SHARE_SESSION_NOT_FOUND, at_least: 1}
  - requests: {api: ShareGroupHeartbeat, at_least: 1}
"""


def test_a_lost_share_session_is_reopened_and_no_record_is_lost_or_repeated() -> None:
    run = ScenarioRun(load_text(SCENARIO)).start()
    consumer = None
    try:
        admin = AdminClient({"bootstrap.servers": run.bootstrap_servers})
        group = ConfigResource(ResourceType.GROUP, "workers", incremental_configs=[
            ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([group])[group].result(10)
        producer = Producer({"bootstrap.servers": run.bootstrap_servers})
        for i in range(100):
            producer.produce("jobs", f"v{i}".encode(), partition=i % 2)
        assert producer.flush(10) == 0
        consumer = ShareConsumer({"bootstrap.servers": run.bootstrap_servers, "group.id": "workers",
                                  "share.acknowledgement.mode": "explicit"})
        consumer.subscribe(["jobs"])
        seen: list[tuple[int, int]] = []
        deadline = time.monotonic() + 30
        while len(seen) < 100 and time.monotonic() < deadline:
            for m in consumer.poll(0.2):
                if m.error() is None:
                    seen.append((m.partition(), m.offset()))
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
        consumer.commit_sync(10)
        assert sorted(seen) == sorted({(i % 2, i // 2) for i in range(100)})  # each once
        assert run.wait_steps(timeout=5)
        result = run.finish(app_ran=True)
        assert result.passed, result.report()
    finally:
        if consumer is not None:
            consumer.close()
        run.close()
