"""The console in a real browser (chromium driven by Playwright), with real clients writing into the cluster:
values a client chose show as text and run nothing, pages redraw while clients run, and the page's buttons and
forms act through the control API (a fault added on the page is hit by the next Produce)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from mockbroker.cluster import MockCluster
from tests.console.browser import Page

pytestmark = pytest.mark.clients
HOSTILE_CLIENT = "<img src=x onerror=alert('client')>"
HOSTILE_KEY = "<script>alert('key')</script>"
HOSTILE_VALUE = '<img src=x onerror="alert(document.cookie)">'
HOSTILE_HEADER = ("<b>h</b>", b"<script>alert('header')</script>")


def produce(cluster: MockCluster, topic: str, values: list[str], **extra: object) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0, **extra})
    for value in values:
        producer.produce(topic, value=value.encode(), partition=0)
    assert producer.flush(15) == 0


def test_values_a_client_chose_show_as_text_and_run_nothing(web: Page, tmp_path: Path) -> None:
    with MockCluster(control_port=0, topics={"hostile": 1}) as cluster:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": HOSTILE_CLIENT})
        producer.produce("hostile", key=HOSTILE_KEY.encode(), value=HOSTILE_VALUE.encode(), partition=0,
                         headers=[HOSTILE_HEADER])
        assert producer.flush(15) == 0
        web.page.goto(cluster.console_url + "topics/hostile")
        shown = web.page.inner_text("#live")
        assert HOSTILE_KEY in shown and HOSTILE_VALUE in shown
        assert "<script>alert('header')</script>" in shown and "<b>h</b>" in shown
        assert web.page.locator("#live img, #live script").count() == 0
        # a hostile name in the address: the not-found page shows it as text
        response = web.page.goto(cluster.console_url + "topics/%3Cscript%3Ealert(9)%3C%2Fscript%3E")
        assert response is not None and response.status == 404
        assert "unknown topic '<script>alert(9)</script>'" in web.page.inner_text("#live")
        web.page.goto(cluster.console_url)  # the overview, with the same client's data around
        assert "hostile" in web.page.inner_text("#live")
        web.clean()


def test_the_topic_page_redraws_while_a_producer_writes(web: Page, tmp_path: Path) -> None:
    with MockCluster(control_port=0, topics={"orders": 1}) as cluster:
        produce(cluster, "orders", ["first order"])
        web.page.goto(cluster.console_url + "topics/orders")
        assert "first order" in web.page.inner_text("#live")
        navigations: list[str] = []
        web.page.on("framenavigated", lambda frame: navigations.append(frame.url))
        produce(cluster, "orders", ["second order"])
        web.page.wait_for_function("document.getElementById('live').innerText.includes('second order')",
                                   timeout=15_000)
        assert navigations == []  # redrawn in place, not reloaded
        web.clean()


def submit(form: Any, **fields: str) -> None:
    """Fill a console form's fields (inputs and choice lists) and send it."""
    for name, value in fields.items():
        field = form.locator(f"[name={name}]")
        if field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
    form.locator("button[type=submit]").click()


def test_a_fault_added_on_the_page_is_hit_by_the_next_produce(web: Page, tmp_path: Path) -> None:
    with MockCluster(control_port=0, topics={"payments": 1}) as cluster:
        web.page.goto(cluster.console_url + "faults")
        form = web.page.locator("form.fault-form")
        submit(form, api="Produce", error="NOT_LEADER_OR_FOLLOWER", times="1", name="page-fault")
        web.page.wait_for_function("document.getElementById('action-result').innerText.includes('fault')")
        assert re.search(r"POST /faults: done \(fault \d+\)", web.page.inner_text("#action-result"))
        [rule] = cluster.state.faults.listed()
        assert rule.name == "page-fault" and rule.hits == 0
        produce(cluster, "payments", ["paid"])  # librdkafka retries past the one NOT_LEADER_OR_FOLLOWER
        assert rule.hits == 1
        # the rules table redraws with the hit (live, no reload)
        web.page.wait_for_function(
            "[...document.querySelectorAll('#live tr')].some(r => r.innerText.includes('page-fault')"
            " && r.innerText.includes('1 / 1'))", timeout=15_000)
        web.screenshot("faults", tmp_path)
        # the journal page shows the Produce the rule acted on, with the error it answered
        web.page.goto(cluster.console_url + "journal?fault=any")
        rows = web.page.locator("#live table tbody tr")
        assert rows.count() == 1
        row = rows.first.inner_text()
        assert "Produce" in row and "NOT_LEADER_OR_FOLLOWER" in row and "page-fault" in row
        assert web.page.locator("#live svg").count() == 1
        web.page.goto(cluster.console_url + "journal")
        web.screenshot("journal", tmp_path)
        web.page.goto(cluster.console_url + "faults")
        form = web.page.locator("form.fault-form")
        # a wrong field is the API's one line, shown on the page; nothing is added
        submit(form, api="Prodcue")
        web.page.wait_for_function("document.getElementById('action-result').className === 'bad'")
        assert "Produce" in web.page.inner_text("#action-result")  # the nearest name
        assert len(list(cluster.state.faults.listed())) == 1
        # and the remove button takes it away
        web.page.locator(f"button[data-api='DELETE /faults/{rule.id}']").click()
        web.page.wait_for_function("!document.getElementById('live').innerText.includes('page-fault')")
        assert list(cluster.state.faults.listed()) == []
        # every field of POST /faults is on the form: a delay on every Fetch ("times" null), by choice lists
        submit(form, api="Fetch", error="", name="slow-fetch", action="delay", delay_ms="5", times="null",
               scope="partition")
        web.page.wait_for_function("document.getElementById('live').innerText.includes('slow-fetch')")
        [delay] = cluster.state.faults.listed()
        assert (delay.action, delay.delay_ms, delay.times, delay.scope) == ("delay", 5, None, "partition")
        web.clean()


