"""Client quotas with real clients: kafka-python sends AlterClientQuotas / DescribeClientQuotas with its
own codec (none of the three Python admin clients has client-quota methods: confluent-kafka 2.16 and
aiokafka 0.14 have no such API at all, kafka-python 3.0 has the request classes only); a confluent-kafka
producer and consumer held to producer_byte_rate / consumer_byte_rate, measured from the client's side,
with librdkafka's throttle callback reporting the throttling."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

from mockbroker.cluster import MockCluster

pytestmark = pytest.mark.clients

RATE = 100_000  # bytes a second: ~6 s of traffic per timed test
VALUE = b"v" * 1000
# two 1 s windows (Kafka's default is eleven): a client's first burst is one window's worth and Kafka's
# windowed rate swings around the quota in cycles of seconds, not of the eleven Kafka's default takes
WINDOWS = {"quota.window.num": 2, "quota.window.size.seconds": 1}


# -- kafka-python: the request classes over its own connection --------------------------------
def kp_send(admin: KafkaAdminClient, request: Any) -> Any:
    async def send() -> Any:
        return await admin._manager.send(request)

    return admin._manager.run(send)


@pytest.mark.parametrize("version", [0, 1])
def test_kafka_python_alters_and_describes_client_quotas(version: int) -> None:
    E = AlterClientQuotasRequest.EntryData
    C = DescribeClientQuotasRequest.ComponentData
    with MockCluster(brokers=1) as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:
            alter = AlterClientQuotasRequest(entries=[
                E(entity=[E.EntityData(entity_type="user", entity_name="alice"),
                          E.EntityData(entity_type="client-id", entity_name=None)],
                  ops=[E.OpData(key="producer_byte_rate", value=2048.0, remove=False)]),
                E(entity=[E.EntityData(entity_type="user", entity_name="bob")],
                  ops=[E.OpData(key="consumer_byte_rate", value=-1.0, remove=False)]),
            ], validate_only=False, max_version=version)
            answer = kp_send(admin, alter)
            assert [(e.error_code, e.error_message) for e in answer.entries] == [
                (0, None), (42, "Quota consumer_byte_rate must be greater than 0")]
            describe = DescribeClientQuotasRequest(components=[C(entity_type="client-id", match_type=1, match=None)],
                                                   strict=False, max_version=version)
            found = kp_send(admin, describe)
            assert found.error_code == 0
            assert [({e.entity_type: e.entity_name for e in entry.entity}, [(v.key, v.value) for v in entry.values])
                    for entry in found.entries] == [({"user": "alice", "client-id": None},
                                                     [("producer_byte_rate", 2048.0)])]
            remove = AlterClientQuotasRequest(entries=[
                E(entity=[E.EntityData(entity_type="user", entity_name="alice"),
                          E.EntityData(entity_type="client-id", entity_name=None)],
                  ops=[E.OpData(key="producer_byte_rate", value=0.0, remove=True)])],
                validate_only=False, max_version=version)
            assert kp_send(admin, remove).entries[0].error_code == 0
        finally:
            admin.close()
        assert cluster.quotas() == []
        assert {e.version for e in cluster.journal.entries(api="AlterClientQuotas")} == {version}
        assert {e.version for e in cluster.journal.entries(api="DescribeClientQuotas")} == {version}


# -- confluent-kafka: throttled producer and consumer -----------------------------------------
def steady_rate(events: list[tuple[float, int]], skip: float) -> float:
    """Bytes a second from ``skip`` seconds after the first event (past the first burst) to the last: the
    slope of the bytes-so-far line, so where Kafka's rate cycle happens to be at either end weighs little."""
    start = events[0][0] + skip
    xs, ys, total = [], [], 0
    for t, n in events:
        total += n
        if t >= start:
            xs.append(t)
            ys.append(total)
    assert len(xs) > 10 and xs[-1] - xs[0] >= 4, "too short a steady part"
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


@pytest.mark.slow
def test_confluent_producer_is_held_to_its_byte_rate() -> None:
    with MockCluster(brokers=1, topics={"q": 1}, config=WINDOWS) as cluster:
        cluster.set_quota({"client-id": "quota-producer"}, producer_byte_rate=RATE)
        delivered: list[tuple[float, int]] = []
        throttles: list[float] = []

        def on_delivery(err: Any, msg: Any) -> None:
            assert err is None
            delivered.append((time.monotonic(), len(msg.value())))

        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "quota-producer",
                      "linger.ms": 5, "batch.size": 8192, "queue.buffering.max.messages": 50,
                      "throttle_cb": lambda e: throttles.append(e.throttle_time)})
        deadline = time.monotonic() + 7
        while time.monotonic() < deadline:
            try:
                p.produce("q", VALUE, partition=0, on_delivery=on_delivery)
            except BufferError:
                p.poll(0.01)
            p.poll(0)
        p.flush(30)
    rate = steady_rate(delivered, 1.5)
    print(f"steady rate {rate:.0f} B/s for a quota of {RATE} B/s; throttle times (s): {sorted(throttles)[-3:]}")
    assert 0.8 * RATE <= rate <= 1.2 * RATE, rate
    assert throttles and max(throttles) > 0  # librdkafka saw the throttle times
    produced = cluster.journal.entries(api="Produce", client_id="quota-producer")
    assert any(e.throttle_ms > 0 for e in produced)


@pytest.mark.slow
def test_confluent_consumer_is_held_to_its_byte_rate() -> None:
    total = 7 * RATE // len(VALUE)
    with MockCluster(brokers=1, topics={"q": 1}, config=WINDOWS) as cluster:
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 5, "batch.size": 4096})
        for _ in range(total):
            p.produce("q", VALUE, partition=0)
        assert p.flush(30) == 0
        cluster.set_quota({"user": "ANONYMOUS"}, consumer_byte_rate=RATE)  # the principal without SASL
        throttles: list[float] = []
        c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "quota-consumer",
                      "client.id": "quota-consumer", "auto.offset.reset": "earliest",
                      "fetch.max.bytes": 8192, "max.partition.fetch.bytes": 8192, "message.max.bytes": 4096,
                      "throttle_cb": lambda e: throttles.append(e.throttle_time)})
        c.subscribe(["q"])
        received: list[tuple[float, int]] = []
        deadline = time.monotonic() + 30
        while len(received) < total and time.monotonic() < deadline:
            msg = c.poll(0.2)
            if msg is not None and msg.error() is None:
                received.append((time.monotonic(), len(msg.value())))
        c.close()
    assert len(received) == total
    rate = steady_rate(received, 1.5)
    print(f"steady rate {rate:.0f} B/s for a quota of {RATE} B/s; throttle times (s): {sorted(throttles)[-3:]}")
    assert 0.8 * RATE <= rate <= 1.2 * RATE, rate
    assert throttles and max(throttles) > 0
    fetches = cluster.journal.entries(api="Fetch", client_id="quota-consumer")
    assert any(e.throttle_ms > 0 for e in fetches)
