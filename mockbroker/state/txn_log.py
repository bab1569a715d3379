"""The transaction coordinator's records in ``__transaction_state``: written on every state change, read
back into a fresh coordinator.

As Kafka's TransactionStateManager, each change of a transactional id (InitProducerId -> Empty with the new
epoch; partitions or a group added -> Ongoing; EndTxn, a timeout or a fenced open transaction ->
PrepareCommit / PrepareAbort, then CompleteCommit / CompleteAbort once the markers are written) is one
TransactionLog record in a batch of its own, in the partition ``partition_for(transactional id,
partitions of __transaction_state)``; an expired id gets a tombstone.  The key is int16 0 and the
transactional id; the value is int16 version (0 while ``transaction.version`` is 0, else 1 with tagged
fields) and TransactionLogValue.  A group added to a transaction appears, as in Kafka, as its
``__consumer_offsets`` partition.

Loading (:func:`load_transactions`, one of coordinator_load's loaders) keeps the last record of each id,
as Kafka's loadTransactionMetadata does: ids come back with their producer id, epoch, timeout, state,
partitions and timestamps; a PrepareCommit / PrepareAbort gets its markers written on the coordinator's
next tick (Kafka completes them right after loading); an Ongoing one is aborted by the coordinator once
its timeout has passed since it started; the producer id allocator moves past every loaded producer id.
"""

from __future__ import annotations

import logging
from itertools import groupby
from typing import TYPE_CHECKING, Any

from mockbroker.codec_errors import CodecError
from mockbroker.protocol import api
from mockbroker.state import coordinator_records
from mockbroker.state.internal_topics import CONSUMER_OFFSETS, TRANSACTION_STATE, partition_for
from mockbroker.state.transactions import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    EMPTY,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    Transaction,
)

if TYPE_CHECKING:
    from mockbroker.state.cluster import ClusterState

log = logging.getLogger("mockbroker.state")

KEY, VALUE = "TransactionLogKey", "TransactionLogValue"
_VALUE = api.module(VALUE)
# Kafka's TransactionState ids
STATE_IDS = {EMPTY: 0, ONGOING: 1, PREPARE_COMMIT: 2, PREPARE_ABORT: 3, COMPLETE_COMMIT: 4, COMPLETE_ABORT: 5,
             "Dead": 6, "PrepareEpochFence": 7}
STATES_BY_ID = {v: k for k, v in STATE_IDS.items()}
_PENDING = (PREPARE_COMMIT, PREPARE_ABORT)


def offsets_partition_count(state: Any) -> int:
    topic = state.topics.get(CONSUMER_OFFSETS)
    return len(topic.partitions) if topic is not None else int(state.config["offsets.topic.num.partitions"])


def key_bytes(transactional_id: str) -> bytes:
    return coordinator_records.encode(KEY, 0, api.module(KEY).TransactionLogKey(transactional_id=transactional_id))


def value_bytes(txn: Transaction, version: int, offsets_partitions: int) -> bytes:
    """TransactionLogValue ``version`` of ``txn``: its partitions (and its groups' ``__consumer_offsets``
    partitions) by topic, null when Empty, as Kafka's valueToBytes."""
    partitions = None
    if txn.state != EMPTY:
        tps = set(txn.partitions) | {(CONSUMER_OFFSETS, p) for p in txn.offsets_partitions}
        tps |= {(CONSUMER_OFFSETS, partition_for(g, offsets_partitions)) for g in txn.groups}
        partitions = [_VALUE.PartitionsSchema(topic=topic, partition_ids=[p for _, p in tps_of])
                      for topic, tps_of in groupby(sorted(tps), key=lambda tp: tp[0])]
    pending_or_done = txn.state in (PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT)
    value = _VALUE.TransactionLogValue(
        producer_id=txn.producer_id, previous_producer_id=txn.previous_producer_id, next_producer_id=-1,
        producer_epoch=txn.epoch, transaction_timeout_ms=txn.timeout_ms, transaction_status=STATE_IDS[txn.state],
        transaction_partitions=partitions, transaction_last_update_timestamp_ms=txn.last_update_ms,
        transaction_start_timestamp_ms=txn.start_ms,
        client_transaction_version=txn.client_version if pending_or_done else 0)
    return coordinator_records.encode(VALUE, version, value)


