"""Authorization in the admin handlers added with issue 9, over the wire: DeleteRecords,
DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, AlterReplicaLogDirs, DescribeLogDirs,
ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments, UpdateFeatures and
DescribeTopicPartitions. For each API, every version: a missing ACL refuses with the error where Kafka
puts it (per partition, per resource or top level) and changes nothing, the matching ALLOW lets the same
request through; with authorization off nothing is checked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from mockbroker.protocol.runtime import ZERO_UUID

from .wire import WireClient

E = ErrorCode
ME = "User:ANONYMOUS"
R = {k: api.request_module(k) for k in (18, 21, 32, 33, 34, 35, 43, 44, 45, 46, 57, 75)}
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, UPGRADE, SAFE = 0, 1, 2
TOPIC_AUTH, CLUSTER_AUTH = E.TOPIC_AUTHORIZATION_FAILED, E.CLUSTER_AUTHORIZATION_FAILED
ALL_TOPIC_OPS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
NOT_ASKED = -2147483648
CONFIG = {"log.dirs": "/data/{id}/a,/data/{id}/b"}
AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}


@pytest.fixture
def c() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, topics={"orders": 2, "secret": 1}, config={**CONFIG, **AUTHORIZER}) as c:
        yield c


@pytest.fixture
def w(c: MockCluster) -> Iterator[WireClient]:
    with WireClient(c.brokers[0].port) as w:
        yield w


def overrides(c: MockCluster, topic: str) -> dict[str, Any]:
    return c.call(lambda: dict(c.state.topics[topic].config.overrides))  # type: ignore[no-any-return]


# -- requests ---------------------------------------------------------------------------------------
def delete_records(w: WireClient, version: int, wanted: dict[str, list[int]]) -> dict[tuple[str, int], tuple]:
    m = R[21]
    resp = w.call(21, version, m.DeleteRecordsRequest(timeout_ms=1000, topics=[
        m.DeleteRecordsTopic(name=t, partitions=[m.DeleteRecordsPartition(partition_index=i, offset=-1) for i in ps])
        for t, ps in wanted.items()]))
    return {(t.name, p.partition_index): (p.error_code, p.low_watermark) for t in resp.topics for p in t.partitions}


def describe_configs(w: WireClient, version: int, resources: list[tuple[int, str]]) -> list[tuple[int, Any, int]]:
    m = R[32]
    resp = w.call(32, version, m.DescribeConfigsRequest(resources=[
        m.DescribeConfigsResource(resource_type=t, resource_name=n, configuration_keys=None) for t, n in resources]))
    assert [(r.resource_type, r.resource_name) for r in resp.results] == resources
    return [(r.error_code, r.error_message, len(r.configs)) for r in resp.results]


def alter_configs(w: WireClient, version: int, resources: list[tuple[int, str, dict[str, str]]]) -> list[tuple]:
    m = R[33]
    resp = w.call(33, version, m.AlterConfigsRequest(resources=[
        m.AlterConfigsResource(resource_type=t, resource_name=n,
                               configs=[m.AlterableConfig(name=k, value=v) for k, v in cfg.items()])
        for t, n, cfg in resources]))
    return [(r.error_code, r.error_message) for r in resp.responses]


def incremental(w: WireClient, version: int, resources: list[tuple[int, str, dict[str, str]]]) -> list[tuple]:
    m = R[44]
    resp = w.call(44, version, m.IncrementalAlterConfigsRequest(resources=[
        m.AlterConfigsResource(resource_type=t, resource_name=n, configs=[
            m.AlterableConfig(name=k, config_operation=SET, value=v) for k, v in cfg.items()])
        for t, n, cfg in resources]))
    return [(r.error_code, r.error_message) for r in resp.responses]


def alter_log_dirs(w: WireClient, version: int, moves: list[tuple[str, str, list[int]]]) -> list[tuple]:
    m = R[34]
    resp = w.call(34, version, m.AlterReplicaLogDirsRequest(dirs=[
        m.AlterReplicaLogDir(path=path, topics=[m.AlterReplicaLogDirTopic(name=t, partitions=ps)])
        for path, t, ps in moves]))
    return [(r.topic_name, [(p.partition_index, p.error_code) for p in r.partitions]) for r in resp.results]


def describe_log_dirs(w: WireClient, version: int) -> Any:
    return w.call(35, version, R[35].DescribeLogDirsRequest(topics=None))


def placement(w: WireClient) -> dict[tuple[str, int], str]:
    return {(t.name, p.partition_index): r.log_dir for r in describe_log_dirs(w, 4).results
            for t in r.topics for p in t.partitions}


def elect(w: WireClient, version: int, wanted: dict[str, list[int]] | None) -> tuple[int, dict]:
    m = R[43]
    tps = None if wanted is None else [m.TopicPartitions(topic=t, partitions=ps) for t, ps in wanted.items()]
    resp = w.call(43, version, m.ElectLeadersRequest(election_type=0, topic_partitions=tps, timeout_ms=1000))
    return (resp.error_code if version >= 1 else 0), {
        (r.topic, p.partition_id): p.error_code for r in resp.replica_election_results for p in r.partition_result}


def reassign(w: WireClient, version: int, replicas: list[int]) -> Any:
    m = R[45]
    return w.call(45, version, m.AlterPartitionReassignmentsRequest(timeout_ms=1000, topics=[
        m.ReassignableTopic(name="orders", partitions=[
            m.ReassignablePartition(partition_index=1, replicas=replicas)])]))


def list_reassignments(w: WireClient, wanted: dict[str, list[int]] | None) -> Any:
    m = R[46]
    topics = None if wanted is None else [m.ListPartitionReassignmentsTopics(name=t, partition_indexes=ps)
                                          for t, ps in wanted.items()]
    return w.call(46, 0, m.ListPartitionReassignmentsRequest(timeout_ms=1000, topics=topics))


def update_features(w: WireClient, version: int, level: int, kind: int) -> Any:
    m = R[57]
    return w.call(57, version, m.UpdateFeaturesRequest(timeout_ms=1000, feature_updates=[
        m.FeatureUpdateKey(feature="transaction.version", max_version_level=level, upgrade_type=kind,
                           allow_downgrade=kind != UPGRADE)]))


def transaction_version(w: WireClient) -> int:
    resp = w.call(18, 4, R[18].ApiVersionsRequest(client_software_name="wire", client_software_version="1"))
    return next(f.max_version_level for f in resp.finalized_features if f.name == "transaction.version")


def describe_partitions(w: WireClient, names: list[str], limit: int = 2000) -> Any:
    m = R[75]
    return w.call(75, 0, m.DescribeTopicPartitionsRequest(topics=[m.TopicRequest(name=n) for n in names],
                                                          response_partition_limit=limit, cursor=None))


# -- tests ------------------------------------------------------------------------------------------
def test_delete_records_needs_delete_on_the_topic(c: MockCluster, w: WireClient) -> None:
    wanted = {"orders": [0, 1], "nowhere": [0]}
    for version in (0, 1, 2):
        assert delete_records(w, version, wanted) == {
            ("orders", 0): (TOPIC_AUTH, -1), ("orders", 1): (TOPIC_AUTH, -1), ("nowhere", 0): (TOPIC_AUTH, -1)}
    c.add_acl("TOPIC", "orders", ME, "DELETE")
    for version in (0, 1, 2):
        assert delete_records(w, version, wanted) == {
            ("orders", 0): (0, 0), ("orders", 1): (0, 0), ("nowhere", 0): (TOPIC_AUTH, -1)}
    c.add_acl("TOPIC", "*", ME, "DELETE")  # existence is checked only after authorization
    assert delete_records(w, 2, {"nowhere": [0]}) == {("nowhere", 0): (E.UNKNOWN_TOPIC_OR_PARTITION, -1)}


def test_describe_configs_needs_describe_configs(c: MockCluster, w: WireClient) -> None:
    resources = [(TOPIC, "orders"), (TOPIC, "nowhere"), (BROKER, "0"), (BROKER_LOGGER, "0")]
    for version in range(5):
        assert describe_configs(w, version, resources) == [
            (TOPIC_AUTH, "Topic authorization failed.", 0), (TOPIC_AUTH, "Topic authorization failed.", 0),
            (CLUSTER_AUTH, "Cluster authorization failed.", 0), (CLUSTER_AUTH, "Cluster authorization failed.", 0)]
    c.add_acl("TOPIC", "orders", ME, "DESCRIBE_CONFIGS")
    c.add_acl("CLUSTER", "kafka-cluster", ME, "ALTER_CONFIGS")  # implies DESCRIBE_CONFIGS
    for version in range(5):
        results = describe_configs(w, version, resources)
        assert [code for code, _, _ in results] == [0, TOPIC_AUTH, 0, 0]
        assert all(n > 0 for code, _, n in results if code == 0)


def test_alter_configs_needs_alter_configs(c: MockCluster, w: WireClient) -> None:
    resources = [(TOPIC, "orders", {"retention.ms": "1000"}), (TOPIC, "nowhere", {"retention.ms": "1000"}),
                 (BROKER, "0", {"log.retention.ms": "3600000"}), (BROKER, "7", {})]
    for version in (0, 1, 2):
        assert alter_configs(w, version, resources) == [
            (TOPIC_AUTH, "Topic authorization failed."), (TOPIC_AUTH, "Topic authorization failed."),
            (CLUSTER_AUTH, "Cluster authorization failed."),
            # the broker checks the node id before the controller authorizes, as Kafka
            (E.INVALID_REQUEST, "Unexpected broker id, expected 0, but received 7")]
    assert overrides(c, "orders") == {}
    c.add_acl("TOPIC", "orders", ME, "ALTER_CONFIGS")
    c.add_acl("CLUSTER", "kafka-cluster", ME, "ALTER_CONFIGS")
    for version in (0, 1, 2):
        assert [code for code, _ in alter_configs(w, version, resources)] == [0, TOPIC_AUTH, 0, E.INVALID_REQUEST]
    assert overrides(c, "orders") == {"retention.ms": 1000}


def test_incremental_alter_configs_needs_alter_configs(c: MockCluster, w: WireClient) -> None:
    resources = [(TOPIC, "orders", {"retention.ms": "2000"}), (BROKER, "0", {"log.retention.ms": "3600000"}),
                 (BROKER_LOGGER, "0", {"mockbroker.configs": "DEBUG"}),
                 (BROKER_LOGGER, "7", {"mockbroker.configs": "DEBUG"}), (BROKER, "7", {})]
    for version in (0, 1):
        codes = [code for code, _ in incremental(w, version, resources)]
        # BROKER_LOGGER is authorized before its node id is checked, BROKER after (Kafka's order)
        assert codes == [TOPIC_AUTH, CLUSTER_AUTH, CLUSTER_AUTH, CLUSTER_AUTH, E.INVALID_REQUEST]
    assert overrides(c, "orders") == {}
    c.add_acl("TOPIC", "orders", ME, "ALTER_CONFIGS")
    c.add_acl("CLUSTER", "kafka-cluster", ME, "ALTER_CONFIGS")
    for version in (0, 1):
        codes = [code for code, _ in incremental(w, version, resources)]
        assert codes == [0, 0, 0, E.INVALID_REQUEST, E.INVALID_REQUEST]
    assert overrides(c, "orders") == {"retention.ms": 2000}


def test_log_dirs_need_cluster_describe_and_alter(c: MockCluster, w: WireClient) -> None:
    moves = [("/data/0/b", "orders", [0, 1]), ("/data/0/a", "orders", [1]), ("/data/0/b", "nowhere", [0])]
    for version in (0, 1, 2):
        assert alter_log_dirs(w, version, moves) == [  # one result per directory and topic, as Kafka
            ("orders", [(0, CLUSTER_AUTH), (1, CLUSTER_AUTH)]), ("orders", [(1, CLUSTER_AUTH)]),
            ("nowhere", [(0, CLUSTER_AUTH)])]
    for version in range(6):
        resp = describe_log_dirs(w, version)
        assert resp.results == []
        if version >= 3:
            assert resp.error_code == CLUSTER_AUTH
    c.add_acl("CLUSTER", "kafka-cluster", ME, "DESCRIBE")
    for version in range(6):
        resp = describe_log_dirs(w, version)
        assert sorted(r.log_dir for r in resp.results) == ["/data/0/a", "/data/0/b"]
        assert resp.error_code == 0 or version < 3
    before = placement(w)
    away = [({"/data/0/a": "/data/0/b", "/data/0/b": "/data/0/a"}[d], t, [i]) for (t, i), d in before.items()]
    assert {code for _, parts in alter_log_dirs(w, 1, away) for _, code in parts} == {CLUSTER_AUTH}  # not ALTER
    assert placement(w) == before
    c.add_acl("CLUSTER", "kafka-cluster", ME, "ALTER")
    for version in (0, 1, 2):
        assert alter_log_dirs(w, version, moves[:1]) == [("orders", [(0, 0), (1, 0)])]
    assert placement(w)[("orders", 0)] == placement(w)[("orders", 1)] == "/data/0/b"
    assert {code for _, parts in alter_log_dirs(w, 2, away) for _, code in parts} == {0}
    assert placement(w) == {k: d for d, t, [i] in away for k in [(t, i)]}


def test_elections_and_reassignments_need_cluster_alter(c: MockCluster, w: WireClient) -> None:
    for version in (0, 1, 2):
        top, results = elect(w, version, {"orders": [0, 1]})
        assert results == {("orders", 0): CLUSTER_AUTH, ("orders", 1): CLUSTER_AUTH}
        assert top == (CLUSTER_AUTH if version >= 1 else 0)
        assert elect(w, version, None) == ((CLUSTER_AUTH if version >= 1 else 0), {})
    for version in (0, 1):
        resp = reassign(w, version, [0])
        assert (resp.error_code, resp.error_message) == (CLUSTER_AUTH, "Cluster authorization failed.")
        assert [(p.partition_index, p.error_code) for p in resp.responses[0].partitions] == [(1, CLUSTER_AUTH)]
    listed = list_reassignments(w, {"orders": [0, 1]})
    assert (listed.error_code, listed.error_message) == (CLUSTER_AUTH, "Cluster authorization failed.")
    assert [(t.name, [(p.partition_index, list(p.replicas)) for p in t.partitions]) for t in listed.topics] == [
        ("orders", [(0, []), (1, [])])]
    assert list_reassignments(w, None).error_code == CLUSTER_AUTH

    c.add_acl("CLUSTER", "kafka-cluster", ME, "DESCRIBE")  # lists, but elects and moves nothing
    assert (list_reassignments(w, None).error_code, list_reassignments(w, None).topics) == (0, [])
    assert elect(w, 2, {"orders": [0]}) == (CLUSTER_AUTH, {("orders", 0): CLUSTER_AUTH})
    assert reassign(w, 1, [0]).error_code == CLUSTER_AUTH

    c.add_acl("CLUSTER", "kafka-cluster", ME, "ALTER")
    for version in (0, 1, 2):
        assert elect(w, version, {"orders": [0, 1]}) == (0, {("orders", 0): E.ELECTION_NOT_NEEDED,
                                                             ("orders", 1): E.ELECTION_NOT_NEEDED})
    for version in (0, 1):
        resp = reassign(w, version, [0])
        assert resp.error_code == 0 and resp.responses[0].partitions[0].error_code == 0


def test_update_features_needs_cluster_alter(c: MockCluster, w: WireClient) -> None:
    for version in (0, 1, 2):
        resp = update_features(w, version, 1, SAFE)
        assert (resp.error_code, resp.error_message, resp.results) == (
            CLUSTER_AUTH, "Cluster authorization failed.", [])
    assert transaction_version(w) == 2
    c.add_acl("CLUSTER", "kafka-cluster", ME, "ALTER")
    for version, level, kind in ((0, 1, SAFE), (1, 2, UPGRADE), (2, 1, SAFE)):
        assert update_features(w, version, level, kind).error_code == 0
        assert transaction_version(w) == level


def test_describe_topic_partitions_needs_describe(c: MockCluster, w: WireClient) -> None:
    assert describe_partitions(w, []).topics == []  # everything unauthorized is left out
    resp = describe_partitions(w, ["secret", "orders", "nowhere"])
    assert [(t.name, t.error_code, t.topic_id, t.partitions, t.topic_authorized_operations) for t in resp.topics] == [
        (n, TOPIC_AUTH, ZERO_UUID, [], NOT_ASKED) for n in ("nowhere", "orders", "secret")]

    c.add_acl("TOPIC", "orders", ME, "DESCRIBE")
    everything = describe_partitions(w, [])
    assert [(t.name, t.error_code, len(t.partitions)) for t in everything.topics] == [("orders", 0, 2)]
    assert everything.topics[0].topic_authorized_operations == 1 << 8  # DESCRIBE only
    c.add_acl("TOPIC", "orders", ME, "WRITE")
    named = describe_partitions(w, ["secret", "orders", "nowhere"], limit=1)
    assert [(t.name, t.error_code) for t in named.topics] == [("orders", 0), ("nowhere", TOPIC_AUTH),
                                                              ("secret", TOPIC_AUTH)]
    assert [p.partition_index for p in named.topics[0].partitions] == [0]  # the limit cuts orders ...
    assert (named.next_cursor.topic_name, named.next_cursor.partition_index) == ("orders", 1)
    assert named.topics[0].topic_authorized_operations == (1 << 4) | (1 << 8)  # WRITE, DESCRIBE
    assert named.topics[0].topic_id == c.state.topics["orders"].topic_id
    c.add_acl("TOPIC", "*", ME, "DESCRIBE")
    assert [(t.name, t.error_code) for t in describe_partitions(w, ["nowhere"]).topics] == [
        ("nowhere", E.UNKNOWN_TOPIC_OR_PARTITION)]


def test_authorization_off_checks_nothing() -> None:
    with MockCluster(brokers=1, topics={"orders": 2}, config=CONFIG) as c, WireClient(c.brokers[0].port) as w:
        for rtype, name in (("TOPIC", "*"), ("CLUSTER", "kafka-cluster")):
            c.add_acl(rtype, name, "User:*", "ALL", "DENY")  # ignored: no authorizer
        assert delete_records(w, 2, {"orders": [0]}) == {("orders", 0): (0, 0)}
        assert [code for code, _, _ in describe_configs(w, 4, [(TOPIC, "orders"), (BROKER, "0")])] == [0, 0]
        assert alter_configs(w, 2, [(TOPIC, "orders", {"retention.ms": "1000"})]) == [(0, None)]
        assert incremental(w, 1, [(BROKER_LOGGER, "0", {"mockbroker.configs": "INFO"})]) == [(0, None)]
        assert alter_log_dirs(w, 2, [("/data/0/b", "orders", [0])]) == [("orders", [(0, 0)])]
        resp = describe_log_dirs(w, 5)
        assert resp.error_code == 0 and len(resp.results) == 2
        assert elect(w, 2, {"orders": [0]}) == (0, {("orders", 0): E.ELECTION_NOT_NEEDED})
        assert reassign(w, 1, [0]).error_code == 0 and list_reassignments(w, None).error_code == 0
        assert update_features(w, 2, 1, SAFE).error_code == 0
        topics = describe_partitions(w, []).topics
        assert [(t.name, t.error_code, t.topic_authorized_operations) for t in topics] == [
            ("orders", 0, ALL_TOPIC_OPS)]
