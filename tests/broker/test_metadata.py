"""ApiVersions and Metadata against real clients over real sockets."""

from __future__ import annotations

import socket
import struct

from confluent_kafka.admin import AdminClient

from mockbroker.cluster import MockCluster
from mockbroker.protocol import api


def test_confluent_kafka_sees_brokers_topics_and_leaders(cluster: MockCluster) -> None:
    md = AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(timeout=10)
    assert sorted(md.brokers) == [0, 1, 2]
    assert {b.port for b in md.brokers.values()} == {b.port for b in cluster.brokers}
    parts = md.topics["orders"].partitions
    assert sorted(parts) == list(range(6))
    assert {p.leader for p in parts.values()} == {0, 1, 2}  # leaders spread over the brokers


def test_kafka_python_auto_creates_a_topic(single: MockCluster) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=single.bootstrap_servers, request_timeout_ms=5000)
    try:
        assert producer.partitions_for("fresh") == {0}
    finally:
        producer.close()
    assert "fresh" in single.state.topics


def _exchange(port: int, frame: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        return s.recv(size, socket.MSG_WAITALL)


def test_api_versions_newer_than_supported_gets_v0_with_unsupported_version(single: MockCluster) -> None:
    frame = struct.pack(">hhih", 18, 99, 7, 1) + b"c" + b"\x00" + b"\x00\x00\x00"
    reply = _exchange(single.brokers[0].port, frame)
    corr, body = api.decode_response(18, 0, reply)
    assert corr == 7 and body.error_code == 35
    keys = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    assert keys[18] == (0, 4) and keys[3] == (0, 13)


def test_malformed_request_closes_only_that_connection(single: MockCluster) -> None:
    port = single.brokers[0].port
    with socket.create_connection(("127.0.0.1", port), timeout=5) as bad:
        bad.sendall(struct.pack(">i", 6) + struct.pack(">hhh", 3, 12, 0))  # truncated header
        assert bad.recv(10) == b""  # closed by the broker
    good = api.to_bytes(api.encode_request(18, 3, 1, api.request_module(18).ApiVersionsRequest(
        client_software_name="t", client_software_version="1")))
    corr, body = api.decode_response(18, 3, _exchange(port, good[4:]))
    assert corr == 1 and body.error_code == 0


def test_oversized_frame_closes_the_connection_before_reading_it(single: MockCluster) -> None:
    with socket.create_connection(("127.0.0.1", single.brokers[0].port), timeout=5) as s:
        s.sendall(struct.pack(">i", 200 * 1024 * 1024))
        assert s.recv(10) == b""


def _metadata(port: int, version: int = 12) -> dict[str, list[tuple[int, int, int, list[int], list[int]]]]:
    m = api.request_module(3)
    frame = api.to_bytes(api.encode_request(3, version, 5, m.MetadataRequest(topics=None,
                                                                            allow_auto_topic_creation=False)))
    _, body = api.decode_response(3, version, _exchange(port, frame[4:]))
    return {t.name: [(p.partition_index, p.leader_id, p.leader_epoch, p.isr_nodes, p.offline_replicas)
                     for p in t.partitions] for t in body.topics}


def test_repeated_metadata_follows_leader_moves_outages_and_new_partitions(cluster: MockCluster) -> None:
    """The encoded partition lists are reused between answers: every change must still show."""
    port = cluster.brokers[0].port
    first = _metadata(port)
    assert _metadata(port) == first and _metadata(port, 9) == first
    _, leader, epoch, _, _ = first["orders"][0]
    target = next(b for b in (0, 1, 2) if b != leader)
    cluster.move_leader("orders", 0, target)
    moved = _metadata(port)["orders"][0]
    assert moved[1] == target and moved[2] == epoch + 1
    down = next(b for b in (1, 2) if b != target)
    cluster.broker_down(down)
    after = _metadata(port)
    assert all(down not in isr for _, _, _, isr, _ in after["orders"])
    assert any(down in offline for _, _, _, _, offline in after["orders"])
    cluster.broker_up(down)
    cluster.call(cluster.state.create_partitions, "orders", 8)
    assert len(_metadata(port)["orders"]) == 8


def _operations(port: int, include: bool) -> dict[str, int]:
    m = api.request_module(3)
    req = m.MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=include)
    frame = api.to_bytes(api.encode_request(3, 9, 6, req))
    _, body = api.decode_response(3, 9, _exchange(port, frame[4:]))
    return {t.name: t.topic_authorized_operations for t in body.topics}


def test_all_topics_answers_follow_new_and_deleted_topics_and_keep_operations_to_their_own(
        cluster: MockCluster) -> None:
    """An all-topics answer reuses the last one's topic list when nothing changed: topics made or
    deleted since must show, and operations asked for by one request must not appear in the next."""
    port = cluster.brokers[0].port
    first = _metadata(port)
    assert _metadata(port) == first
    cluster.create_topic("later", 2)
    assert set(_metadata(port)) == set(first) | {"later"}
    cluster.call(cluster.state.delete_topic, "later")
    assert _metadata(port) == first
    with_ops = _operations(port, True)
    assert with_ops and all(ops > 0 for ops in with_ops.values())  # ACLs off: every supported operation
    assert set(_operations(port, False).values()) == {-(2**31)}  # the default, not the copy's operations
    assert set(_operations(port, True).values()) == set(with_ops.values())


def test_kept_metadata_answers_are_the_codecs_bytes_and_follow_changes(cluster: MockCluster) -> None:
    """Metadata answers made of shared parts are written from kept encodings (k03_metadata._encode):
    asked again, every version answers the same bytes, which are what the codec writes for the decoded
    answer; answers with an unknown topic are written anew; a leader move changes the kept answer."""
    m = api.request_module(3)
    port = cluster.brokers[0].port

    def raw(version: int, topics: list[str] | None) -> bytes:
        wanted = None if topics is None else [m.MetadataRequestTopic(name=t) for t in topics]
        req = m.MetadataRequest(topics=wanted, allow_auto_topic_creation=False)
        return _exchange(port, api.to_bytes(api.encode_request(3, version, 5, req))[4:])

    for version in (1, 4, 9, 10, 12, 13):
        for topics in (None, ["orders"], ["orders", f"nope-{version}"]):
            first = raw(version, topics)
            assert raw(version, topics) == first, (version, topics)
            _, body = api.decode_response(3, version, first)
            again = bytearray()
            api.encode_message(api.response_module(3), version, body, again, [])
            assert first.endswith(bytes(again)), (version, topics)
            if topics and len(topics) == 2 and version >= 4:  # (auto-created before v4)
                assert body.topics[1].error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION
    before = api.decode_response(3, 12, raw(12, ["orders"]))[1].topics[0].partitions[0]
    cluster.move_leader("orders", 0, next(b for b in (0, 1, 2) if b != before.leader_id))
    after = api.decode_response(3, 12, raw(12, ["orders"]))[1].topics[0].partitions[0]
    assert (after.leader_id, after.leader_epoch) != (before.leader_id, before.leader_epoch)
    assert after.leader_epoch == before.leader_epoch + 1
