"""Latency presets: a named set of ``delay`` fault rules that gives every API the time a real Kafka cluster
takes to answer it, for tests written against Kafka that assume its latencies (a transaction commit that
takes more than a millisecond).  ``MockCluster(latency="realistic")``, the pytest marker's ``latency=``,
``mockbroker serve --latency realistic``, a scenario's ``cluster: {latency: realistic}`` and the shipped
scenario ``realistic-latency`` all use this table.

``realistic`` is a three-broker Kafka 4.x cluster in one data centre (one rack or availability zone,
replication factor 3, clients beside it), answering from page cache, at p50.  Each API costs what the
broker does before it answers:

- **1 ms** (every API not named below): the request is answered from the broker's memory: one network
  round trip inside a data centre (0.1-0.5 ms) plus Kafka's request queue and network threads.  Fetch is
  here too: with records ready it answers at once; the wait for records is ``fetch.max.wait.ms``, which
  the broker already models.
- **3 ms**: a write replicated to the in-sync replicas before the answer: Produce with ``acks=all`` (the
  producer's default since Kafka 3.0), offset commits and SyncGroup's assignment (written to
  ``__consumer_offsets``; the group coordinator answers once the high watermark passes them), the
  transaction coordinator's writes to ``__transaction_state`` (always ``acks=-1``:
  ``TransactionLog.EnforcedRequiredAcks``): InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and
  EndTxn (answered once PREPARE_COMMIT/PREPARE_ABORT is replicated; the markers are written after the
  answer), DeleteRecords (waits for the followers' log start), and share-group state writes.  The
  leader's append, the followers' fetch round trip and their next fetch that moves the high watermark.
- **10 ms**: a metadata change: the request is forwarded to the KRaft controller, which appends it to
  the metadata log and answers once a majority of the controller quorum has it on disk: CreateTopics,
  DeleteTopics, CreatePartitions, config and ACL changes, quotas, SCRAM credentials, reassignments,
  leader elections, features, delegation tokens.

Not changed: ``group.initial.rebalance.delay.ms`` (Kafka's default is 3000 ms, the mock's 0, as in the
``server.properties`` Kafka ships "for development and testing"): set it in ``config`` for that wait.

The rules are ordinary fault rules, one per figure, named ``latency-1ms``, ``latency-3ms`` and
``latency-10ms`` (listed with the others; ``reset`` keeps them, clearing the fault rules removes them); a
request that other ``delay`` rules match waits for their delays as well (delays add up).
"""

from __future__ import annotations

from typing import Any

from mockbroker.nearest import hint

ANSWERED_FROM_MEMORY_MS = 1
REPLICATED_WRITE_MS = 3
METADATA_CHANGE_MS = 10

REPLICATED_WRITES = ("Produce", "OffsetCommit", "TxnOffsetCommit", "SyncGroup", "DeleteRecords", "InitProducerId",
                     "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "DeleteGroups", "OffsetDelete",
                     "ShareAcknowledge", "AlterShareGroupOffsets", "DeleteShareGroupOffsets",
                     "InitializeShareGroupState", "WriteShareGroupState", "DeleteShareGroupState")
METADATA_CHANGES = ("CreateTopics", "DeleteTopics", "CreatePartitions", "AlterConfigs", "IncrementalAlterConfigs",
                    "CreateAcls", "DeleteAcls", "AlterPartitionReassignments", "ElectLeaders", "AlterClientQuotas",
                    "AlterUserScramCredentials", "UpdateFeatures", "CreateDelegationToken", "RenewDelegationToken",
                    "ExpireDelegationToken", "UnregisterBroker", "AddRaftVoter", "RemoveRaftVoter")

PRESETS = ("realistic",)
RULE_NAME = "latency"


def unknown(name: Any) -> str:
    """``unknown latency preset 'x' (did you mean 'realistic'?)``, or the presets when none is close."""
    return f"unknown latency preset {name!r}" + (hint(str(name), PRESETS) or f" (presets: {', '.join(PRESETS)})")


def check(name: str) -> str:
    """``name`` when it is a preset, else ValueError ``latency: unknown latency preset ...`` (MockCluster's
    argument checks start with the argument's name)."""
    if name not in PRESETS:
        raise ValueError(f"latency: {unknown(name)}")
    return name


def latency_ms(name: str) -> dict[str, int]:
    """Every API's added latency under preset ``name``, by Kafka's API name."""
    from mockbroker.faults.rules import api_names

    check(name)
    tiers = {**dict.fromkeys(REPLICATED_WRITES, REPLICATED_WRITE_MS), **dict.fromkeys(METADATA_CHANGES,
                                                                                      METADATA_CHANGE_MS)}
    return {api: tiers.get(api, ANSWERED_FROM_MEMORY_MS) for api in api_names()}


def rules(name: str) -> list[dict[str, Any]]:
    """Preset ``name`` as fault rule specs: one ``delay`` rule per latency, for every request, until removed."""
    by_ms: dict[int, list[str]] = {}
    for api, ms in latency_ms(name).items():
        by_ms.setdefault(ms, []).append(api)
    return [{"name": f"{RULE_NAME}-{ms}ms", "action": "delay", "apis": sorted(apis), "delay_ms": ms, "times": None}
            for ms, apis in sorted(by_ms.items())]
