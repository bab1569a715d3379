"""Cluster features over a raw socket with the codec: UpdateFeatures (v0-2) and what ApiVersions
(v3-4) advertises: supported ranges, finalized levels and the finalized-features epoch."""

from __future__ import annotations

from typing import Any

import pytest

from mockbroker.cluster import MockCluster
from mockbroker.errors import ErrorCode
from mockbroker.protocol import api

from .wire import WireClient

UF, AV = api.request_module(57), api.request_module(18)
UPGRADE, SAFE, UNSAFE = 1, 2, 3


def versions(c: WireClient, version: int = 4) -> Any:
    return c.call(18, version, AV.ApiVersionsRequest(client_software_name="wire", client_software_version="1"))


def finalized(c: WireClient) -> tuple[dict[str, int], int]:
    resp = versions(c)
    levels = {f.name: f.max_version_level for f in resp.finalized_features}
    assert all(f.min_version_level == f.max_version_level for f in resp.finalized_features)
    return levels, resp.finalized_features_epoch


def update(c: WireClient, version: int, updates: list[tuple[str, int, int]], validate_only: bool = False) -> Any:
    return c.call(57, version, UF.UpdateFeaturesRequest(timeout_ms=1000, validate_only=validate_only, feature_updates=[
        UF.FeatureUpdateKey(feature=name, max_version_level=level, upgrade_type=kind,
                            allow_downgrade=kind != UPGRADE)
        for name, level, kind in updates]))


def test_api_versions_advertises_kafka_4_features(single: MockCluster) -> None:
    with WireClient(single.brokers[0].port) as c:
        v4 = versions(c, 4)
        assert {f.name: (f.min_version, f.max_version) for f in v4.supported_features} == {
            "metadata.version": (7, 25), "kraft.version": (0, 1), "transaction.version": (0, 2),
            "group.version": (0, 1), "share.version": (0, 1)}
        # below v4 features whose minimum is 0 are left out (KAFKA-17492)
        assert [f.name for f in versions(c, 3).supported_features] == ["metadata.version"]
        assert finalized(c) == ({"metadata.version": 25, "kraft.version": 1, "transaction.version": 2,
                                 "group.version": 1, "share.version": 1}, 1)
        v2 = versions(c, 2)
        assert v2.supported_features == [] and v2.finalized_features_epoch == -1  # not on the wire before v3


@pytest.mark.parametrize("version", [0, 1, 2])
def test_update_features_downgrades_and_upgrades_moving_the_epoch(single: MockCluster, version: int) -> None:
    with WireClient(single.brokers[0].port) as c:
        resp = update(c, version, [("transaction.version", 1, SAFE), ("metadata.version", 24, SAFE)])
        assert (resp.error_code, resp.error_message) == (0, None)
        if version < 2:
            assert sorted((r.feature, r.error_code) for r in resp.results) == [
                ("metadata.version", 0), ("transaction.version", 0)]
        levels, epoch = finalized(c)
        assert (levels["transaction.version"], levels["metadata.version"], epoch) == (1, 24, 2)
        resp = update(c, version, [("transaction.version", 0, SAFE)])  # 0 removes it from the finalized list
        assert resp.error_code == 0 and "transaction.version" not in finalized(c)[0]
        assert update(c, version, [("transaction.version", 2, UPGRADE)]).error_code == 0
        assert finalized(c) == ({"metadata.version": 24, "kraft.version": 1, "transaction.version": 2,
                                 "group.version": 1, "share.version": 1}, 4)


@pytest.mark.parametrize(("updates", "message"), [
    ([("metadata.version", 26, UPGRADE)], "only supports versions [7-25]"),
    ([("metadata.version", 6, SAFE)], "only supports versions [7-25]"),
    ([("metadata.version", 22, SAFE)], "might delete metadata information"),
    ([("metadata.version", 22, UNSAFE)], "Unsafe metadata downgrade is not supported"),
    ([("metadata.version", 24, UPGRADE)], "without setting the upgrade type"),
    ([("group.version", 1, SAFE), ("transaction.version", 3, UPGRADE)], "only supports versions [0-2]"),
    ([("kraft.version", 0, SAFE)], "Can't downgrade the version of this feature."),
    ([("no.such.feature", 1, UPGRADE)], "does not support this feature"),
    ([("group.version", 1, 0)], "does not support the given upgrade type"),
    ([("group.version", -1, SAFE)], "cannot be less than 0"),
    ([("group.version", 1, UPGRADE)], "depends on metadata.version level 22"),
    ([("metadata.version", 22, UPGRADE), ("group.version", 1, UPGRADE)], None),  # checked against the new level
])
def test_update_features_refuses_as_kafka(single: MockCluster, updates: list, message: str | None) -> None:
    with WireClient(single.brokers[0].port) as c:
        if ("group.version", 1, UPGRADE) in updates:
            # a cluster formatted at 3.9-IV0 (metadata.version 21) without group.version, set directly:
            # no request can take metadata.version that low from 25
            single.call(single.state.features.finalized.update, {"metadata.version": 21, "group.version": 0})
        before = finalized(c)
        resp = update(c, 1, updates)
        if message is None:
            assert resp.error_code == 0 and finalized(c)[0]["group.version"] == 1
            return
        assert resp.error_code == ErrorCode.INVALID_UPDATE_VERSION and message in resp.error_message
        assert resp.results == []
        assert finalized(c) == before  # all or nothing


