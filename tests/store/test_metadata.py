"""mockbroker.store.metadata: a cluster's metadata made through real admin clients (confluent-kafka; kafka-python
for client quotas and client-metrics subscriptions, which confluent-kafka 2.16 has no API for), captured, sent
through json and restored into a new MockCluster before it starts: every describe answers the same (topic ids
too), a SCRAM user made by the admin API logs in to the new cluster, and bad documents are one line each."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka.admin import ConfigResource as KPResource
from kafka.admin import ConfigResourceType as KPType
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    DescribeClientQuotasRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)

from mockbroker.cluster import MockCluster
from mockbroker.state.cluster import ClusterState
from mockbroker.store.metadata import capture, restore

LISTENERS = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
CONFIG = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
          "super.users": "User:ANONYMOUS;User:carol", "cluster.id": "first-cluster-id"}
T = 10  # seconds: every admin future's bound


def _wait(futures: dict[Any, Any]) -> None:
    for future in futures.values():
        future.result(T)


def _kp_send(admin: KafkaAdminClient, request: Any) -> Any:
    async def send() -> Any:
        return await admin._manager.send(request)

    return admin._manager.run(send)


def _make_metadata(c: MockCluster) -> None:
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    _wait(admin.create_topics([
        NewTopic("orders", num_partitions=3, replica_assignment=[[1, 2], [2, 0], [0, 1]],
                 config={"retention.ms": "3600000", "cleanup.policy": "compact,delete"}),
        NewTopic("events", 2, 3, config={"max.message.bytes": "2000000", "segment.ms": "600000"}),
        NewTopic("plain", 1, 1)]))
    _wait(admin.incremental_alter_configs([
        ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
            ConfigEntry("log.cleaner.backoff.ms", "2500", incremental_operation=AlterConfigOpType.SET)]),
        ConfigResource(ResourceType.GROUP, "billing", incremental_configs=[
            ConfigEntry("consumer.session.timeout.ms", "20000", incremental_operation=AlterConfigOpType.SET)])]))
    _wait(admin.create_acls([
        AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                   AclOperation.READ, AclPermissionType.ALLOW),
        AclBinding(ResourceType.GROUP, "bill", ResourcePatternType.PREFIXED, "User:bob", "10.0.0.1",
                   AclOperation.ALL, AclPermissionType.DENY)]))
    _wait(admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                                     b"carol-secret", b"0123456789abcdef")]))
    kp = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
    try:
        E = AlterClientQuotasRequest.EntryData
        answer = _kp_send(kp, AlterClientQuotasRequest(entries=[
            E(entity=[E.EntityData(entity_type="user", entity_name="alice"),
                      E.EntityData(entity_type="client-id", entity_name=None)],
              ops=[E.OpData(key="producer_byte_rate", value=2048.0, remove=False)]),
            E(entity=[E.EntityData(entity_type="ip", entity_name="10.1.2.3")],
              ops=[E.OpData(key="connection_creation_rate", value=5.0, remove=False)])], validate_only=False))
        assert [e.error_code for e in answer.entries] == [0, 0]
        R = IncrementalAlterConfigsRequest.AlterConfigsResource  # (neither admin client names the resource "")
        done = _kp_send(kp, IncrementalAlterConfigsRequest(resources=[R(resource_type=4, resource_name="", configs=[
            R.AlterableConfig(name="log.retention.ms", config_operation=0, value="7200000")])], validate_only=False))
        assert [r.error_code for r in done.responses] == [0]
        done = kp.alter_configs([KPResource(KPType.CLIENT_METRICS, "producers", configs={
            "metrics": "org.apache.kafka.producer.", "interval.ms": "2000"})], raise_on_unknown=False)
        assert done["client_metrics"]["producers"] == "OK"
    finally:
        kp.close()


def _describe(c: MockCluster) -> dict[str, Any]:
    """What the admin clients tell about the cluster's metadata, in comparable form."""
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    out: dict[str, Any] = {"cluster_id": admin.describe_cluster().result(T).cluster_id}
    names = sorted(admin.list_topics(timeout=T).topics)
    described = admin.describe_topics(TopicCollection(names))
    out["topics"] = {name: (str(d.topic_id), d.is_internal,
                            [(p.id, p.leader.id, [r.id for r in p.replicas]) for p in d.partitions])
                     for name, d in ((n, f.result(T)) for n, f in described.items())}
    calls = [[ConfigResource(ResourceType.TOPIC, n) for n in names] + [ConfigResource(ResourceType.GROUP, "billing")]]
    calls += [[ConfigResource(ResourceType.BROKER, b)] for b in ("0", "1")]  # (one broker a call, says librdkafka)
    out["configs"] = {f"{r.restype}:{r.name}": {k: (e.value, e.source) for k, e in f.result(T).items()}
                      for resources in calls for r, f in admin.describe_configs(resources).items()}
    acls = admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                                AclOperation.ANY, AclPermissionType.ANY)).result(T)
    out["acls"] = sorted(str(a) for a in acls)
    scram = admin.describe_user_scram_credentials().result(T)
    out["scram"] = {u: sorted((i.mechanism, i.iterations) for i in d.scram_credential_infos)
                    for u, d in scram.items()}
    kp = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
    try:
        found = _kp_send(kp, DescribeClientQuotasRequest(components=[], strict=False))  # no component: every entity
        assert found.error_code == 0
        out["quotas"] = sorted((sorted((e.entity_type, e.entity_name or "") for e in entry.entity),
                                [(v.key, v.value) for v in entry.values]) for entry in found.entries)
        metrics = kp.describe_configs([KPResource(KPType.CLIENT_METRICS, "producers")])
        out["client_metrics"] = {k: v["value"] for k, v in metrics["client_metrics"]["producers"].items()}
        D = DescribeConfigsRequest.DescribeConfigsResource
        default = _kp_send(kp, DescribeConfigsRequest(resources=[D(resource_type=4, resource_name="",
                                                                   configuration_keys=None)],
                                                      include_synonyms=False, include_documentation=False))
        out["cluster_default"] = [(c.name, c.value) for r in default.results for c in r.configs]
        assert out["cluster_default"] == [("log.retention.ms", "7200000")]
    finally:
        kp.close()
    return out


