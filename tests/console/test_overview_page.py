"""The console's cluster page over HTTP: brokers up, down and partitioned away, the controller, topics with
partitions, leaders and replicas, the active fault rules, and the scenario playing with its steps."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from mockbroker.cluster import MockCluster
from mockbroker.scenarios.runner import ScenarioRun
from tests.console.test_topic_page import get, text

pytestmark = pytest.mark.clients


def broker_states(page: str) -> dict[int, str]:
    section = page.split("<h2>Brokers</h2>", 1)[1].split("</table>", 1)[0]
    return {int(node): state for node, state in
            re.findall(r'<tr><td>(\d+)</td><td>[^<]+</td><td><span class="pill[^"]*">(\w+)</span>', section)}


def test_brokers_topics_and_fault_rules() -> None:
    with MockCluster(brokers=3, control_port=0, topics={"orders": 6}) as cluster:
        cluster.broker_down(1)
        cluster.partition_broker(2)
        cluster.state.faults.add(api="Produce", error="NOT_LEADER_OR_FOLLOWER", times=3, name="<i>flaky</i>",
                                 topic="orders")
        status, page = get(cluster.console_url)
        assert status == 200
        assert broker_states(page) == {0: "up", 1: "down", 2: "partitioned"}
        shown = text(page)
        assert re.search(rf"controller\s+{cluster.state.controller_id}\b", shown)
        replicas = len(cluster.state.partition("orders", 0).replicas)
        topic_row = re.search(rf'<a href="/ui/topics/orders">orders</a></td><td>6</td><td>{replicas}</td>'
                              r"<td>([^<]*)</td>", page)
        assert topic_row is not None
        leaders = {p.leader for p in cluster.state.topic("orders").partitions}
        assert topic_row.group(1) == ", ".join(str(n) for n in sorted(leaders))
        assert "&lt;i&gt;flaky&lt;/i&gt;" in page and "<i>flaky" not in page
        assert "error NOT_LEADER_OR_FOLLOWER" in shown and "0 / 3" in shown
        cluster.broker_up(1)
        assert broker_states(get(cluster.console_url)[1])[1] == "up"


def test_the_scenario_playing_and_its_steps(tmp_path: Path) -> None:
    spec = tmp_path / "steps.yaml"
    spec.write_text("""name: console-steps
cluster:
  topics:
    - {name: steps, partitions: 1}
timeout: 30s
steps:
  - name: "slow <b>fetches</b>"
    fault: {name: slow, api: Fetch, action: delay, delay_ms: 5, times: null}
  - name: lift it after five records
    when: {records: {topic: steps, at_least: 5}}
    remove_fault: slow
""")
    with ScenarioRun.from_file(spec, control_port=0) as run:
        cluster = run.cluster
        deadline = time.monotonic() + 10
        while run.steps[0].at_s is None and time.monotonic() < deadline:
            time.sleep(0.05)
        page = get(cluster.console_url)[1]
        shown = text(page)
        assert "steps 1/2" in shown and "next: lift it after five records" in shown
        assert "slow &lt;b&gt;fetches&lt;/b&gt;" in page
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        for i in range(5):
            producer.produce("steps", str(i).encode(), partition=0)
        assert producer.flush(15) == 0
        assert run.wait_steps(15)
        shown = text(get(cluster.console_url)[1])
        assert "steps 2/2" in shown
        steps = page_steps = re.findall(r'<span class="pill (\w+)">(\w+)</span>', get(cluster.console_url)[1])
        assert [kind for kind, _ in page_steps if _ in ("ok", "failed", "waiting")] == ["ok", "ok"], steps


def test_no_scenario_says_so() -> None:
    with MockCluster(control_port=0) as cluster:
        assert "no scenario runs on this cluster" in text(get(cluster.console_url)[1])
