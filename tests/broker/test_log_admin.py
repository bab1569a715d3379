"""Log admin over a raw socket with the codec: DeleteRecords (v0-2, with ListOffsets and Fetch
following the new log start), DescribeLogDirs (v0-5) and AlterReplicaLogDirs (v0-2)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api

from .wire import WireClient, fetch_body, produce_body

DR, LO, DLD, ARLD = (api.request_module(k) for k in (21, 2, 35, 34))
NOW = int(time.time() * 1000)


@pytest.fixture
def logs() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, topics={"t": 3},
                     config={"log.dirs": "/data/{id}/a,/data/{id}/b", "mock.log.dir.total.bytes": 10_000}) as c:
        yield c


def leader(cluster: MockCluster, topic: str, index: int) -> int:
    return cluster.call(lambda: cluster.state.topics[topic].partitions[index].leader)


def port(cluster: MockCluster, node: int) -> int:
    return cluster.server(node).port


def fill(cluster: MockCluster, topic: str, index: int, batches: int, per_batch: int = 5) -> None:
    with WireClient(port(cluster, leader(cluster, topic, index))) as c:
        for b in range(batches):
            data = rec.build_batch([(None, f"v{b}-{i}".encode(), None, NOW) for i in range(per_batch)])
            out = c.call(0, 9, produce_body(9, topic, index, data))
            assert out.responses[0].partition_responses[0].error_code == 0


def delete(c: WireClient, version: int, topic: str, offsets: dict[int, int]) -> dict[int, tuple[int, int]]:
    resp = c.call(21, version, DR.DeleteRecordsRequest(timeout_ms=1000, topics=[DR.DeleteRecordsTopic(
        name=topic, partitions=[DR.DeleteRecordsPartition(partition_index=i, offset=o) for i, o in offsets.items()])]))
    assert resp.topics[0].name == topic
    return {p.partition_index: (p.error_code, p.low_watermark) for p in resp.topics[0].partitions}


def earliest(c: WireClient, topic: str, index: int) -> int:
    resp = c.call(2, 7, LO.ListOffsetsRequest(replica_id=-1, topics=[LO.ListOffsetsTopic(
        name=topic, partitions=[LO.ListOffsetsPartition(partition_index=index, timestamp=-2)])]))
    return resp.topics[0].partitions[0].offset  # type: ignore[no-any-return]


# -- DeleteRecords ---------------------------------------------------------------------------------
@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_records_moves_the_log_start_and_list_offsets_and_fetch_follow(logs: MockCluster, version: int) -> None:
    fill(logs, "t", 0, batches=4)  # offsets 0..19 in batches of 5
    with WireClient(port(logs, leader(logs, "t", 0))) as c:
        assert delete(c, version, "t", {0: 7}) == {0: (0, 7)}
        assert earliest(c, "t", 0) == 7
        below = c.call(1, 12, fetch_body("t", 0, 3)).responses[0].partitions[0]
        assert below.error_code == ErrorCode.OFFSET_OUT_OF_RANGE and below.log_start_offset == 7
        at = c.call(1, 12, fetch_body("t", 0, 7)).responses[0].partitions[0]
        assert at.error_code == 0 and at.log_start_offset == 7
        first = next(rec.iter_batches(at.records))
        assert rec.decode_batch(first[2])[0].base_offset == 5  # the batch holding offset 7 stays whole
        assert delete(c, version, "t", {0: 3}) == {0: (0, 7)}  # never backwards
        assert delete(c, version, "t", {0: -1}) == {0: (0, 20)}  # -1: the high watermark
        assert earliest(c, "t", 0) == 20
        assert logs.call(lambda: logs.state.topics["t"].partitions[0].size_bytes) == 0


def test_delete_records_errors(logs: MockCluster) -> None:
    fill(logs, "t", 0, batches=1)
    lead = leader(logs, "t", 0)
    other = next(b for b in (0, 1, 2) if b != lead)
    with WireClient(port(logs, lead)) as c:
        assert delete(c, 2, "t", {0: 6, 9: 1}) == {0: (ErrorCode.OFFSET_OUT_OF_RANGE, -1),
                                                   9: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
        assert delete(c, 2, "t", {0: -2}) == {0: (ErrorCode.OFFSET_OUT_OF_RANGE, -1)}
        assert delete(c, 1, "nope", {0: 1}) == {0: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    with WireClient(port(logs, other)) as c:
        assert delete(c, 0, "t", {0: 1}) == {0: (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)}
    logs.create_topic("compacted", 1, 1, config={"cleanup.policy": "compact"})
    with WireClient(port(logs, leader(logs, "compacted", 0))) as c:
        assert delete(c, 2, "compacted", {0: 0}) == {0: (ErrorCode.POLICY_VIOLATION, -1)}
    assert earliest_via_leader(logs, "t", 0) == 0


def earliest_via_leader(cluster: MockCluster, topic: str, index: int) -> int:
    with WireClient(port(cluster, leader(cluster, topic, index))) as c:
        return earliest(c, topic, index)


# -- DescribeLogDirs / AlterReplicaLogDirs ---------------------------------------------------------
def describe(c: WireClient, version: int, topics: dict[str, list[int]] | None) -> Any:
    wanted = None if topics is None else [DLD.DescribableLogDirTopic(topic=t, partitions=p) for t, p in topics.items()]
    resp = c.call(35, version, DLD.DescribeLogDirsRequest(topics=wanted))
    assert resp.error_code == 0
    return {r.log_dir: r for r in resp.results}


def placed(result: Any) -> dict[str, dict[int, int]]:
    return {t.name: {p.partition_index: p.partition_size for p in t.partitions} for t in result.topics}


def replicas_on(cluster: MockCluster, topic: str, node: int) -> list[int]:
    return cluster.call(lambda: [p.index for p in cluster.state.topics[topic].partitions if node in p.replicas])


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5])
def test_describe_log_dirs_lists_each_dir_and_the_replicas_it_holds(logs: MockCluster, version: int) -> None:
    fill(logs, "t", 0, batches=2)
    size = logs.call(lambda: logs.state.topics["t"].partitions[0].size_bytes)
    node = leader(logs, "t", 0)
    with WireClient(port(logs, node)) as c:
        dirs = describe(c, version, None)
        assert sorted(dirs) == [f"/data/{node}/a", f"/data/{node}/b"]
        hosted = replicas_on(logs, "t", node)
        seen = {i for r in dirs.values() for i in placed(r).get("t", {})}
        assert seen == set(hosted)
        a = dirs[f"/data/{node}/a"]  # partition 0 -> the first dir (0 % 2)
        assert placed(a)["t"][0] == size and all(r.error_code == 0 for r in dirs.values())
        assert all(p.offset_lag == 0 and not p.is_future_key for t in a.topics for p in t.partitions)
        if version >= 4:
            assert (a.total_bytes, a.usable_bytes) == (10_000, 10_000 - size)
        else:
            assert (a.total_bytes, a.usable_bytes) == (-1, -1)  # not on the wire before v4: decoded defaults
        only = describe(c, version, {"t": [0], "nope": [0]})
        assert placed(only[f"/data/{node}/a"]) == {"t": {0: size}} and placed(only[f"/data/{node}/b"]) == {}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_alter_replica_log_dirs_moves_a_replica_and_reports_kafkas_errors(logs: MockCluster, version: int) -> None:
    node = leader(logs, "t", 0)
    outsider = next((b for b in (0, 1, 2) if 0 not in replicas_on(logs, "t", b)), None)
    with WireClient(port(logs, node)) as c:
        def alter(path: str, topic: str, parts: list[int]) -> dict[int, int]:
            resp = c.call(34, version, ARLD.AlterReplicaLogDirsRequest(dirs=[ARLD.AlterReplicaLogDir(
                path=path, topics=[ARLD.AlterReplicaLogDirTopic(name=topic, partitions=parts)])]))
            assert resp.results[0].topic_name == topic
            return {p.partition_index: p.error_code for p in resp.results[0].partitions}

        assert alter(f"/data/{node}/b/", "t", [0]) == {0: 0}  # normalised
        dirs = describe(c, 4, {"t": [0]})
        assert placed(dirs[f"/data/{node}/b"]) == {"t": {0: 0}} and placed(dirs[f"/data/{node}/a"]) == {}
        assert alter("/elsewhere", "t", [0]) == {0: ErrorCode.LOG_DIR_NOT_FOUND}
        assert alter(f"data/{node}/a", "t", [0]) == {0: ErrorCode.LOG_DIR_NOT_FOUND}  # relative
        assert alter(f"/data/{node}/a", "nope", [0]) == {0: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert alter(f"/data/{node}/a", "t", [7]) == {7: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        logs.call(logs.state.log_dirs.set_offline, node, f"/data/{node}/a")
        assert alter(f"/data/{node}/a", "t", [0]) == {0: ErrorCode.KAFKA_STORAGE_ERROR}
        offline = describe(c, 4, None)[f"/data/{node}/a"]
        assert (offline.error_code, offline.topics, offline.total_bytes) == (ErrorCode.KAFKA_STORAGE_ERROR, [], -1)
    if outsider is not None:  # topic "t" has replication factor 1 here: two brokers hold no replica of t-0
        with WireClient(port(logs, outsider)) as c:
            resp = c.call(34, version, ARLD.AlterReplicaLogDirsRequest(dirs=[ARLD.AlterReplicaLogDir(
                path=f"/data/{outsider}/a", topics=[ARLD.AlterReplicaLogDirTopic(name="t", partitions=[0])])]))
            assert resp.results[0].partitions[0].error_code == ErrorCode.REPLICA_NOT_AVAILABLE
    else:
        pytest.fail("every broker holds a replica of t-0; the REPLICA_NOT_AVAILABLE case was not exercised")


def test_default_log_dir_is_per_broker(cluster: MockCluster) -> None:
    with WireClient(port(cluster, 1)) as c:
        assert list(describe(c, 1, None)) == ["/var/lib/mockbroker/broker-1"]
