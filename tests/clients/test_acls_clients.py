"""ACLs with real clients: confluent-kafka's and kafka-python's admin clients create, describe and
delete ACLs (aiokafka 0.14's admin client has no ACL calls); a missing ACL gives each of
confluent-kafka, kafka-python and aiokafka the error it expects (produce without WRITE ->
TopicAuthorizationFailed, a group without READ -> GroupAuthorizationFailed, create a topic without
CREATE -> TOPIC_AUTHORIZATION_FAILED) and an ALLOW makes the same call work.

Every connection here is User:ANONYMOUS (no SASL), so the ACLs name it (or User:*)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from mockbroker.cluster import MockCluster

pytestmark = pytest.mark.clients
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ME = "User:ANONYMOUS"


@pytest.fixture
def secured() -> Iterator[MockCluster]:
    """Authorization on, no super users: only what the ACLs allow."""
    with MockCluster(brokers=3, topics={"orders": 3}, config={"authorizer.class.name": AUTHORIZER}) as c:
        yield c


def admin_rights(c: MockCluster) -> None:
    c.add_acl("CLUSTER", "kafka-cluster", ME, "ALTER")  # CreateAcls / DeleteAcls (and, implied, DescribeAcls)


# -- ACL administration ----------------------------------------------------------------------------
def test_confluent_admin_create_describe_delete_acls(secured: MockCluster) -> None:
    a = AdminClient({"bootstrap.servers": secured.bootstrap_servers})
    read = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                      AclOperation.READ, AclPermissionType.ALLOW)
    deny = AclBinding(ResourceType.GROUP, "team-", ResourcePatternType.PREFIXED, "User:*", "10.0.0.1",
                      AclOperation.DELETE, AclPermissionType.DENY)
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                  AclPermissionType.ANY)
    # without ALTER on the cluster
    with pytest.raises(KafkaException) as denied:
        a.create_acls([read])[read].result(10)
    assert denied.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    admin_rights(secured)
    for future in a.create_acls([read, deny]).values():
        assert future.result(10) is None
    found = a.describe_acls(everything).result(10)
    assert set(found) >= {read, deny} and len(found) == 3  # and the cluster ACL added above
    prefixed = AclBindingFilter(ResourceType.GROUP, "team-blue", ResourcePatternType.MATCH, None, None,
                                AclOperation.ANY, AclPermissionType.ANY)
    assert a.describe_acls(prefixed).result(10) == [deny]
    gone = next(iter(a.delete_acls([prefixed]).values())).result(10)  # (resolved through that dict)
    assert gone == [deny]
    assert deny not in a.describe_acls(everything).result(10)
    # librdkafka calls CLUSTER (4) BROKER
    bad = AclBinding(ResourceType.BROKER, "not-the-cluster", ResourcePatternType.LITERAL, "User:alice", "*",
                     AclOperation.ALTER, AclPermissionType.ALLOW)
    with pytest.raises(KafkaException) as invalid:
        a.create_acls([bad])[bad].result(10)
    assert invalid.value.args[0].code() == KafkaError.INVALID_REQUEST


def test_confluent_admin_without_authorizer_security_disabled() -> None:
    with MockCluster(brokers=1) as c:
        a = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        read = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                          AclOperation.READ, AclPermissionType.ALLOW)
        with pytest.raises(KafkaException) as off:
            a.create_acls([read])[read].result(10)
        assert off.value.args[0].code() == KafkaError.SECURITY_DISABLED
        everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                      AclPermissionType.ANY)
        # librdkafka (2.12-2.16) drops DescribeAcls' top-level error code: an empty, "successful" listing
        assert a.describe_acls(everything).result(10) == []
        assert list(c.journal.entries()[-1].errors) == ["SECURITY_DISABLED"]


def test_kafka_python_admin_create_describe_delete_acls(secured: MockCluster) -> None:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import (
        ResourceType as KpResourceType,
    )
    from kafka.errors import ClusterAuthorizationFailedError, NoError

    client = KafkaAdminClient(bootstrap_servers=secured.bootstrap_servers, request_timeout_ms=10_000)
    try:
        write = ACL("User:bob", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW,
                    ResourcePattern(KpResourceType.TOPIC, "logs-", ACLResourcePatternType.PREFIXED))
        txn = ACL("User:bob", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW,
                  ResourcePattern(KpResourceType.TRANSACTIONAL_ID, "tx-1"))
        any_filter = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                               ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY))
        with pytest.raises(ClusterAuthorizationFailedError):
            client.describe_acls(any_filter)
        admin_rights(secured)
        created = client.create_acls([write, txn])
        assert created["failed"] == [] and len(created["succeeded"]) == 2
        acls, error = client.describe_acls(any_filter)
        assert error is NoError and len(acls) == 3
        assert {(x.resource_pattern.resource_name, x.resource_pattern.pattern_type) for x in acls} >= {
            ("logs-", ACLResourcePatternType.PREFIXED), ("tx-1", ACLResourcePatternType.LITERAL)}
        txn_filter = ACLFilter("User:bob", None, ACLOperation.ANY, ACLPermissionType.ANY,
                               ResourcePatternFilter(KpResourceType.TRANSACTIONAL_ID, None,
                                                     ACLResourcePatternType.ANY))
        [(_, deleted, error)] = client.delete_acls([txn_filter])
        assert error is NoError and [d.resource_pattern.resource_name for d in deleted] == ["tx-1"]
        assert [a.resource_name for a in secured.acls()] == ["kafka-cluster", "logs-"]
    finally:
        client.close()


# -- a missing ACL refuses, an ALLOW lets the same call through --------------------------------------
def test_confluent_produce_consume_and_create_topic(secured: MockCluster) -> None:
    c = secured
    c.add_acl("TOPIC", "orders", ME, "DESCRIBE")
    errors: list[Any] = []
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "message.timeout.ms": 5000})
    p.produce("orders", b"x", partition=0, on_delivery=lambda err, msg: errors.append(err))
    p.flush(10)
    assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    c.add_acl("TOPIC", "orders", ME, "WRITE")
    errors.clear()
    p = Producer({"bootstrap.servers": c.bootstrap_servers})  # librdkafka keeps a topic's permanent error
    p.produce("orders", b"x", partition=0, on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(10) == 0 and errors == [None]

    c.add_acl("TOPIC", "orders", ME, "READ")
    consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "readers",
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    consumer.subscribe(["orders"])
    codes = _poll_errors(consumer, 10)
    assert KafkaError.GROUP_AUTHORIZATION_FAILED in codes
    consumer.close()
    c.add_acl("GROUP", "read", ME, "READ", pattern_type="PREFIXED")
    consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "readers",
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    consumer.subscribe(["orders"])
    got = _poll_value(consumer, 20)
    consumer.close()
    assert got == b"x"

    a = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    with pytest.raises(KafkaException) as denied:
        a.create_topics([NewTopic("fresh", 1, 1)])["fresh"].result(10)
    assert denied.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    c.add_acl("CLUSTER", "kafka-cluster", ME, "CREATE")
    assert a.create_topics([NewTopic("fresh", 1, 1)])["fresh"].result(10) is None
    assert "fresh" in c.state.topics


def _poll_errors(consumer: Consumer, timeout: float) -> set[int]:
    codes: set[int] = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and KafkaError.GROUP_AUTHORIZATION_FAILED not in codes:
        try:
            m = consumer.poll(0.2)
        except KafkaException as exc:
            codes.add(exc.args[0].code())
            continue
        if m is not None and m.error() is not None:
            codes.add(m.error().code())
    return codes


def _poll_value(consumer: Consumer, timeout: float) -> bytes | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            return m.value()  # type: ignore[no-any-return]
    return None


def test_kafka_python_produce_consume_and_create_topic(secured: MockCluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as KpNewTopic
    from kafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError
    from kafka.errors import KafkaError as KpKafkaError

    c = secured
    c.add_acl("TOPIC", "orders", ME, "DESCRIBE")
    idempotent = KafkaProducer(bootstrap_servers=c.bootstrap_servers, request_timeout_ms=5000, max_block_ms=5000)
    try:  # kafka-python's default: idempotent, so InitProducerId needs IDEMPOTENT_WRITE or WRITE on a topic
        # kafka-python reports it wrapped: "Unexpected error in InitProducerIdResponse: [Error 31] ..."
        with pytest.raises(KpKafkaError, match="ClusterAuthorizationFailedError"):
            idempotent.send("orders", b"never", partition=1).get(10)
    finally:
        idempotent.close(timeout=5)
    producer = KafkaProducer(bootstrap_servers=c.bootstrap_servers, enable_idempotence=False, retries=0,
                             request_timeout_ms=5000)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("orders", b"kp", partition=1).get(10)
        c.add_acl("TOPIC", "orders", ME, "WRITE")
        assert producer.send("orders", b"kp", partition=1).get(10).offset == 0
    finally:
        producer.close()
    idempotent = KafkaProducer(bootstrap_servers=c.bootstrap_servers, request_timeout_ms=5000)
    try:  # WRITE on one topic is enough for an idempotent producer id (Kafka 3.0+)
        assert idempotent.send("orders", b"kp2", partition=1).get(10).offset == 1
    finally:
        idempotent.close()

    c.add_acl("TOPIC", "orders", ME, "READ")
    consumer = KafkaConsumer("orders", bootstrap_servers=c.bootstrap_servers, group_id="kp-readers",
                             auto_offset_reset="earliest", request_timeout_ms=5000)
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                consumer.poll(200)
    finally:
        consumer.close()
    c.add_acl("GROUP", "kp-readers", ME, "READ")
    consumer = KafkaConsumer("orders", bootstrap_servers=c.bootstrap_servers, group_id="kp-readers",
                             auto_offset_reset="earliest", request_timeout_ms=5000)
    try:
        values: list[bytes] = []
        deadline = time.monotonic() + 15
        while not values and time.monotonic() < deadline:
            for records in consumer.poll(200).values():
                values += [r.value for r in records]
        assert values == [b"kp", b"kp2"]
    finally:
        consumer.close()

    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers, request_timeout_ms=10_000)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            admin.create_topics({"kp-fresh": {"num_partitions": 1, "replication_factor": 1}})
        c.add_acl("TOPIC", "kp-", ME, "CREATE", pattern_type="PREFIXED")
        created = admin.create_topics([KpNewTopic("kp-fresh", 1, 1)])
        assert created["topics"][0]["error_code"] == 0 and "kp-fresh" in c.state.topics
    finally:
        admin.close()


async def test_aiokafka_produce_consume_and_create_topic() -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin import NewTopic as AioNewTopic
    from aiokafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

    async with MockCluster(brokers=3, topics={"orders": 3}, config={"authorizer.class.name": AUTHORIZER}) as c:
        c.add_acl("TOPIC", "orders", ME, "DESCRIBE")
        producer = AIOKafkaProducer(bootstrap_servers=c.bootstrap_servers, enable_idempotence=False,
                                    request_timeout_ms=5000)
        await producer.start()
        try:
            with pytest.raises(TopicAuthorizationFailedError):
                await producer.send_and_wait("orders", b"aio", partition=2)
            c.add_acl("TOPIC", "orders", ME, "WRITE")
            assert (await producer.send_and_wait("orders", b"aio", partition=2)).offset == 0
        finally:
            await producer.stop()

        c.add_acl("TOPIC", "orders", ME, "READ")
        consumer = AIOKafkaConsumer("orders", bootstrap_servers=c.bootstrap_servers, group_id="aio-readers",
                                    auto_offset_reset="earliest", request_timeout_ms=5000)
        try:
            with pytest.raises(GroupAuthorizationFailedError):
                await consumer.start()  # joining the group is part of start()
        finally:
            await consumer.stop()
        c.add_acl("GROUP", "aio-readers", ME, "READ")
        consumer = AIOKafkaConsumer("orders", bootstrap_servers=c.bootstrap_servers, group_id="aio-readers",
                                    auto_offset_reset="earliest", request_timeout_ms=5000)
        await consumer.start()
        try:
            message = await consumer.getone()
            assert message.value == b"aio"
        finally:
            await consumer.stop()

        client = AIOKafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
        await client.start()
        try:
            resp = await client.create_topics([AioNewTopic("aio-fresh", 1, 1)])
            assert [(name, code) for name, code, *_ in resp.topic_errors] == [("aio-fresh", 29)]
            c.add_acl("CLUSTER", "kafka-cluster", ME, "CREATE")
            resp = await client.create_topics([AioNewTopic("aio-fresh", 1, 1)])
            assert [(name, code) for name, code, *_ in resp.topic_errors] == [("aio-fresh", 0)]
        finally:
            await client.close()


def test_confluent_transactional_producer_needs_transactional_id_write(secured: MockCluster) -> None:
    c = secured
    c.add_acl("TOPIC", "orders", ME, "WRITE")
    c.add_acl("TRANSACTIONAL_ID", "tx-ok", ME, "DESCRIBE")  # FindCoordinator only
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "transactional.id": "tx-ok"})
    with pytest.raises(KafkaException) as denied:
        p.init_transactions(10)
    assert denied.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    c.add_acl("TRANSACTIONAL_ID", "tx-", ME, "WRITE", pattern_type="PREFIXED")
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "transactional.id": "tx-ok"})
    p.init_transactions(10)
    p.begin_transaction()
    p.produce("orders", b"in-txn", partition=0)
    p.commit_transaction(10)
    assert c.state.topics["orders"].partitions[0].high_watermark == 2  # the record and the commit marker
