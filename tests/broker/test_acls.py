"""ACLs over the wire: CreateAcls / DescribeAcls / DeleteAcls (every version), SECURITY_DISABLED with
authorization off, Kafka's validation, filter semantics, and the authorizer's decisions (wildcards,
prefixes, implied operations, DENY over ALLOW, super.users, allow.everyone.if.no.acl.found) seen
through the handlers that enforce them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker import records as rec
from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api

from .wire import WireClient, produce_body

CA, DA, DL, MD, FC, JG, LO = (api.request_module(k) for k in (30, 29, 31, 3, 10, 11, 2))
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
TOPIC, GROUP, CLUSTER, TXN = 2, 3, 4, 5
ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 2, 3, 4, 5, 6, 7, 8
DESCRIBE_CONFIGS, ALTER_CONFIGS = 10, 11
DENY, ALLOW = 2, 3
ME = "User:ANONYMOUS"


def port(c: MockCluster) -> int:
    return int(c.bootstrap_servers.split(",")[0].rsplit(":", 1)[1])


@pytest.fixture
def secured() -> Iterator[MockCluster]:
    """Authorization on; the test client (User:ANONYMOUS) is a super user until a test says otherwise."""
    with MockCluster(brokers=1, topics={"orders": 2}, config={"authorizer.class.name": AUTHORIZER,
                                                               "super.users": f"User:admin;{ME}"}) as c:
        yield c


def demote(c: MockCluster, super_users: str = "User:admin") -> None:
    c.call(c.state.config.set, "super.users", super_users)


def creation(rt: int = TOPIC, name: str = "orders", pattern: int = LITERAL, principal: str = "User:alice",
             host: str = "*", op: int = READ, perm: int = ALLOW) -> Any:
    return CA.AclCreation(resource_type=rt, resource_name=name, resource_pattern_type=pattern, principal=principal,
                          host=host, operation=op, permission_type=perm)


def describe_filter(rt: int = ANY, name: str | None = None, pattern: int = ANY, principal: str | None = None,
                    host: str | None = None, op: int = ANY, perm: int = ANY) -> Any:
    return DA.DescribeAclsRequest(resource_type_filter=rt, resource_name_filter=name, pattern_type_filter=pattern,
                                  principal_filter=principal, host_filter=host, operation=op, permission_type=perm)


def delete_filter(rt: int = ANY, name: str | None = None, pattern: int = ANY, principal: str | None = None,
                  host: str | None = None, op: int = ANY, perm: int = ANY) -> Any:
    return DL.DeleteAclsFilter(resource_type_filter=rt, resource_name_filter=name, pattern_type_filter=pattern,
                               principal_filter=principal, host_filter=host, operation=op, permission_type=perm)


def flat(resp: Any) -> set[tuple]:
    return {(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
            for r in resp.resources for a in r.acls}


# -- the three APIs, every version ---------------------------------------------------------------
@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_create_describe_delete_every_version(secured: MockCluster, version: int) -> None:
    pattern = PREFIXED if version >= 1 else LITERAL
    with WireClient(port(secured)) as w:
        created = w.call(30, version, CA.CreateAclsRequest(creations=[
            creation(), creation(name="pay", pattern=pattern, op=WRITE, perm=DENY, host="10.0.0.1"),
            creation(rt=GROUP, name="g1", principal="User:*", op=ALL)]))
        assert [(r.error_code, r.error_message) for r in created.results] == [(0, None)] * 3
        everything = w.call(29, version, describe_filter(pattern=ANY if version >= 1 else LITERAL))
        assert everything.error_code == 0
        expected = {(TOPIC, "orders", LITERAL, "User:alice", "*", READ, ALLOW),
                    (GROUP, "g1", LITERAL, "User:*", "*", ALL, ALLOW)}
        if version == 0:  # v0 sees LITERAL patterns only
            assert flat(everything) == expected | {(TOPIC, "pay", LITERAL, "User:alice", "10.0.0.1", WRITE, DENY)}
        else:
            assert flat(everything) == expected | {(TOPIC, "pay", PREFIXED, "User:alice", "10.0.0.1", WRITE, DENY)}
        topics_only = w.call(29, version, describe_filter(rt=TOPIC, pattern=ANY if version >= 1 else LITERAL,
                                                          perm=ALLOW))
        assert flat(topics_only) == {(TOPIC, "orders", LITERAL, "User:alice", "*", READ, ALLOW)}
        deleted = w.call(31, version, DL.DeleteAclsRequest(filters=[
            delete_filter(rt=GROUP, pattern=LITERAL), delete_filter(rt=TOPIC, name="nothing", pattern=LITERAL)]))
        first, second = deleted.filter_results
        assert first.error_code == 0 and second.error_code == 0 and second.matching_acls == []
        assert [(m.resource_type, m.resource_name, m.pattern_type, m.principal, m.operation, m.permission_type)
                for m in first.matching_acls] == [(GROUP, "g1", LITERAL, "User:*", ALL, ALLOW)]
        left = w.call(29, version, describe_filter(rt=GROUP, pattern=LITERAL))
        assert left.resources == []
    assert len(secured.acls()) == 2


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_security_disabled_without_an_authorizer(version: int) -> None:
    with MockCluster(brokers=1) as c, WireClient(port(c)) as w:
        created = w.call(30, version, CA.CreateAclsRequest(creations=[creation(), creation(name="x")]))
        assert [r.error_code for r in created.results] == [ErrorCode.SECURITY_DISABLED] * 2
        described = w.call(29, version, describe_filter(pattern=LITERAL))
        assert described.error_code == ErrorCode.SECURITY_DISABLED and described.resources == []
        deleted = w.call(31, version, DL.DeleteAclsRequest(filters=[delete_filter(pattern=LITERAL)]))
        assert [r.error_code for r in deleted.filter_results] == [ErrorCode.SECURITY_DISABLED]
        assert c.acls() == []


def test_create_validation(secured: MockCluster) -> None:
    bad = [
        creation(rt=CLUSTER, name="my-cluster"),
        creation(name=""),
        creation(rt=ANY),
        creation(rt=0),
        creation(pattern=MATCH),
        creation(pattern=ANY),
        creation(op=ANY),
        creation(op=0),
        creation(perm=ANY),
        creation(principal="alice"),
        creation(principal=":alice"),
    ]
    with WireClient(port(secured)) as w:
        resp = w.call(30, 3, CA.CreateAclsRequest(creations=[creation(rt=CLUSTER, name="kafka-cluster", op=ALTER),
                                                             *bad]))
    assert resp.results[0].error_code == 0
    assert [r.error_code for r in resp.results[1:]] == [ErrorCode.INVALID_REQUEST] * len(bad)
    messages = [r.error_message for r in resp.results[1:]]
    assert messages[0] == "The only valid name for the CLUSTER resource is kafka-cluster"
    assert messages[1] == "Invalid empty resource name"
    assert messages[2] == "Invalid resourceType ANY" and messages[4] == "Invalid patternType MATCH"
    assert messages[6] == "Invalid operation ANY" and messages[8] == "Invalid permissionType ANY"
    assert messages[9].startswith("Invalid principal")
    assert len(secured.acls()) == 1


def test_filters_with_unknown_codes_are_invalid(secured: MockCluster) -> None:
    with WireClient(port(secured)) as w:
        described = w.call(29, 3, describe_filter(rt=0))
        assert described.error_code == ErrorCode.INVALID_REQUEST
        deleted = w.call(31, 3, DL.DeleteAclsRequest(filters=[delete_filter(op=0), delete_filter(pattern=0),
                                                              delete_filter()]))
    assert [(r.error_code, r.error_message) for r in deleted.filter_results] == [
        (ErrorCode.INVALID_REQUEST, "Unknown entryFilter."), (ErrorCode.INVALID_REQUEST, "Unknown patternFilter."),
        (0, None)]


def test_match_filter_and_duplicates(secured: MockCluster) -> None:
    with WireClient(port(secured)) as w:
        w.call(30, 3, CA.CreateAclsRequest(creations=[
            creation(name="orders-eu"), creation(name="orders-eu"),  # the same ACL twice: stored once
            creation(name="*"), creation(name="ord", pattern=PREFIXED), creation(name="pay", pattern=PREFIXED),
            creation(name="orders", pattern=PREFIXED, principal="User:bob")]))
        match = w.call(29, 3, describe_filter(rt=TOPIC, name="orders-eu", pattern=MATCH))
        assert {(r.resource_name, r.pattern_type) for r in match.resources} == {
            ("orders-eu", LITERAL), ("*", LITERAL), ("ord", PREFIXED), ("orders", PREFIXED)}
        exact = w.call(29, 3, describe_filter(rt=TOPIC, name="orders", pattern=PREFIXED))
        assert flat(exact) == {(TOPIC, "orders", PREFIXED, "User:bob", "*", READ, ALLOW)}
        by_principal = w.call(29, 3, describe_filter(principal="User:alice", host="*"))
        assert len(flat(by_principal)) == 4
        gone = w.call(31, 3, DL.DeleteAclsRequest(filters=[delete_filter(rt=TOPIC, name="orders-x", pattern=MATCH)]))
        assert {m.resource_name for m in gone.filter_results[0].matching_acls} == {"*", "ord", "orders"}
    assert [a.resource_name for a in secured.acls()] == ["orders-eu", "pay"]


# -- who may use the ACL APIs ----------------------------------------------------------------------
def test_acl_apis_need_cluster_alter_and_describe(secured: MockCluster) -> None:
    demote(secured)
    with WireClient(port(secured)) as w:
        assert w.call(30, 3, CA.CreateAclsRequest(creations=[creation()])).results[0].error_code == \
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert w.call(29, 3, describe_filter()).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert w.call(31, 3, DL.DeleteAclsRequest(filters=[delete_filter()])).filter_results[0].error_code == \
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        secured.add_acl("CLUSTER", "kafka-cluster", ME, "ALTER")
        assert w.call(30, 3, CA.CreateAclsRequest(creations=[creation()])).results[0].error_code == 0
        assert w.call(29, 3, describe_filter()).error_code == 0  # ALTER implies DESCRIBE
        secured.add_acl("CLUSTER", "kafka-cluster", ME, "ALTER", "DENY", host="10.9.9.9")  # another host
        assert w.call(29, 3, describe_filter()).error_code == 0
        secured.add_acl("CLUSTER", "kafka-cluster", ME, "DESCRIBE", "DENY", host="127.0.0.1")
        assert w.call(29, 3, describe_filter()).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert w.call(30, 3, CA.CreateAclsRequest(creations=[creation()])).results[0].error_code == 0  # DENY
        # of DESCRIBE leaves ALTER alone (a DENY implies nothing)


# -- the authorizer's decisions, seen through Produce and Metadata ----------------------------------
def produce_code(w: WireClient, topic: str = "orders") -> int:
    batch = rec.build_batch([(b"k", b"v", [], int(time.time() * 1000))])
    resp = w.call(0, 9, produce_body(9, topic, 0, batch))
    return resp.responses[0].partition_responses[0].error_code  # type: ignore[no-any-return]


def test_produce_rules(secured: MockCluster) -> None:
    demote(secured)
    c = secured
    with WireClient(port(c)) as w:
        assert produce_code(w) == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # no ACLs: denied
        c.add_acl("TOPIC", "ord", ME, "WRITE", pattern_type="PREFIXED")
        assert produce_code(w) == 0
        c.create_topic("secret", 1)
        batch = rec.build_batch([(b"k", b"v", [], int(time.time() * 1000))])
        by_id = w.call(0, 13, produce_body(13, "", 0, batch, topic_id=c.state.topics["secret"].topic_id))
        assert by_id.responses[0].partition_responses[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        unknown = w.call(0, 13, produce_body(13, "", 0, batch, topic_id=b"\x07" * 16))
        assert unknown.responses[0].partition_responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
        transactional = produce_body(9, "orders", 0, batch)
        transactional.transactional_id = "tx-1"  # checked before any topic: WRITE on the transactional id
        resp = w.call(0, 9, transactional)
        assert resp.responses[0].partition_responses[0].error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        c.add_acl("TOPIC", "orders", "User:*", "WRITE", "DENY", host="10.1.2.3")  # another host: no effect
        assert produce_code(w) == 0
        c.add_acl("TOPIC", "*", "User:*", "ALL", "DENY", host="127.0.0.1")  # DENY beats ALLOW
        assert produce_code(w) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        demote(c, f"User:admin; {ME} ")  # super users skip the ACLs
        assert produce_code(w) == 0


def test_allow_everyone_if_no_acl_found(secured: MockCluster) -> None:
    c = secured
    demote(c)
    c.call(c.state.config.set, "allow.everyone.if.no.acl.found", "true")
    with WireClient(port(c)) as w:
        assert produce_code(w) == 0  # no ACL on the topic at all
        c.add_acl("TOPIC", "orders", "User:bob", "WRITE")  # an ACL for someone else: the topic has ACLs now
        assert produce_code(w) == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def metadata(w: WireClient, names: list[str] | None, version: int = 12, create: bool = False) -> Any:
    topics = None if names is None else [MD.MetadataRequestTopic(name=n) for n in names]
    return w.call(3, version, MD.MetadataRequest(topics=topics, allow_auto_topic_creation=create,
                                                 include_topic_authorized_operations=True))


def test_metadata_filters_and_implied_describe(secured: MockCluster) -> None:
    c = secured
    c.create_topic("payments", 1)
    demote(c)
    with WireClient(port(c)) as w:
        assert metadata(w, None).topics == []
        named = metadata(w, ["orders", "missing"])
        assert [(t.name, t.error_code) for t in named.topics] == [
            ("orders", ErrorCode.TOPIC_AUTHORIZATION_FAILED), ("missing", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
        c.add_acl("TOPIC", "orders", ME, "READ")  # READ implies DESCRIBE
        c.add_acl("TOPIC", "payments", ME, "DESCRIBE_CONFIGS")  # does not
        c.add_acl("TOPIC", "payments", ME, "ALTER_CONFIGS", "DENY")  # DENY implies nothing
        everything = metadata(w, None)
        assert [t.name for t in everything.topics] == ["orders"]
        ops = everything.topics[0].topic_authorized_operations
        assert ops == (1 << READ) | (1 << DESCRIBE)
        # auto-creation needs CREATE (and DESCRIBE) on the topic or CREATE on the cluster
        c.add_acl("TOPIC", "new-", ME, "DESCRIBE", pattern_type="PREFIXED")
        assert metadata(w, ["new-a"], create=True).topics[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        c.add_acl("CLUSTER", "kafka-cluster", ME, "CREATE")
        assert metadata(w, ["new-a"], create=True).topics[0].error_code == 0
        assert "new-a" in c.state.topics


def test_metadata_operations_when_off_and_cluster_operations() -> None:
    with MockCluster(brokers=1, topics={"orders": 1}) as c, WireClient(port(c)) as w:
        resp = w.call(3, 10, MD.MetadataRequest(topics=None, include_cluster_authorized_operations=True,
                                                include_topic_authorized_operations=True))
        topic_ops = sum(1 << op for op in (READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS,
                                           ALTER_CONFIGS))
        assert resp.topics[0].topic_authorized_operations == topic_ops
        assert resp.cluster_authorized_operations == 0b1_1111_1010_0000
        plain = w.call(3, 10, MD.MetadataRequest(topics=None))
        assert plain.topics[0].topic_authorized_operations == -(2**31)
        assert plain.cluster_authorized_operations == -(2**31)


def test_group_and_transaction_coordinator_lookups(secured: MockCluster) -> None:
    c = secured
    demote(c)
    with WireClient(port(c)) as w:
        resp = w.call(10, 4, FC.FindCoordinatorRequest(key_type=0, coordinator_keys=["g1", "g2"]))
        assert [x.error_code for x in resp.coordinators] == [ErrorCode.GROUP_AUTHORIZATION_FAILED] * 2
        c.add_acl("GROUP", "g1", ME, "READ")
        resp = w.call(10, 4, FC.FindCoordinatorRequest(key_type=0, coordinator_keys=["g1", "g2"]))
        assert [x.error_code for x in resp.coordinators] == [0, ErrorCode.GROUP_AUTHORIZATION_FAILED]
        old = w.call(10, 2, FC.FindCoordinatorRequest(key="t1", key_type=1))
        assert old.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        join = w.call(11, 5, JG.JoinGroupRequest(group_id="g2", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                                 member_id="", protocol_type="consumer", protocols=[]))
        assert join.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_list_offsets_needs_describe(secured: MockCluster) -> None:
    c = secured
    demote(c)
    c.add_acl("TOPIC", "orders", ME, "DESCRIBE", "ALLOW")
    c.create_topic("secret", 1)
    with WireClient(port(c)) as w:
        resp = w.call(2, 7, LO.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
            LO.ListOffsetsTopic(name=n, partitions=[LO.ListOffsetsPartition(partition_index=0, timestamp=-1)])
            for n in ("orders", "secret")]))
    assert [t.partitions[0].error_code for t in resp.topics] == [0, ErrorCode.TOPIC_AUTHORIZATION_FAILED]
