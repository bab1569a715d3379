"""Share groups (KIP-932) seen by confluent-kafka's AdminClient, with a group made by its ShareConsumer.

confluent-kafka 2.16.1 has no share-group admin calls (no describe_share_groups, no share-group offset
calls, no SHARE in ConsumerGroupType); what it does offer reaches share groups as with Kafka:
delete_consumer_groups deletes an empty share group (NON_EMPTY_GROUP while a member is in),
describe_consumer_groups answers DEAD (ConsumerGroupDescribe says "not a consumer group", DescribeGroups
describes it as Dead), and list_consumer_groups leaves it out (librdkafka keeps consumer protocol types).
The share-group admin APIs themselves are driven over the wire in tests/broker/test_share_admin.py."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import ConsumerGroupState, KafkaError, KafkaException, ShareConsumer
from confluent_kafka.admin import AdminClient

from mockbroker.cluster import MockCluster

pytestmark = pytest.mark.clients
GROUP = "workers"


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, topics={"orders": 3}) as c:
        yield c


def share_consumer(cluster: MockCluster) -> ShareConsumer:
    """A ShareConsumer polled until the group has it as a member."""
    consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": GROUP})
    consumer.subscribe(["orders"])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        consumer.poll(0.2)
        group = cluster.state.share.groups.group(GROUP)
        if group is not None and group.members:
            return consumer
    consumer.close()
    raise AssertionError("the share consumer never joined")


def test_admin_client_on_a_share_group(cluster: MockCluster) -> None:
    consumer = share_consumer(cluster)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    try:
        listed = admin.list_consumer_groups(request_timeout=10).result()
        assert GROUP not in {g.group_id for g in listed.valid} and not listed.errors
        described = admin.describe_consumer_groups([GROUP], request_timeout=10)[GROUP].result()
        assert described.state == ConsumerGroupState.DEAD and described.members == []
        with pytest.raises(KafkaException) as refused:
            admin.delete_consumer_groups([GROUP], request_timeout=10)[GROUP].result()
        assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
    finally:
        consumer.close()  # leaves the group (member epoch -1)
    deadline = time.monotonic() + 10
    while cluster.state.share.groups.group(GROUP).members and time.monotonic() < deadline:  # type: ignore[union-attr]
        time.sleep(0.05)
    assert admin.delete_consumer_groups([GROUP], request_timeout=10)[GROUP].result() is None
    assert cluster.state.share.groups.group(GROUP) is None
    with pytest.raises(KafkaException) as gone:
        admin.delete_consumer_groups([GROUP], request_timeout=10)[GROUP].result()
    assert gone.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND
