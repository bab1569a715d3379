"""Every input the fuzzers found a bug with, replayed through its target, and each bug over the wire.

The inputs live in tests/fuzz/regressions/<target>/ (the runner also uses them as seeds); each is
named after what it does.  The wire tests send the same request to a real MockCluster.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api
from mockbroker.records import build_batch, build_message_set
from tests.broker.wire import WireClient, produce_body
from tests.fuzz import targets

REGRESSIONS = Path(__file__).resolve().parent / "regressions"
INPUTS = sorted(p for p in REGRESSIONS.glob("*/*") if p.is_file())


@pytest.mark.parametrize("path", INPUTS, ids=[f"{p.parent.name}/{p.name}" for p in INPUTS])
def test_found_input_no_longer_fails(path: Path) -> None:
    targets.TARGETS[path.parent.name](path.read_bytes())


@pytest.fixture(scope="module")
def single() -> Iterator[MockCluster]:
    with MockCluster(brokers=1) as c:
        yield c


def _join(client: WireClient, version: int, group: str, protocol_type: str, protocols: list[str]) -> object:
    m = api.request_module(11)
    body = m.JoinGroupRequest(group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id="",
                              group_instance_id=None, protocol_type=protocol_type,
                              protocols=[m.JoinGroupRequestProtocol(name=p, metadata=b"") for p in protocols])
    return client.call(11, version, body)


@pytest.mark.parametrize("version", range(api.version_range(11)[0], api.version_range(11)[1] + 1))
def test_join_group_without_protocols_is_inconsistent_not_a_crash(single: MockCluster, version: int) -> None:
    """Found by the dispatch target: JoinGroup with an empty protocol list reached the protocol vote
    and raised StopIteration (the connection was dropped).  Kafka answers INCONSISTENT_GROUP_PROTOCOL
    when an empty group is joined without a protocol type or without protocols."""
    with WireClient(single.brokers[0].port) as client:
        for group, protocol_type, protocols in ((f"g-none-{version}", "consumer", []),
                                                (f"g-notype-{version}", "", ["range"])):
            resp = _join(client, version, group, protocol_type, protocols)
            assert resp.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL, (group, resp)
        # the connection is still usable and a proper join still works
        resp = _join(client, version, f"g-ok-{version}", "consumer", ["range"])
        if version >= 4:
            assert resp.error_code == ErrorCode.MEMBER_ID_REQUIRED
        else:
            assert resp.error_code == 0 and resp.protocol_name == "range"


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_v10_v11_with_topic_ids_or_null_names_is_invalid_request(single: MockCluster, version: int) -> None:
    """Found by the dispatch target: a v10-11 Metadata request with a null topic name got an answer the
    codec could not write (MetadataResponse names are nullable only from v12) and the connection was
    dropped.  Kafka fails such requests (and topic ids before v12) with INVALID_REQUEST."""
    name = f"meta-{version}"
    single.create_topic(name, 1)
    topic_id = single.call(lambda: single.state.topics[name].topic_id)
    m = api.request_module(3)
    with WireClient(single.brokers[0].port) as client:
        for wanted in ([m.MetadataRequestTopic(name=None, topic_id=topic_id)],
                       [m.MetadataRequestTopic(name=name, topic_id=topic_id), m.MetadataRequestTopic(name=name)],
                       [m.MetadataRequestTopic(name=None)]):
            resp = client.call(3, version, m.MetadataRequest(topics=wanted, allow_auto_topic_creation=False))
            assert [t.error_code for t in resp.topics] == [ErrorCode.INVALID_REQUEST] * len(wanted)
            assert [t.name for t in resp.topics] == [t.name or "" for t in wanted]
            assert resp.brokers == []
        resp = client.call(3, version, m.MetadataRequest(topics=[m.MetadataRequestTopic(name=name)]))
        assert resp.topics[0].error_code == 0 and resp.topics[0].topic_id == topic_id
        # from v12 the id alone finds the topic
        resp = client.call(3, 12, m.MetadataRequest(topics=[m.MetadataRequestTopic(name=None, topic_id=topic_id)]))
        assert resp.topics[0].error_code == 0 and resp.topics[0].name == name


@pytest.mark.parametrize("version", [10, 11, 12])
def test_an_injected_metadata_error_answers_a_null_topic_name(single: MockCluster, version: int) -> None:
    """Found by the dispatch target with a fault rule: an error rule on Metadata mirrored a v10-11
    request's null topic name into the answer, which cannot hold it before v12, and the connection was
    dropped.  The injected answer now names such a topic "" (and carries the topic id it was asked by)."""
    m = api.request_module(3)
    topic_id = b"\x01" * 16
    with single.fault(api="Metadata", error="NOT_LEADER_OR_FOLLOWER", times=None) as rule, \
            WireClient(single.brokers[0].port) as client:
        resp = client.call(3, version, m.MetadataRequest(topics=[m.MetadataRequestTopic(name=None, topic_id=topic_id)]))
        assert [t.error_code for t in resp.topics] == [ErrorCode.NOT_LEADER_OR_FOLLOWER]
        assert resp.topics[0].name == ("" if version < 12 else None)
        assert resp.topics[0].topic_id == topic_id
        assert rule.hits == 1


@pytest.mark.parametrize("version", [0, 2, 3, 9, 11])
def test_a_produce_entry_shorter_than_a_message_is_corrupt(single: MockCluster, version: int) -> None:
    """Found by the dispatch target: a produce entry whose size field is below the magic byte's offset
    (a 12-byte prefix claiming 0-4 bytes) raised IndexError while its magic was read, and the
    connection was dropped.  Kafka (ByteBufferLogInputStream) refuses entries under the v0 message
    overhead of 14 bytes: CORRUPT_MESSAGE."""
    name = f"short-{version}"
    single.create_topic(name, 1)
    with WireClient(single.brokers[0].port) as client:
        for size in (0, 4, 13):
            records = struct.pack(">qi", 0, size) + b"\x00" * size
            resp = client.call(0, version, produce_body(version, name, 0, records))
            codes = [p.error_code for t in resp.responses for p in t.partition_responses]
            assert codes == [ErrorCode.CORRUPT_MESSAGE], (size, codes)
        good = build_batch([(b"k", b"v")]) if version >= 3 else build_message_set([(b"k", b"v")], 1)
        resp = client.call(0, version, produce_body(version, name, 0, good))
        assert [p.error_code for t in resp.responses for p in t.partition_responses] == [0]
