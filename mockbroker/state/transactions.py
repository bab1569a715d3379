"""The transaction coordinator: transactional ids, their producer id/epoch and transaction state.

States and moves follow Kafka's coordinator (Empty, Ongoing, PrepareCommit/PrepareAbort,
CompleteCommit/CompleteAbort).  Ending a transaction writes a COMMIT/ABORT marker to every
partition in it and settles the offsets it committed to groups; the writing is done by the
``markers`` callback the cluster gives (state here never touches logs directly).  Markers are
written at once unless ``mock.transaction.marker.delay.ms`` holds the transaction in its Prepare
state that long (so clients meet CONCURRENT_TRANSACTIONS as they do against a busy Kafka).

Time acts only through :meth:`TransactionCoordinator.tick`: open transactions older than their
timeout are aborted with an epoch bump (fencing the producer, as Kafka does), delayed markers are
written, and ids idle for ``transactional.id.expiration.ms`` are forgotten.

Every state change Kafka writes to ``__transaction_state`` goes to ``log`` (the cluster gives a
:class:`~mockbroker.state.txn_log.TransactionLog`: TransactionLog records), in Kafka's order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mockbroker.errors import ErrorCode, KafkaError

EMPTY, ONGOING = "Empty", "Ongoing"
PREPARE_COMMIT, PREPARE_ABORT = "PrepareCommit", "PrepareAbort"
COMPLETE_COMMIT, COMPLETE_ABORT = "CompleteCommit", "CompleteAbort"
STATES = (EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT, "Dead",
          "PrepareEpochFence")
MAX_EPOCH = 32767 - 1  # an id whose epoch would pass this gets a fresh producer id (Short.MaxValue - 1)
COORDINATOR_EPOCH = 0

MarkerWriter = Callable[[int, int, bool, Iterable[tuple[str, int]], Iterable[str]], None]


@dataclass
class Transaction:
    transactional_id: str
    producer_id: int
    epoch: int
    timeout_ms: int
    state: str = EMPTY
    last_epoch: int = -1  # the epoch before the last bump (a retried bump is answered, not repeated)
    previous_producer_id: int = -1
    partitions: set[tuple[str, int]] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = 0
    markers_due_ms: int = -1  # when a Prepare state's markers get written (-1: not pending)
    client_version: int = 0  # the transaction version of the client's last EndTxn (2: v5, epoch bumped)
    # __consumer_offsets partitions of a transaction loaded from __transaction_state (its groups unknown)
    offsets_partitions: set[int] = field(default_factory=set)


class TransactionCoordinator:
    def __init__(self, clock: Any, new_producer_id: Callable[[], int], config: Any, markers: MarkerWriter) -> None:
        self.clock = clock
        self.new_producer_id = new_producer_id
        self.config = config
        self.markers = markers
        self.transactions: dict[str, Transaction] = {}
        self.by_producer_id: dict[int, Transaction] = {}
        self.log: Any = None  # where state changes are written (txn_log.TransactionLog), None: nowhere

    def _record(self, txn: Transaction) -> None:
        if self.log is not None:
            self.log.write(txn.transactional_id, txn)

    # -- InitProducerId ---------------------------------------------------------------------------
    def init_producer(self, transactional_id: str, timeout_ms: int, producer_id: int = -1,
                      epoch: int = -1) -> tuple[int, int]:
        """(producer id, epoch) for a transactional id: a new id, or the same id with the next epoch.
        ``producer_id``/``epoch`` (KIP-360) name what the client holds; an open transaction is
        aborted first (CONCURRENT_TRANSACTIONS: the client retries and the epoch is bumped again)."""
        max_timeout = self.config["transaction.max.timeout.ms"]
        if timeout_ms <= 0 or timeout_ms > max_timeout:
            raise KafkaError(ErrorCode.INVALID_TRANSACTION_TIMEOUT,
                             f"transaction timeout {timeout_ms} ms is not in 1..{max_timeout} "
                             "(transaction.max.timeout.ms)")
        now = self.clock.now_ms()
        txn = self.transactions.get(transactional_id)
        if txn is None:
            txn = Transaction(transactional_id, self.new_producer_id(), 0, timeout_ms, last_update_ms=now)
            self.transactions[transactional_id] = txn
            self.by_producer_id[txn.producer_id] = txn
            self._record(txn)
            return txn.producer_id, txn.epoch
        if producer_id >= 0 and producer_id != txn.producer_id and not (
                producer_id == txn.previous_producer_id and epoch >= MAX_EPOCH):
            raise KafkaError(ErrorCode.PRODUCER_FENCED,
                             f"producer {producer_id} is not the current producer {txn.producer_id} of "
                             f"'{transactional_id}'")
        if txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS,
                             f"'{transactional_id}' is completing its previous transaction")
        if txn.state == ONGOING:
            self._bump(txn, remember=False)  # fence whoever holds the old epoch, then abort
            self._end(txn, commit=False)
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS,
                             f"'{transactional_id}' had an open transaction: it is being aborted, retry")
        if producer_id >= 0 and epoch != txn.epoch:
            if epoch == txn.last_epoch:  # a retry of a bump whose answer was lost: answer it again
                return txn.producer_id, txn.epoch
            raise KafkaError(ErrorCode.PRODUCER_FENCED,
                             f"epoch {epoch} of producer {producer_id} is not the current epoch {txn.epoch} "
                             f"of '{transactional_id}'")
        self._bump(txn, remember=producer_id >= 0)
        txn.timeout_ms = timeout_ms
        txn.state = EMPTY
        txn.last_update_ms = now
        self._record(txn)
        return txn.producer_id, txn.epoch

    def _bump(self, txn: Transaction, remember: bool = True) -> None:
        """Next epoch (a fresh producer id once exhausted); ``remember`` keeps the old epoch so a
        retried request naming it is answered, not fenced (Kafka forgets it for new instances)."""
        txn.last_epoch = txn.epoch if remember else -1
        if txn.epoch >= MAX_EPOCH:
            txn.previous_producer_id = txn.producer_id
            self.by_producer_id.pop(txn.producer_id, None)
            txn.producer_id = self.new_producer_id()
            self.by_producer_id[txn.producer_id] = txn
            txn.epoch = 0
        else:
            txn.epoch += 1

    # -- checks shared by the transactional requests --------------------------------------------
    def _current(self, transactional_id: str, producer_id: int, epoch: int) -> Transaction:
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                             f"producer {producer_id} is not the producer of transactional id '{transactional_id}'")
        if epoch != txn.epoch:
            raise KafkaError(ErrorCode.PRODUCER_FENCED,
                             f"epoch {epoch} of producer {producer_id} is not the current epoch {txn.epoch}")
        return txn

    def _open(self, txn: Transaction) -> None:
        if txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS,
                             f"'{txn.transactional_id}' is completing its previous transaction")
        now = self.clock.now_ms()
        if txn.state != ONGOING:
            txn.state = ONGOING
            txn.start_ms = now
        txn.last_update_ms = now

    # -- AddPartitionsToTxn / AddOffsetsToTxn / implicit adds (Produce v12+) ---------------------
    def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                       partitions: Iterable[tuple[str, int]]) -> None:
        txn = self._current(transactional_id, producer_id, epoch)
        wanted = set(partitions)
        if txn.state == ONGOING and wanted <= txn.partitions:
            return  # Kafka writes nothing when the transaction holds them already
        self._open(txn)
        txn.partitions.update(wanted)
        self._record(txn)

    def verify_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                          partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Verify-only AddPartitionsToTxn (v4+): 0 for partitions in the open transaction."""
        txn = self._current(transactional_id, producer_id, epoch)
        inside = txn.partitions if txn.state == ONGOING else set()
        return {tp: 0 if tp in inside else ErrorCode.INVALID_TXN_STATE for tp in partitions}

    def add_offsets(self, transactional_id: str, producer_id: int, epoch: int, group_id: str) -> None:
        txn = self._current(transactional_id, producer_id, epoch)
        if txn.state == ONGOING and (group_id in txn.groups or self._offsets_partition(group_id) in
                                     txn.offsets_partitions):
            return  # its __consumer_offsets partition is in the transaction already: nothing written
        self._open(txn)
        txn.groups.add(group_id)
        self._record(txn)

    def _offsets_partition(self, group_id: str) -> int:
        from mockbroker.state.internal_topics import partition_for

        return partition_for(group_id, int(self.config["offsets.topic.num.partitions"]))

    def check_produce(self, producer_id: int, epoch: int, topic: str, partition: int, implicit_add: bool) -> None:
        """A transactional batch may only go to a partition of the producer's open transaction
        (Kafka's KIP-890 verification); Produce v12+ adds the partition itself."""
        txn = self.by_producer_id.get(producer_id)
        if txn is None:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                             f"transactional batch from producer {producer_id}, which no transactional id holds")
        if epoch < txn.epoch:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"epoch {epoch} of producer {producer_id} is older than {txn.epoch}: fenced")
        if txn.state == ONGOING and (topic, partition) in txn.partitions:
            return
        if implicit_add and epoch == txn.epoch and txn.state not in (PREPARE_COMMIT, PREPARE_ABORT):
            self._open(txn)
            txn.partitions.add((topic, partition))
            self._record(txn)
            return
        raise KafkaError(ErrorCode.INVALID_TXN_STATE,
                         f"{topic}-{partition} is not part of an open transaction of producer {producer_id}")

    def check_offsets(self, transactional_id: str, producer_id: int, epoch: int, group_id: str) -> None:
        """TxnOffsetCommit: the producer is current and its open transaction holds the group."""
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                             f"producer {producer_id} is not the producer of transactional id '{transactional_id}'")
        if epoch < txn.epoch:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"epoch {epoch} of producer {producer_id} is older than {txn.epoch}: fenced")
        if txn.state != ONGOING or (group_id not in txn.groups and
                                    self._offsets_partition(group_id) not in txn.offsets_partitions):
            raise KafkaError(ErrorCode.INVALID_TXN_STATE,
                             f"group '{group_id}' was not added to an open transaction of '{transactional_id}' "
                             "(AddOffsetsToTxn first)")

    # -- EndTxn ------------------------------------------------------------------------------------
    def end(self, transactional_id: str, producer_id: int, epoch: int, commit: bool,
            bump_epoch: bool = False) -> tuple[int, int]:
        """Commit or abort; ``bump_epoch`` is EndTxn v5 (KIP-890): the epoch moves on with every end
        and the answer carries the new one.  A retried end of a completed transaction succeeds."""
        txn = self.transactions.get(transactional_id)
        if txn is None or producer_id not in (txn.producer_id, txn.previous_producer_id):
            raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                             f"producer {producer_id} is not the producer of transactional id '{transactional_id}'")
        done, pending = (COMPLETE_COMMIT, PREPARE_COMMIT) if commit else (COMPLETE_ABORT, PREPARE_ABORT)
        retry_of_bumped_end = bump_epoch and epoch == txn.last_epoch and txn.state in (done, pending)
        if epoch != txn.epoch and not retry_of_bumped_end:
            raise KafkaError(ErrorCode.PRODUCER_FENCED,
                             f"epoch {epoch} of producer {producer_id} is not the current epoch {txn.epoch}")
        if producer_id != txn.producer_id and not retry_of_bumped_end:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                             f"producer {producer_id} is not the producer of transactional id '{transactional_id}'")
        what = "commit" if commit else "abort"
        if txn.state == done:
            return txn.producer_id, txn.epoch
        if txn.state == pending:
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS, f"'{transactional_id}' is still completing its {what}")
        if txn.state in (PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT):
            raise KafkaError(ErrorCode.INVALID_TXN_STATE,
                             f"cannot {what} '{transactional_id}': its last transaction is in state {txn.state}")
        if txn.state == EMPTY and not (bump_epoch and not commit):
            raise KafkaError(ErrorCode.INVALID_TXN_STATE,
                             f"cannot {what} '{transactional_id}': no transaction is open")
        if bump_epoch:
            self._bump(txn)
        txn.client_version = 2 if bump_epoch else 0
        self._end(txn, commit)
        return txn.producer_id, txn.epoch

    def _end(self, txn: Transaction, commit: bool) -> None:
        now = self.clock.now_ms()
        txn.state = PREPARE_COMMIT if commit else PREPARE_ABORT
        txn.last_update_ms = now
        delay = self.config.get("mock.transaction.marker.delay.ms", 0)
        txn.markers_due_ms = now + delay
        self._record(txn)
        if delay <= 0:
            self._write_markers(txn)

    def _write_markers(self, txn: Transaction) -> None:
        commit = txn.state == PREPARE_COMMIT
        groups = set(txn.groups)
        if txn.offsets_partitions and self.log is not None:
            groups |= self.log.groups_in(txn.producer_id, txn.offsets_partitions)
        self.markers(txn.producer_id, txn.epoch, commit, sorted(txn.partitions), sorted(groups))
        txn.state = COMPLETE_COMMIT if commit else COMPLETE_ABORT
        txn.partitions.clear()
        txn.groups.clear()
        txn.offsets_partitions.clear()
        txn.markers_due_ms = -1
        txn.last_update_ms = self.clock.now_ms()
        self._record(txn)  # Kafka's Complete record keeps the start time
        txn.start_ms = -1

    # -- time ----------------------------------------------------------------------------------------
    def timers_live(self) -> bool:
        """A transaction under way (its timeout) or with markers due, or finished ones whose ids
        expire within a second."""
        if not self.transactions:
            return False
        if self.config["transactional.id.expiration.ms"] < 1000:
            return True
        return any(t.markers_due_ms >= 0 or t.state not in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT)
                   for t in self.transactions.values())

    def tick(self) -> None:
        now = self.clock.now_ms()
        expiration = self.config["transactional.id.expiration.ms"]
        for txn in list(self.transactions.values()):
            if txn.state == ONGOING and now - txn.start_ms > txn.timeout_ms:
                self._bump(txn, remember=False)  # Kafka fences the producer of a timed-out transaction
                self._end(txn, commit=False)
            elif txn.markers_due_ms >= 0 and now >= txn.markers_due_ms:
                self._write_markers(txn)
            elif txn.state in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT) and now - txn.last_update_ms >= expiration:
                del self.transactions[txn.transactional_id]
                self.by_producer_id.pop(txn.producer_id, None)
                if self.log is not None:
                    self.log.write(txn.transactional_id, None)  # Kafka's tombstone for an expired id

    # -- describing ----------------------------------------------------------------------------------
    def describe(self, transactional_id: str) -> Transaction:
        txn = self.transactions.get(transactional_id)
        if txn is None:
            raise KafkaError(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, f"no transactional id '{transactional_id}'")
        return txn

    def listed(self) -> list[Transaction]:
        return sorted(self.transactions.values(), key=lambda t: t.transactional_id)