@pytest.fixture
def first() -> Iterator[MockCluster]:
    with MockCluster(brokers=3, listeners=LISTENERS, config=CONFIG) as c:
        yield c


def test_restored_cluster_describes_the_same(first: MockCluster) -> None:
    _make_metadata(first)
    before = _describe(first)
    data = json.loads(json.dumps(first.call(capture, first.state)))
    assert data["format"] == 1 and before["cluster_id"] == "first-cluster-id"
    second = MockCluster(brokers=3, listeners=LISTENERS, config={**CONFIG, "cluster.id": "another-id"})
    restore(second.state, data)
    with second:
        after = _describe(second)
        for key, configs in before["configs"].items():
            changed = {k: (v, after["configs"][key].get(k)) for k, v in configs.items()
                       if after["configs"][key].get(k) != v}
            assert not changed, (key, changed)
        assert after == before
        assert set(before["topics"]) == {"orders", "events", "plain"}
        assert before["topics"]["orders"][2] == [(0, 1, [1, 2]), (1, 2, [2, 0]), (2, 0, [0, 1])]
        assert len(before["acls"]) == 2 and len(before["quotas"]) == 2
        assert before["scram"] == {"carol": [(ScramMechanism.SCRAM_SHA_256, 8192)]}
        assert before["client_metrics"]["interval.ms"] == "2000"
        assert before["configs"]["ResourceType.TOPIC:orders"]["retention.ms"][0] == "3600000"
        assert before["configs"]["ResourceType.GROUP:billing"]["consumer.session.timeout.ms"][0] == "20000"
        assert before["configs"]["ResourceType.BROKER:1"]["log.cleaner.backoff.ms"][0] == "2500"
        # the SCRAM user made by AlterUserScramCredentials logs in to the restored cluster
        sasl = AdminClient({"bootstrap.servers": second.bootstrap_for("SASL_PLAINTEXT"),
                            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                            "sasl.username": "carol", "sasl.password": "carol-secret"})
        assert "orders" in sasl.list_topics(timeout=T).topics
        wrong = AdminClient({"bootstrap.servers": second.bootstrap_for("SASL_PLAINTEXT"),
                             "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                             "sasl.username": "carol", "sasl.password": "not-hers"})
        with pytest.raises(KafkaException):
            wrong.list_topics(timeout=3)


def test_epochs_features_producer_ids_and_reassignments_kept() -> None:
    state = ClusterState({"mock.reassignment.delay.ms": 60000})
    for node in (0, 1, 2):
        state.add_broker(node, "127.0.0.1", 9092 + node)
    state.create_topic("t", 2, 2)
    log = state.topics["t"].partitions[0]
    log.bump_leader_epoch(log.replicas[1])
    log.bump_leader_epoch()
    state.features.update([("group.version", 0, 2)])
    state.producers.next_id = 5000
    state.reassignments.alter("t", 1, [0, 1, 2])
    data = json.loads(json.dumps(capture(state)))
    fresh = ClusterState()
    restore(fresh, data)
    got = fresh.topics["t"].partitions[0]
    assert (got.leader, got.leader_epoch, got.epoch_starts, got.replicas) == (
        log.leader, 2, [(0, 0), (1, 0), (2, 0)], log.replicas)
    assert fresh.topics_by_id[state.topics["t"].topic_id] is fresh.topics["t"]
    assert fresh.features.finalized["group.version"] == 0 and fresh.features.epoch == state.features.epoch
    assert fresh.producers.next_id == 5000
    (key, moving), = fresh.reassignments.ongoing.items()
    assert key == (state.topics["t"].topic_id, 1) and moving.target == [0, 1, 2]
    assert capture(fresh) == data


def _base() -> dict[str, Any]:
    state = ClusterState()
    state.add_broker(0, "127.0.0.1", 9092)
    state.create_topic("t", 1, 1, {"retention.ms": "1000"})
    state.config_admin.group_configs.replace("g", {"consumer.session.timeout.ms": "20000"})
    return json.loads(json.dumps(capture(state)))  # type: ignore[no-any-return]


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.update(format=99), "format: 99 is not a format this mockbroker reads (it reads 1)"),
    (lambda d: d.pop("format"), "format: None is not a format"),
    (lambda d: d.pop("topics"), "topics: missing"),
    (lambda d: d["topics"][0].update(topic_id="abc"), "topics[0].topic_id: 'abc' is not a topic id"),
    (lambda d: d["topics"].append(copy.deepcopy(d["topics"][0])), "topics[1].name: topic 't' appears twice"),
    (lambda d: d["topics"][0]["partitions"][0].update(leader=7),
     "topics[0].partitions[0].leader: broker 7 is not one of the replicas [0]"),
    (lambda d: d["topics"][0]["partitions"][0].update(epoch_starts=[[1, 0]]),
     "topics[0].partitions[0].epoch_starts: must be non-empty and end at an epoch up to leader_epoch 0"),
    (lambda d: d["topics"][0]["partitions"][0].update(replicas="0"),
     "topics[0].partitions[0].replicas: a list expected, not a string"),
    (lambda d: d["topics"][0]["configs"].update({"retention.mss": "1"}),
     "topics[0].configs: unknown topic config 'retention.mss': did you mean 'retention.ms'?"),
    (lambda d: d["group_configs"]["g"].update({"consumer.session.timeout.ms": "x"}),
     "group_configs.g:"),
    (lambda d: d["features"]["finalized"].update({"metadata.version": 99}),
     "features.finalized.metadata.version: 99 is not a level this cluster supports (7-25, or 0)"),
    (lambda d: d.update(scram={"u": {"SCRAM-SHA-1": {}}}), "scram.u.SCRAM-SHA-1: unknown SCRAM mechanism"),
    (lambda d: d.update(acls=[{"resource_type": 2}]), "acls[0].resource_name: missing"),
    (lambda d: d.update(reassignments=[{"topic": "nope"}]), "reassignments[0].topic: no topic 'nope' in topics"),
])
def test_a_bad_document_is_one_line(change: Any, message: str) -> None:
    data = _base()
    change(data)
    with pytest.raises(ValueError) as caught:
        restore(ClusterState(), data)
    text = str(caught.value)
    assert "\n" not in text and text.startswith(f"metadata document: {message}"), text


def test_not_an_object_is_one_line() -> None:
    with pytest.raises(ValueError, match=r"^metadata document: \$: an object expected, not a list$"):
        restore(ClusterState(), [])  # type: ignore[arg-type]
