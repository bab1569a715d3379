"""What a request is about: the fast paths for Produce, Fetch, Metadata and ApiVersions say exactly what
the generic walk says, and the journal's frozen forms (Produce's raw pairs included) read back as the
summary."""

from __future__ import annotations

import pytest

from mockbroker.faults import facts as facts_module
from mockbroker.faults.journal import Journal, JournalEntry
from mockbroker.protocol import api
from mockbroker.protocol.runtime import EncodedList

KNOWN_ID = b"\x01" * 16
TOPICS_BY_ID = {KNOWN_ID: type("T", (), {"name": "by-id"})()}


def _produce(version: int) -> object:
    m = api.request_module(0)
    return m.ProduceRequest(acks=1, timeout_ms=100, transactional_id="tx" if version >= 3 else None, topic_data=[
        m.TopicProduceData(name="a" if version < 13 else "", topic_id=KNOWN_ID if version >= 13 else b"\0" * 16,
                           partition_data=[m.PartitionProduceData(index=i, records=b"") for i in (2, 0)]),
        m.TopicProduceData(name="b" if version < 13 else "", topic_id=b"\x09" * 16,
                           partition_data=[m.PartitionProduceData(index=5, records=b"")]),
        m.TopicProduceData(name="empty", partition_data=[]),
    ])


def _fetch(version: int) -> object:
    m = api.request_module(1)
    by_id = version >= 13
    return m.FetchRequest(topics=[
        m.FetchTopic(topic="" if by_id else "a", topic_id=KNOWN_ID if by_id else b"\0" * 16,
                     partitions=[m.FetchPartition(partition=p) for p in (3, 1)]),
        m.FetchTopic(topic="" if by_id else "c", topic_id=b"\x07" * 16, partitions=[]),
    ], forgotten_topics_data=[m.ForgottenTopic(topic="" if by_id else "old", topic_id=KNOWN_ID if by_id else b"\0" * 16,
                                               partitions=[4])] if version >= 7 else [])


def _metadata(version: int) -> object:
    m = api.request_module(3)
    by_id = version >= 10
    return m.MetadataRequest(topics=[
        m.MetadataRequestTopic(name="a"), m.MetadataRequestTopic(name="" if by_id else "b"),
        m.MetadataRequestTopic(name=None if by_id else "c", topic_id=KNOWN_ID if by_id else b"\0" * 16),
        m.MetadataRequestTopic(name=None if by_id else "d", topic_id=b"\x05" * 16 if by_id else b"\0" * 16),
    ])


def _api_versions(version: int) -> object:
    return api.request_module(18).ApiVersionsRequest(client_software_name="c", client_software_version="1")


CASES = [(0, _produce, (3, 9, 12, 13)), (1, _fetch, (4, 7, 12, 13, 16)), (3, _metadata, (1, 9, 12, 13)),
         (18, _api_versions, (0, 3, 4))]


@pytest.mark.parametrize(("api_key", "make", "versions"), CASES)
def test_fast_paths_match_the_generic_walk(api_key: int, make: object, versions: tuple[int, ...]) -> None:
    for version in versions:
        body = make(version)  # type: ignore[operator]
        fast = facts_module.request_facts(api_key, body, TOPICS_BY_ID)
        generic = facts_module.generic_facts(api_key, body, TOPICS_BY_ID)
        assert fast == generic, version
        assert fast.topics or api_key == 18  # the case is not vacuous
    if api_key == 3:  # all topics: about nothing
        every = api.request_module(3).MetadataRequest(topics=None)
        assert facts_module.request_facts(3, every, {}) == facts_module.generic_facts(3, every, {})


def test_frozen_facts_read_back_as_the_summary() -> None:
    found = facts_module.Facts(topics={"b": {3, 1}, "a": set()}, group_ids={"g2", "g1"}, transactional_id="tx")
    entry = JournalEntry(1, 0, 0, "c", None, None, "Produce", 0, 9, 1, about=found.frozen())
    assert entry.about == found.summary() == {"topics": {"a": [], "b": [1, 3]}, "groups": ["g1", "g2"],
                                              "transactional_id": "tx"}
    assert JournalEntry(2, 0, 0, "c", None, None, "Fetch", 1, 9, 1, about=found.summary()).about == entry.about