def test_broker_buttons_and_the_leader_form_act_on_the_cluster(web: Page, tmp_path: Path) -> None:
    with MockCluster(brokers=3, control_port=0, topics={"moves": 1}) as cluster:
        web.page.goto(cluster.console_url)
        web.page.locator("""button[data-body='{"action":"broker_down","broker":2}']""").click()
        web.page.wait_for_function("document.getElementById('action-result').className === 'ok'")
        assert 2 not in cluster.state.brokers
        web.page.locator("""button[data-body='{"action":"broker_up","broker":2}']""").wait_for(timeout=10_000)
        web.screenshot("cluster", tmp_path)
        web.page.locator("""button[data-body='{"action":"broker_up","broker":2}']""").click()
        web.page.wait_for_function("""document.querySelector(`button[data-body='{"action":"broker_down","broker":2}']`)""")
        assert 2 in cluster.state.brokers
        leader = cluster.state.partition("moves", 0).leader
        web.page.goto(cluster.console_url + "faults")
        form = web.page.locator("form.leader-form")
        form.locator("input[name=topic]").fill("moves")
        form.locator("button[type=submit]").click()
        web.page.wait_for_function("document.getElementById('action-result').className === 'ok'")
        assert cluster.state.partition("moves", 0).leader != leader
        web.clean()


ORDER_SCHEMA = """{"type": "record", "name": "Order", "namespace": "shop",
  "fields": [{"name": "id", "type": "long"}, {"name": "customer", "type": "string"},
             {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}}]}"""


def test_avro_values_show_decoded_with_the_registered_schema(web: Page, tmp_path: Path) -> None:
    from decimal import Decimal

    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    with MockCluster(control_port=0, schema_registry=True, topics={"orders": 1}) as cluster:
        registry = SchemaRegistryClient({"url": cluster.schema_registry_url})
        serialize = AvroSerializer(registry, ORDER_SCHEMA)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
        for order_id, customer in ((1, "Ada Lovelace"), (2, "Grace Hopper")):
            value = serialize({"id": order_id, "customer": customer, "amount": Decimal("12.50")},
                              SerializationContext("orders", MessageField.VALUE))
            producer.produce("orders", value=value, key=str(order_id).encode(), partition=0)
        assert producer.flush(15) == 0
        web.page.goto(cluster.console_url + "topics/orders")
        shown = web.page.inner_text("#live")
        assert '"customer": "Grace Hopper"' in shown and '"customer": "Ada Lovelace"' in shown
        assert '"amount": "12.50"' in shown
        pill = web.page.locator("#live span.pill", has_text="avro").first
        assert pill.get_attribute("title") == "id 1, orders-value v1 (AVRO)"
        web.screenshot("topic", tmp_path)
        web.clean()


def lag_cell_js(topic: str) -> str:
    """Script text: the lag cell of ``topic`` partition 0 in the group page's offsets table ('' when not there)."""
    return f"""(() => {{
      for (const table of document.querySelectorAll('#live table')) {{
        const heads = [...table.querySelectorAll('th')].map(th => th.innerText.trim());
        const lag = heads.indexOf('lag'), topic = heads.indexOf('topic');
        if (lag < 0 || topic < 0 || !heads.includes('committed')) continue;
        for (const row of table.querySelectorAll('tbody tr')) {{
          const cells = row.querySelectorAll('td');
          if (cells[topic].innerText.trim() === {topic!r}) return cells[lag].innerText.trim();
        }}
      }}
      return '';
    }})()"""


def test_a_group_page_shows_lag_dropping_as_the_consumer_reads(web: Page, tmp_path: Path) -> None:
    from confluent_kafka import Consumer

    from tests.console.test_group_pages import consume

    with MockCluster(control_port=0, topics={"events": 1}) as cluster:
        produce(cluster, "events", [f"event-{i}" for i in range(40)])
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "billing",
                             "client.id": "billing-app", "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        try:
            consumer.subscribe(["events"])
            consume(consumer, 10)
            consumer.commit(asynchronous=False)
            web.page.goto(cluster.console_url + "groups/billing")
            web.page.wait_for_function(f"{lag_cell_js('events')} === '30'", timeout=15_000)
            assert "billing-app" in web.page.inner_text("#live")
            web.screenshot("group", tmp_path)
            consume(consumer, 30)
            consumer.commit(asynchronous=False)
            # the open page redraws: the lag drops to 0 without a reload
            web.page.wait_for_function(f"{lag_cell_js('events')} === '0'", timeout=15_000)
        finally:
            consumer.close()
        web.clean()


def test_the_transactions_page_shows_an_open_transaction(web: Page, tmp_path: Path) -> None:
    with MockCluster(control_port=0, topics={"ledger": 2}) as cluster:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "ledger-writer"})
        producer.init_transactions(15)
        producer.begin_transaction()
        for partition in (0, 1):
            producer.produce("ledger", b"entry", partition=partition)
        assert producer.flush(15) == 0
        web.page.goto(cluster.console_url + "transactions")
        shown = web.page.inner_text("#live")
        assert "ledger-writer" in shown and "Ongoing" in shown
        web.screenshot("transactions", tmp_path)
        producer.commit_transaction(15)
        web.page.wait_for_function("document.getElementById('live').innerText.includes('CompleteCommit')",
                                   timeout=15_000)
        web.clean()
