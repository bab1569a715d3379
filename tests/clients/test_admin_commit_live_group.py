"""An admin's offset commit into a classic group with a live member, with real admin clients: Kafka refuses it
with UNKNOWN_MEMBER_ID (ClassicGroup.validateOffsetCommit: generation -1 and no member id are only taken while
the group is Empty), and takes it once the member has left."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from mockbroker.cluster import MockCluster
from tests.clients.test_groups import consumer, fill, poll_until

pytestmark = pytest.mark.clients


@pytest.fixture
def live() -> Iterator[tuple[MockCluster, Consumer]]:
    """A cluster whose group "live" has one consumer member that read and committed orders-0 up to 10."""
    with MockCluster(topics={"orders": 1}) as cluster:
        fill(cluster, "orders", 10, 1)
        member = consumer(cluster, "live", **{"enable.auto.commit": False})
        member.subscribe(["orders"])
        assert len(poll_until([member], lambda seen: len(seen) >= 10)) == 10
        member.commit(asynchronous=False)
        assert cluster.state.groups.groups["live"].state == "Stable"
        yield cluster, member
        with contextlib.suppress(RuntimeError):  # closed by the test already
            member.close()


def _wait_empty(cluster: MockCluster, group: str) -> None:
    deadline = time.monotonic() + 10
    while cluster.state.groups.groups[group].state != "Empty":
        assert time.monotonic() < deadline, "the member did not leave"
        time.sleep(0.01)


def test_confluent_admin_alter_offsets_of_a_live_group(live: tuple[MockCluster, Consumer]) -> None:
    cluster, member = live
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    request = [ConsumerGroupTopicPartitions("live", [TopicPartition("orders", 0, 3)])]
    refused = admin.alter_consumer_group_offsets(request)["live"].result(timeout=10)
    [tp] = refused.topic_partitions  # the error is the partition's, as Kafka's answer has it
    assert tp.error is not None and tp.error.code() == KafkaError.UNKNOWN_MEMBER_ID
    assert cluster.state.groups.committed("live", "orders", 0)[0] == 10  # unchanged
    member.close()
    _wait_empty(cluster, "live")
    done = admin.alter_consumer_group_offsets(request)["live"].result(timeout=10)
    assert [(tp.partition, tp.offset, tp.error) for tp in done.topic_partitions] == [(0, 3, None)]
    assert cluster.state.groups.committed("live", "orders", 0)[0] == 3


def test_kafka_python_admin_alter_offsets_of_a_live_group(live: tuple[MockCluster, Consumer]) -> None:
    from kafka import TopicPartition as KTP
    from kafka.admin import KafkaAdminClient
    from kafka.errors import NoError, UnknownMemberIdError
    from kafka.structs import OffsetAndMetadata

    cluster, member = live
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        offsets = {KTP("orders", 0): OffsetAndMetadata(4, "", None)}
        assert admin.alter_group_offsets("live", offsets) == {KTP("orders", 0): UnknownMemberIdError}
        assert cluster.state.groups.committed("live", "orders", 0)[0] == 10
        member.close()
        _wait_empty(cluster, "live")
        assert admin.alter_group_offsets("live", offsets) == {KTP("orders", 0): NoError}
        assert cluster.state.groups.committed("live", "orders", 0)[0] == 4
    finally:
        admin.close()
