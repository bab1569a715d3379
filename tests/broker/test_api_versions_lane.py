"""ApiVersions answered by the staging lane (borrow() in mockbroker/native/lanes/produce_lane_staging.h)
against the handler it stands in for: the same answer bytes, the same journal entries, the same client
software remembered on the connection, and everything it must leave to the handler left there."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.handlers import produce_lane
from mockbroker.protocol import api

from .wire import JOURNAL_FIELDS, exchange

pytestmark = pytest.mark.skipif(not produce_lane.available(),
                                reason="the C extension is not built (or MOCKBROKER_PURE_PYTHON is set)")

AV = api.request_module(18)


@pytest.fixture
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=1, topics={"t": 1}) as c:
        yield c
    produce_lane._lane.enable_staging(True)


def _frame(version: int, client_id: str | None, name: str = "lane-test", software: str = "1.0") -> bytes:
    body = AV.ApiVersionsRequest(client_software_name=name, client_software_version=software)
    return api.to_bytes(api.encode_request(18, version, 7, body, client_id))[4:]


def _metadata() -> bytes:
    return api.to_bytes(api.encode_request(3, 12, 8, api.request_module(3).MetadataRequest(topics=[])))[4:]


def _run(cluster: MockCluster, on: bool, frames: list[bytes]) -> tuple[list[bytes], list[tuple[Any, ...]], int]:
    """(answers, journal entries of the requests, ApiVersions the lane answered) with the lane on or off."""
    lane = produce_lane._lane
    lane.enable_staging(on)
    before, seq = lane.api_versions_taken(), cluster.journal.entries()[-1].seq if cluster.journal.entries() else 0
    answers = exchange(cluster.brokers[0].port, frames)
    entries = [tuple(getattr(e, f) for f in JOURNAL_FIELDS) for e in cluster.journal.entries(since_seq=seq)]
    return answers, entries, lane.api_versions_taken() - before


@pytest.mark.parametrize("client_id", [None, "", "cid-ü"])
def test_the_lane_answers_every_version_as_the_handler_does(cluster: MockCluster, client_id: str | None) -> None:
    frames = [f for v in range(5) for f in (_frame(v, client_id), _metadata())]
    lane_answers, lane_entries, taken = _run(cluster, True, frames)
    handler_answers, handler_entries, none = _run(cluster, False, frames)
    assert (taken, none) == (5, 0)
    assert lane_answers == handler_answers
    assert lane_entries == handler_entries
    # each Metadata after a v3+ ApiVersions names the software the ApiVersions set on the connection
    assert [e[2] for e in lane_entries[1::2]] == [None, None, None, "lane-test/1.0", "lane-test/1.0"]


def test_what_the_lane_leaves_to_the_handler(cluster: MockCluster) -> None:
    """Names Kafka refuses, header tagged fields, bytes after the body and newer versions are the
    handler's (the same answers as with the lane off); the connection is served on."""
    good = _frame(3, "c")
    tagged = good[:11] + b"\x01\x00\x01\x00" + good[12:]  # the header's tagged fields: one, tag 0, 1 byte
    cases = [_frame(3, "c", name="bad name"), _frame(4, "c", software="1+x"), tagged, good + b"\x00",
             struct.pack(">hhih", 18, 9, 7, 1) + b"c"]
    for frame in cases:
        lane_answers, lane_entries, taken = _run(cluster, True, [frame, _metadata()])
        handler_answers, handler_entries, _none = _run(cluster, False, [frame, _metadata()])
        assert taken == 0, frame
        assert lane_answers == handler_answers and lane_entries == handler_entries, frame
    refused = api.decode_response(18, 3, _run(cluster, True, [cases[0]])[0][0])[1]
    assert refused.error_code == 42 and refused.api_keys == []  # INVALID_REQUEST


def test_the_lane_answers_with_the_cluster_features_of_the_moment(cluster: MockCluster) -> None:
    uf = api.request_module(57)
    update = uf.UpdateFeaturesRequest(timeout_ms=1000, feature_updates=[uf.FeatureUpdateKey(
        feature="transaction.version", max_version_level=1, upgrade_type=2, allow_downgrade=True)])
    before = api.decode_response(18, 4, _run(cluster, True, [_frame(4, "c")])[0][0])[1]
    assert exchange(cluster.brokers[0].port, [api.to_bytes(api.encode_request(57, 1, 3, update))[4:]])
    after = api.decode_response(18, 4, _run(cluster, True, [_frame(4, "c")])[0][0])[1]
    assert after.finalized_features_epoch == before.finalized_features_epoch + 1
    levels = {f.name: f.max_version_level for f in after.finalized_features}
    assert levels["transaction.version"] == 1