def test_update_features_validate_only_and_v2_shape(single: MockCluster) -> None:
    with WireClient(single.brokers[0].port) as c:
        before = finalized(c)
        resp = update(c, 1, [("metadata.version", 23, SAFE)], validate_only=True)
        assert resp.error_code == 0 and [r.feature for r in resp.results] == ["metadata.version"]
        assert finalized(c) == before
        resp = update(c, 2, [("metadata.version", 23, SAFE)])
        assert resp.error_code == 0 and resp.results == []  # v2 has no per-feature results
        assert finalized(c)[0]["metadata.version"] == 23
        # v0: allow_downgrade false is an UPGRADE, so a lower level is refused
        resp = c.call(57, 0, UF.UpdateFeaturesRequest(timeout_ms=1000, feature_updates=[
            UF.FeatureUpdateKey(feature="group.version", max_version_level=0, allow_downgrade=False)]))
        assert resp.error_code == ErrorCode.INVALID_UPDATE_VERSION


def test_every_api_versions_answer_lists_the_registry(single: MockCluster) -> None:
    """The API list is built once and keeps its encoding per version: repeated and mixed-version asks
    all read back the registry's ranges (less the telemetry APIs: this cluster has no telemetry receiver)."""
    from mockbroker.handlers.registry import api_versions_list

    expected = [tuple(t) for t in api_versions_list(telemetry=False)]
    with WireClient(single.brokers[0].port) as c:
        for version in (0, 3, 4, 0, 1, 3, 2, 4):
            got = [(k.api_key, k.min_version, k.max_version) for k in versions(c, version).api_keys]
            assert got == expected, version


def test_kept_api_versions_encodings_are_the_codecs_bytes() -> None:
    """ApiVersions answers are written from kept encodings (k18_api_versions._encode): the same bytes the
    generated writer writes, for every version, and a different answer (throttled, other levels, an
    error) never gets another's bytes."""
    from mockbroker.handlers import k18_api_versions as k18
    from mockbroker.handlers.registry import api_version_keys

    r18 = api.response_module(18)

    def answer(**fields: Any) -> Any:
        fields.setdefault("finalized_features_epoch", 1)
        return r18.ApiVersionsResponse(api_keys=api_version_keys(), supported_features=k18._SUPPORTED[True],
                                       finalized_features=k18._finalized({"metadata.version": 25}), **fields)

    answers = [answer(), answer(throttle_time_ms=7), answer(error_code=35), answer(finalized_features_epoch=2),
               r18.ApiVersionsResponse(api_keys=api_version_keys())]
    for version in range(5):
        seen = set()
        for body in answers * 2:  # the second time from what the first kept
            kept, written = bytearray(), bytearray()
            assert k18._encode(body, version, kept) is True
            api.encode_message(r18, version, body, written, [])
            assert kept == written, version
            seen.add(bytes(kept))
        assert len(seen) == (5 if version >= 3 else 3 if version >= 1 else 2), version


@pytest.mark.parametrize(("name", "version"), [("bad name", "1.0"), ("ok", "1.0+build"), ("", "1"), ("ok", "-1"),
                                               ("ok.", "1")])
def test_api_versions_refuses_client_software_kafka_would_refuse(single: MockCluster, name: str,
                                                                 version: str) -> None:
    """Kafka's ApiVersionsRequest.isValid (v3+): name and version letters, digits, '-' and '.', starting
    and ending with a letter or digit; else INVALID_REQUEST, no API list, and the connection serves on."""
    with WireClient(single.brokers[0].port) as c:
        bad = c.call(18, 3, AV.ApiVersionsRequest(client_software_name=name, client_software_version=version))
        assert (bad.error_code, bad.api_keys) == (ErrorCode.INVALID_REQUEST, [])
        assert versions(c, 2).error_code == 0  # below v3 there is nothing to check
        good = c.call(18, 4, AV.ApiVersionsRequest(client_software_name="a-b.c", client_software_version="2.0.1-x"))
        assert good.error_code == 0 and good.api_keys
    entries = single.journal.entries(api="ApiVersions")
    assert entries[-3].errors == ["INVALID_REQUEST"] and entries[-1].errors == []
