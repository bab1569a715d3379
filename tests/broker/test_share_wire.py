"""ShareGroupHeartbeat, ShareFetch and ShareAcknowledge v1 over a real socket, for the paths the
ShareConsumer does not take on its own: session epochs out of order, sessions never opened or closed
twice, acknowledgements of records not acquired, unknown topic ids, fenced and unknown members, a group
id held by a classic group, share groups turned off (share.version 0), a partition led elsewhere, a
session closing giving its records back, and a fetch that waits for an append."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from tests.broker.wire import WireClient

HB, FETCH, ACK, VERSIONS = (api.request_module(k) for k in (76, 78, 79, 18))
ACCEPT, RELEASE = 1, 2


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(topics={"jobs": 1}) as c:
        yield c


def port(cluster: MockCluster) -> int:
    return int(cluster.bootstrap_servers.rsplit(":", 1)[1])


def produce(cluster: MockCluster, count: int, topic: str = "jobs") -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for i in range(count):
        p.produce(topic, f"v{i}".encode(), partition=0)
    assert p.flush(10) == 0


def topic_id(cluster: MockCluster, name: str = "jobs") -> bytes:
    return bytes(cluster.state.topics[name].topic_id)


def heartbeat(w: WireClient, member: str, epoch: int, topics: list[str] | None = None, group: str = "g") -> Any:
    return w.call(76, 1, HB.ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch,
                                                       rack_id=None, subscribed_topic_names=topics))


def fetch(w: WireClient, tid: bytes, epoch: int, acks: list[tuple[int, int, list[int]]] | None = None,
          member: str = "m1", max_wait_ms: int = 0, forget: bool = False, group: str = "g") -> Any:
    batches = [FETCH.AcknowledgementBatch(first_offset=f, last_offset=last, acknowledge_types=t)
               for f, last, t in acks or []]
    topics = [] if forget else [FETCH.FetchTopic(topic_id=tid, partitions=[
        FETCH.FetchPartition(partition_index=0, acknowledgement_batches=batches)])]
    forgotten = [FETCH.ForgottenTopic(topic_id=tid, partitions=[0])] if forget else []
    return w.call(78, 1, FETCH.ShareFetchRequest(
        group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=max_wait_ms, min_bytes=1,
        max_bytes=1 << 20, max_records=500, batch_size=500, topics=topics, forgotten_topics_data=forgotten))


def acknowledge(w: WireClient, tid: bytes, epoch: int, acks: list[tuple[int, int, list[int]]],
                member: str = "m1") -> Any:
    batches = [ACK.AcknowledgementBatch(first_offset=f, last_offset=last, acknowledge_types=t) for f, last, t in acks]
    return w.call(79, 1, ACK.ShareAcknowledgeRequest(group_id="g", member_id=member, share_session_epoch=epoch,
                                                     topics=[ACK.AcknowledgeTopic(topic_id=tid, partitions=[
                                                         ACK.AcknowledgePartition(partition_index=0,
                                                                                  acknowledgement_batches=batches)])]))


def acquired(answer: Any) -> list[tuple[int, int, int]]:
    return [(r.first_offset, r.last_offset, r.delivery_count)
            for t in answer.responses for p in t.partitions for r in p.acquired_records]


def earliest(cluster: MockCluster, group: str = "g") -> None:
    configs = cluster.state.config_admin.group_configs
    cluster.call(lambda: configs.replace(group, {"share.auto.offset.reset": "earliest"}))


def test_api_versions_advertise_v1_of_the_share_apis(cluster: MockCluster) -> None:
    with WireClient(port(cluster)) as w:
        keys = {k.api_key: (k.min_version, k.max_version) for k in w.call(18, 3, VERSIONS.ApiVersionsRequest(
            client_software_name="t", client_software_version="1")).api_keys}
    assert keys[76] == (1, 1) and keys[78] == (1, 1) and keys[79] == (1, 1)


def test_heartbeat_errors(cluster: MockCluster) -> None:
    with WireClient(port(cluster)) as w:
        joined = heartbeat(w, "m1", 0, ["jobs"])
        assert joined.error_code == 0 and joined.member_epoch > 0
        assert [(a.topic_id, a.partitions) for a in joined.assignment.topic_partitions] == [(topic_id(cluster), [0])]
        assert heartbeat(w, "m1", joined.member_epoch + 5).error_code == ErrorCode.FENCED_MEMBER_EPOCH
        assert heartbeat(w, "nobody", 3).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert heartbeat(w, "", 0, ["jobs"]).error_code == ErrorCode.INVALID_REQUEST
        left = heartbeat(w, "m1", -1)
        assert left.error_code == 0 and left.member_epoch == -1


def test_a_classic_group_id_is_not_a_share_group(cluster: MockCluster) -> None:
    cluster.call(lambda: cluster.state.groups.groups.setdefault("taken", cluster.state.groups.group("taken")))
    cluster.call(lambda: cluster.state.groups.group("taken").offsets.update({("jobs", 0): (1, -1, "")}))
    with WireClient(port(cluster)) as w:
        assert heartbeat(w, "m1", 0, ["jobs"], group="taken").error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_share_version_0_turns_share_groups_off(cluster: MockCluster) -> None:
    cluster.call(lambda: cluster.state.features.finalized.update({"share.version": 0}))
    with WireClient(port(cluster)) as w:
        assert heartbeat(w, "m1", 0, ["jobs"]).error_code == ErrorCode.UNSUPPORTED_VERSION
        assert fetch(w, topic_id(cluster), 0).error_code == ErrorCode.UNSUPPORTED_VERSION


def test_session_epochs(cluster: MockCluster) -> None:
    tid = topic_id(cluster)
    with WireClient(port(cluster)) as w:
        assert fetch(w, tid, 1).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        assert fetch(w, tid, -1).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        assert fetch(w, tid, 0, acks=[(0, 0, [ACCEPT])]).error_code == ErrorCode.INVALID_REQUEST
        assert fetch(w, tid, 0).error_code == 0
        assert fetch(w, tid, 2).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        assert fetch(w, tid, 1).error_code == 0
        assert acknowledge(w, tid, 0, []).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        assert acknowledge(w, tid, 2, []).error_code == 0
        assert fetch(w, tid, -1).error_code == 0
        assert acknowledge(w, tid, -1, []).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_acknowledging_records_not_acquired_is_invalid_record_state(cluster: MockCluster) -> None:
    earliest(cluster)
    produce(cluster, 3)
    tid = topic_id(cluster)
    with WireClient(port(cluster)) as w, WireClient(port(cluster)) as other:
        got = fetch(w, tid, 0)
        assert acquired(got) == [(0, 2, 1)] and got.acquisition_lock_timeout_ms == 30000
        assert got.responses[0].partitions[0].records  # the batches holding them
        bad = acknowledge(other, tid, 1, [(0, 0, [ACCEPT])], member="m2")  # m2 has no session
        assert bad.error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        fetch(other, tid, 0, member="m2")
        stolen = acknowledge(other, tid, 1, [(0, 0, [ACCEPT])], member="m2")
        assert stolen.responses[0].partitions[0].error_code == ErrorCode.INVALID_RECORD_STATE
        past = acknowledge(w, tid, 1, [(7, 9, [ACCEPT])])
        assert past.responses[0].partitions[0].error_code in (ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_RECORD_STATE)
        ok = acknowledge(w, tid, 2, [(0, 1, [ACCEPT]), (2, 2, [RELEASE])])
        assert ok.responses[0].partitions[0].error_code == 0
        assert acquired(fetch(w, tid, 3)) == [(2, 2, 2)]  # the released one, delivered a second time
        unknown = acknowledge(w, bytes(range(16)), 4, [(0, 0, [ACCEPT])])
        assert unknown.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_closing_a_session_gives_its_records_back(cluster: MockCluster) -> None:
    earliest(cluster)
    produce(cluster, 2)
    tid = topic_id(cluster)
    with WireClient(port(cluster)) as w, WireClient(port(cluster)) as other:
        assert acquired(fetch(w, tid, 0)) == [(0, 1, 1)]
        assert acquired(fetch(other, tid, 0, member="m2")) == []  # all acquired by m1
        assert fetch(w, tid, 1, acks=[(0, 0, [ACCEPT])]).error_code == 0  # (acquires nothing new)
        assert fetch(w, tid, -1).error_code == 0  # the close: offset 1 goes back
        assert acquired(fetch(other, tid, 1, member="m2")) == [(1, 1, 2)]


def test_fetch_waits_for_an_append(cluster: MockCluster) -> None:
    earliest(cluster)
    tid = topic_id(cluster)
    later = threading.Timer(0.3, produce, (cluster, 1))
    with WireClient(port(cluster)) as w:
        started = time.monotonic()
        later.start()
        got = fetch(w, tid, 0, max_wait_ms=5000)
    later.join()
    assert acquired(got) == [(0, 0, 1)] and time.monotonic() - started < 5


def test_partition_led_elsewhere_is_not_leader() -> None:
    with MockCluster(brokers=2, topics={"jobs": 1}) as cluster:
        plog = cluster.state.topics["jobs"].partitions[0]
        errors = []
        for address in cluster.bootstrap_servers.split(","):
            with WireClient(int(address.rsplit(":", 1)[1])) as w:
                answer = fetch(w, topic_id(cluster), 0)
            part = answer.responses[0].partitions[0] if answer.responses else None
            errors.append((part.error_code, part.current_leader.leader_id) if part else (0, None))
        assert sorted(errors, key=lambda e: e[0]) == [(0, None), (ErrorCode.NOT_LEADER_OR_FOLLOWER, plog.leader)]


def test_a_closed_connection_closes_the_sessions_opened_on_it(cluster: MockCluster) -> None:
    earliest(cluster)
    produce(cluster, 2)
    tid = topic_id(cluster)
    with WireClient(port(cluster)) as crashing:
        assert acquired(fetch(crashing, tid, 0)) == [(0, 1, 1)]
    # the client vanished without closing its session: Kafka evicts it with the connection
    with WireClient(port(cluster)) as other:
        deadline = time.monotonic() + 5
        got: list[tuple[int, int, int]] = []
        epoch = 0
        while not got and time.monotonic() < deadline:
            got = acquired(fetch(other, tid, epoch, member="m2", max_wait_ms=200))
            epoch += 1
        assert got == [(0, 1, 2)]
        assert cluster.call(lambda: cluster.state.share.sessions_on(0).get("g", "m1")) is None


def test_acquired_records_are_cut_at_log_batches_once_a_run_holds_batch_size(cluster: MockCluster) -> None:
    earliest(cluster)
    produce(cluster, 7)  # one batch of 7 records
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    for i in range(7):  # then 7 batches of one record
        p.produce("jobs", f"w{i}".encode(), partition=0)
        assert p.flush(10) == 0

    def share_fetch(w: WireClient, epoch: int) -> Any:
        return w.call(78, 1, FETCH.ShareFetchRequest(
            group_id="g", member_id="m1", share_session_epoch=epoch, max_wait_ms=0, min_bytes=1,
            max_bytes=1 << 20, max_records=7, batch_size=3, forgotten_topics_data=[], topics=[FETCH.FetchTopic(
                topic_id=topic_id(cluster), partitions=[FETCH.FetchPartition(partition_index=0,
                                                                             acknowledgement_batches=[])])]))

    with WireClient(port(cluster)) as w:
        assert acquired(share_fetch(w, 0)) == [(0, 6, 1)]  # Kafka never splits a log batch
        assert acquired(share_fetch(w, 1)) == [(7, 9, 1), (10, 12, 1), (13, 13, 1)]