class TransactionLog:
    """What the coordinator (TransactionCoordinator.log) calls: records written, groups found for the
    ``__consumer_offsets`` partitions a loaded transaction names."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state

    def value_version(self) -> int:
        """Kafka's TransactionVersion.transactionLogValueVersion: 0 at transaction.version 0, else 1."""
        return 1 if self.state.features.finalized.get("transaction.version", 0) >= 1 else 0

    def write(self, transactional_id: str, txn: Transaction | None) -> None:
        """One record for ``transactional_id``'s new state (None: a tombstone, the id expired)."""
        value = None if txn is None else value_bytes(txn, self.value_version(), offsets_partition_count(self.state))
        coordinator_records.append(self.state, TRANSACTION_STATE, transactional_id,
                                   [(key_bytes(transactional_id), value)])

    def groups_in(self, producer_id: int, partitions: set[int]) -> set[str]:
        """The groups kept in these ``__consumer_offsets`` partitions that hold offsets of ``producer_id``'s
        transaction (what its markers there settle)."""
        if not partitions or "groups" not in self.state.__dict__:
            return set()
        count = offsets_partition_count(self.state)
        return {gid for gid, group in self.state.groups.groups.items()
                if producer_id in group.pending_txn and partition_for(gid, count) in partitions}


def _decoded(key: bytes, value: bytes | None) -> tuple[str, Any] | None:
    if coordinator_records.record_type(key) != 0:
        return None  # Kafka: an unknown key version is logged and skipped
    txn_id = coordinator_records.decode(KEY, key).transactional_id
    return txn_id, None if value is None else coordinator_records.decode(VALUE, value)


def _transaction(txn_id: str, v: Any) -> Transaction:
    state = STATES_BY_ID.get(v.transaction_status)
    if state is None:
        raise ValueError(f"transaction state id {v.transaction_status} is not one of Kafka's")
    txn = Transaction(txn_id, v.producer_id, v.producer_epoch, v.transaction_timeout_ms, state=state,
                      previous_producer_id=v.previous_producer_id,
                      last_update_ms=v.transaction_last_update_timestamp_ms,
                      start_ms=v.transaction_start_timestamp_ms if state in (ONGOING, *_PENDING) else -1,
                      client_version=v.client_transaction_version)
    if state != EMPTY:
        for schema in v.transaction_partitions or []:
            for p in schema.partition_ids:
                if schema.topic == CONSUMER_OFFSETS:
                    txn.offsets_partitions.add(p)
                else:
                    txn.partitions.add((schema.topic, p))
    return txn


def load_transactions(state: ClusterState) -> None:
    """Rebuild the transaction coordinator from ``__transaction_state`` (nothing when it has no records)."""
    latest: dict[str, Any] = {}
    for partition, offset, key, value in coordinator_records.read(state, TRANSACTION_STATE):
        try:
            decoded = _decoded(key, value)
        except (ValueError, CodecError) as exc:  # a bad record is logged and skipped, as Kafka's loader does
            log.warning("%s-%d offset %d: record skipped: %s", TRANSACTION_STATE, partition, offset, exc)
            continue
        if decoded is not None:
            latest[decoded[0]] = decoded[1]
    if not latest:
        return
    coordinator = state.transactions
    now = state.clock.now_ms()
    highest = -1
    for txn_id, value in sorted(latest.items()):
        old = coordinator.transactions.pop(txn_id, None)
        if old is not None:
            coordinator.by_producer_id.pop(old.producer_id, None)
        if value is None:
            continue
        txn = _transaction(txn_id, value)
        if txn.state in _PENDING:
            txn.markers_due_ms = now  # written on the next tick, as Kafka sends them once loaded
        coordinator.transactions[txn_id] = txn
        coordinator.by_producer_id[txn.producer_id] = txn
        highest = max(highest, txn.producer_id, txn.previous_producer_id)
    state.producers.next_id = max(state.producers.next_id, highest + 1)
    state.wake_ticker()
