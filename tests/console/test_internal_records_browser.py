"""The internal topics' pages in a real browser, with real clients: a group's commit shows in
``__consumer_offsets`` as Kafka's OffsetCommit record decoded into its fields (a group id a client chose shows as
text and runs nothing), a transaction's states show in ``__transaction_state`` as TransactionLog records, and
bytes no coordinator would read fall back to hex."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from mockbroker.cluster import MockCluster
from mockbroker.console import internal_records
from mockbroker.state.internal_topics import CONSUMER_OFFSETS, TRANSACTION_STATE, partition_for
from tests.console.browser import Page

pytestmark = pytest.mark.clients
HOSTILE_GROUP = "<img src=x onerror=alert('group')>"


def fields_shown(page_text: str) -> list[dict[str, object]]:
    """Every JSON object the page shows (the decoded keys and values), in page order."""
    out = []
    for block in re.findall(r"\{\n.*?\n\}", page_text, re.S):
        try:
            out.append(json.loads(block))
        except ValueError:
            continue
    return out


def test_a_commit_and_a_transaction_show_as_kafkas_records(web: Page, tmp_path: Path) -> None:
    config = {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "2"}
    with MockCluster(control_port=0, topics={"orders": 1}, config=config) as cluster:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        for i in range(5):
            producer.produce("orders", value=b"order-%d" % i, partition=0)
        assert producer.flush(15) == 0
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": HOSTILE_GROUP,
                             "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition("orders", 0, 3)], asynchronous=False)
        consumer.close()
        txn = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "shop"})
        txn.init_transactions(15)
        txn.begin_transaction()
        txn.produce("orders", value=b"paid", partition=0)
        txn.commit_transaction(15)

        offsets_partition = partition_for(HOSTILE_GROUP, 3)
        web.page.goto(cluster.console_url + f"topics/{CONSUMER_OFFSETS}?partition={offsets_partition}")
        shown = web.page.inner_text("#live")
        assert web.page.locator("#live img, #live script").count() == 0
        decoded = fields_shown(shown)
        assert {"group": HOSTILE_GROUP, "topic": "orders", "partition": 0} in decoded
        value = next(d for d in decoded if "commitTimestamp" in d)
        assert value["offset"] == 3 and value["leaderEpoch"] == -1 and value["metadata"] == ""
        pill = web.page.locator("#live span.pill[title^='OffsetCommitKey']")
        assert pill.count() >= 1 and pill.first.inner_text() == "kafka record"

        web.page.goto(cluster.console_url + f"topics/{TRANSACTION_STATE}?partition={partition_for('shop', 2)}")
        decoded = fields_shown(web.page.inner_text("#live"))
        states = [d["TransactionStatus"] for d in decoded if "TransactionStatus" in d]  # (Kafka's field names)
        assert {"TransactionalId": "shop"} in decoded
        assert states[0] == 4  # newest first: CompleteCommit (Kafka's state ids: 0 Empty ... 4 CompleteCommit)
        assert 0 in states and 1 in states  # Empty (InitProducerId), Ongoing
        web.clean()


def test_bytes_no_coordinator_would_read_are_not_decoded() -> None:
    assert internal_records.describe(CONSUMER_OFFSETS, b"\x00\x63garbage", b"\x00\x03") is None
    assert internal_records.describe(TRANSACTION_STATE, b"\x00", None) is None
    assert internal_records.describe("orders", b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00", None) is None
    key, value = internal_records.describe(CONSUMER_OFFSETS, b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x07", None) \
        or (None, None)
    assert key is not None and json.loads(key.text) == {"group": "g", "topic": "t", "partition": 7}
    assert value is not None and value.kind == "null"  # a tombstone