def test_the_journal_form_of_every_request_reads_back_as_the_generic_summary() -> None:
    for api_key, make, versions in CASES:
        for version in versions:
            body = make(version)  # type: ignore[operator]
            about = facts_module.journal_about(api_key, body, TOPICS_BY_ID)
            entry = JournalEntry(1, 0, 0, "c", None, None, "X", api_key, version, 1, about=about)
            assert entry.about == facts_module.generic_facts(api_key, body, TOPICS_BY_ID).summary(), version
    m = api.request_module(0)  # a topic named twice, partitions out of order and repeated
    twice = m.ProduceRequest(acks=1, timeout_ms=1, topic_data=[
        m.TopicProduceData(name="t", partition_data=[m.PartitionProduceData(index=i) for i in (3, 1)]),
        m.TopicProduceData(name="t", partition_data=[m.PartitionProduceData(index=i) for i in (1, 0)])])
    entry = JournalEntry(1, 0, 0, "c", None, None, "Produce", 0, 9, 1, about=facts_module.journal_about(0, twice, {}))
    assert entry.about == {"topics": {"t": [0, 1, 3]}}


def test_journal_entries_name_error_codes_when_read() -> None:
    entry = JournalEntry(1, 0, 0, "c", None, None, "Produce", 0, 9, 1)
    Journal.finish(entry, 1.23456, "answered", [6, 87], 0)
    assert entry.errors == ["NOT_LEADER_OR_FOLLOWER", "INVALID_RECORD"] and entry.latency_ms == 1.235


def test_response_error_codes_match_the_generic_walk() -> None:
    r0, r1 = api.response_module(0), api.response_module(1)
    produce = r0.ProduceResponse(responses=[
        r0.TopicProduceResponse(name="a", partition_responses=[r0.PartitionProduceResponse(index=0, error_code=6),
                                                               r0.PartitionProduceResponse(index=1)]),
        r0.TopicProduceResponse(name="b", partition_responses=[r0.PartitionProduceResponse(index=0, error_code=87)]),
    ])
    fetch = r1.FetchResponse(error_code=0, responses=[r1.FetchableTopicResponse(topic="a", partitions=[
        r1.PartitionData(partition_index=0, error_code=1), r1.PartitionData(partition_index=1, error_code=74)])])
    fetch_error = r1.FetchResponse(error_code=70, responses=[])
    r18 = api.response_module(18)
    versions = r18.ApiVersionsResponse(
        error_code=35, api_keys=[r18.ApiVersion(api_key=0, min_version=0, max_version=9)],
        supported_features=[r18.SupportedFeatureKey(name="f", min_version=1, max_version=2)])
    r3 = api.response_module(3)
    partitions = [r3.MetadataResponsePartition(partition_index=i, error_code=code) for i, code in enumerate((0, 5, 0))]
    metadata = r3.MetadataResponse(error_code=0, brokers=[r3.MetadataResponseBroker(node_id=0, host="h", port=1)],
                                   topics=[r3.MetadataResponseTopic(name="a", error_code=0, partitions=partitions),
                                           r3.MetadataResponseTopic(name="b", error_code=3, partitions=[]),
                                           r3.MetadataResponseTopic(name="c", partitions=EncodedList(partitions))])
    failed = r3.MetadataResponse(error_code=29, topics=[])
    for api_key, body in ((0, produce), (1, fetch), (1, fetch_error), (1, r1.FetchResponse()), (18, versions),
                          (18, r18.ApiVersionsResponse()), (3, metadata), (3, metadata), (3, failed)):
        assert facts_module.response_error_codes(api_key, body) == facts_module.error_codes(body)
    assert facts_module.response_error_codes(0, produce) == [6, 87]
    assert facts_module.response_error_codes(3, metadata) == [5, 3, 5]
