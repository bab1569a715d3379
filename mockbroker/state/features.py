"""Cluster feature levels (KIP-584): what ApiVersions v3+ advertises and UpdateFeatures changes.

Modelled on Kafka 4.0's controller (FeatureControlManager):
- Supported ranges: metadata.version 7-25 (3.3-IV3 .. 4.0-IV3), kraft.version 0-1,
  transaction.version 0-2, group.version 0-1, share.version 0-1.  A fresh cluster finalizes
  metadata.version 25, kraft.version 1, transaction.version 2, group.version 1 and share.version 1
  (share groups on, as a Kafka 4.2 cluster; 0 turns them off).
- Upgrade types 1 UPGRADE, 2 SAFE_DOWNGRADE, 3 UNSAFE_DOWNGRADE (v0's allow_downgrade = SAFE_DOWNGRADE);
  anything else, a negative level, a level outside the supported range, an unknown feature, a
  downgrade typed UPGRADE or an upgrade typed as a downgrade -> INVALID_UPDATE_VERSION with Kafka's
  message.  metadata.version: a downgrade across a version that changed the metadata format is refused
  ("might delete metadata information"; UNSAFE_DOWNGRADE: "not supported in this version").
  kraft.version cannot be downgraded.  group.version 1 needs metadata.version 22 (4.0-IV0) and
  kraft.version 1 needs metadata.version 21 (3.9-IV0), checked against the levels the request would
  leave.  Level 0 removes a feature from the finalized list.
- The first failing update fails the whole request and nothing changes; validate_only checks only.
  Each applied request moves the finalized-features epoch by one.
"""

from __future__ import annotations

import logging

from mockbroker.errors import ErrorCode, KafkaError

log = logging.getLogger("mockbroker.state")

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3

SUPPORTED: dict[str, tuple[int, int]] = {
    METADATA_VERSION: (7, 25),
    KRAFT_VERSION: (0, 1),
    "transaction.version": (0, 2),
    "group.version": (0, 1),
    "share.version": (0, 1),
}
# share.version: Kafka 4.1+ turns share groups (KIP-932) on at level 1; finalized here so a test meets
# them on as on a 4.2 cluster, and 0 (UpdateFeatures) turns them off
DEFAULT_FINALIZED: dict[str, int] = {METADATA_VERSION: 25, KRAFT_VERSION: 1, "transaction.version": 2,
                                     "group.version": 1, "share.version": 1}
# feature -> level -> {other feature: minimum level}
DEPENDENCIES: dict[str, dict[int, dict[str, int]]] = {
    "group.version": {1: {METADATA_VERSION: 22}},
    KRAFT_VERSION: {1: {METADATA_VERSION: 21}},
}
# metadata.version level -> (name, did the metadata format change at this level)
METADATA_VERSIONS: dict[int, tuple[str, bool]] = {
    7: ("3.3-IV3", True), 8: ("3.4-IV0", True), 9: ("3.5-IV0", False), 10: ("3.5-IV1", False),
    11: ("3.5-IV2", True), 12: ("3.6-IV0", False), 13: ("3.6-IV1", True), 14: ("3.6-IV2", True),
    15: ("3.7-IV0", True), 16: ("3.7-IV1", False), 17: ("3.7-IV2", True), 18: ("3.7-IV3", False),
    19: ("3.7-IV4", False), 20: ("3.8-IV0", False), 21: ("3.9-IV0", False), 22: ("4.0-IV0", False),
    23: ("4.0-IV1", True), 24: ("4.0-IV2", False), 25: ("4.0-IV3", False),
}


def _invalid(feature: str, level: int, message: str) -> KafkaError:
    text = f"Invalid update version {level} for feature {feature}. {message}"
    log.warning("UpdateFeatures: %s", text)
    return KafkaError(ErrorCode.INVALID_UPDATE_VERSION, text)


def _metadata_changed(high: int, low: int) -> bool:
    """Kafka's MetadataVersion.checkIfMetadataChanged: a level in (low, high] changed the format."""
    return any(METADATA_VERSIONS[v][1] for v in range(low + 1, high + 1))


class FeatureLevels:
    """The finalized feature levels and their epoch."""

    def __init__(self) -> None:
        self.finalized: dict[str, int] = dict(DEFAULT_FINALIZED)
        self.epoch = 1

    def finalized_nonzero(self) -> dict[str, int]:
        """What ApiVersions lists as finalized: features at a level above 0."""
        return {k: v for k, v in self.finalized.items() if v != 0}

    def update(self, updates: list[tuple[str, int, int]], validate_only: bool = False) -> None:
        """Apply ``(feature, level, upgrade type)`` updates all or nothing; KafkaError on the first bad one."""
        proposed = dict(self.finalized)
        proposed.update({name: level for name, level, _kind in updates})
        for name, level, kind in updates:
            self._check(name, level, kind, proposed)
        if validate_only or not updates:
            return
        for name, level, _kind in updates:
            log.info("UpdateFeatures: %s %s -> %s", name, self.finalized.get(name, 0), level)
            self.finalized[name] = level
        self.epoch += 1

    def _check(self, name: str, level: int, kind: int, proposed: dict[str, int]) -> None:
        if kind not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            raise _invalid(name, level, "The controller does not support the given upgrade type.")
        current = self.finalized.get(name, 0)
        if level < 0:
            raise _invalid(name, level, "A feature version cannot be less than 0.")
        low, high = SUPPORTED.get(name, (0, 0))
        if not low <= level <= high:
            reason = ("does not support this feature." if high == 0 else f"only supports versions [{low}-{high}]")
            raise _invalid(name, level, f"Local controller 0 {reason}")
        if level < current and kind == UPGRADE:
            raise _invalid(name, level, "Can't downgrade the version of this feature without setting the "
                                        "upgrade type to either safe or unsafe downgrade.")
        if level > current and kind != UPGRADE:
            raise _invalid(name, level, "Can't downgrade to a newer version.")
        if name == METADATA_VERSION:
            if level < current and _metadata_changed(current, level):
                if kind == UNSAFE_DOWNGRADE:
                    raise _invalid(name, level, "Unsafe metadata downgrade is not supported in this version.")
                raise _invalid(name, level, "Refusing to perform the requested downgrade because it might "
                                            "delete metadata information.")
            return
        if name == KRAFT_VERSION and level < current:
            raise _invalid(name, level, "Can't downgrade the version of this feature.")
        for other, minimum in DEPENDENCIES.get(name, {}).get(level, {}).items():
            if proposed.get(other, 0) < minimum:
                raise _invalid(name, level, f"{name} could not be set to {level} because it depends on "
                                            f"{other} level {minimum}")
